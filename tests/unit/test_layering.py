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
# The pure folders: data models, the controllers' cores, the scheduler. They import no I/O
# and no workflow shell (`workflows/`), so each is testable alone.
PURE_FOLDERS = ("models", "controllers", "scheduling")
FORBIDDEN = (*IO_PACKAGES, "workflows", "admission", "worker")


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
    return name.split(".")[0] in FORBIDDEN


def _pure_modules() -> list[Path]:
    return sorted(p for folder in PURE_FOLDERS for p in ROOT.glob(f"{folder}/**/*.py"))


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
    bad.write_text("from workflows.job import JobWorkflow\nimport kubernetes\n")
    assert sorted(n for n in _imports(bad) if _forbidden(n)) == [
        "kubernetes",
        "workflows.job",
        "workflows.job.JobWorkflow",
    ]


def test_every_pure_folder_has_modules() -> None:
    assert {p.relative_to(ROOT).parts[0] for p in _pure_modules()} == set(PURE_FOLDERS)
