"""Pure layers import no I/O: models/, scheduling/ and the workflow cores stay testable alone.

kopf's import-linter contracts, done as a test: walk every module's imports with `ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
IO_PACKAGES = ("temporalio", "kubernetes", "activities", "forwarder", "cli", "service")
# Workflow shells may import Temporal and the activities; the cores beside them may not.
SHELL_NAMES = {
    "workflow.py",
    "__init__.py",
    "search_attributes.py",
    "activity_call.py",
    "inbox.py",
    "sandbox.py",
    "timers.py",
    "placing.py",
}
SHELL_MODULES = (
    "workflows.activity_call",
    "workflows.search_attributes",
    "workflows.inbox",
    "workflows.sandbox",
    "workflows.timers",
    "workflows.placing",
)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _forbidden(name: str) -> bool:
    top = name.split(".")[0]
    shell = name.startswith(SHELL_MODULES) or (
        top == "workflows" and "workflow" in name.split(".")[1:]
    )
    return top in IO_PACKAGES or shell


def _pure_modules() -> list[Path]:
    pure = [*ROOT.glob("models/**/*.py"), *ROOT.glob("scheduling/**/*.py")]
    pure += [p for p in ROOT.glob("workflows/**/*.py") if p.name not in SHELL_NAMES]
    return sorted(pure)


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_imports_no_io(path: Path) -> None:
    assert sorted(n for n in _imports(path) if _forbidden(n)) == []


@pytest.mark.parametrize(
    "path", sorted(ROOT.glob("activities/**/*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_activities_never_import_workflows(path: Path) -> None:
    assert not any(n.split(".")[0] == "workflows" for n in _imports(path))


def test_the_check_catches_a_shell_import(tmp_path: Path) -> None:
    bad = tmp_path / "core.py"
    bad.write_text("from workflows.job.workflow import JobWorkflow\nimport kubernetes\n")
    assert sorted(n for n in _imports(bad) if _forbidden(n)) == [
        "kubernetes",
        "workflows.job.workflow",
        "workflows.job.workflow.JobWorkflow",
    ]
