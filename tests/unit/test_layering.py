"""Pure layers import no I/O: models/, scheduling/ and the workflow cores stay testable alone.

kopf's import-linter contracts, done as a test: walk every module's imports with `ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
IO_MODULES = ("temporalio", "kubernetes", "activities", "forwarder", "cli", "workflows")
# Workflow shells and their registration may import temporalio; their cores may not.
SHELLS = {"workflow.py", "__init__.py", "search_attributes.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _pure_modules() -> list[Path]:
    pure = [*ROOT.glob("models/**/*.py"), *ROOT.glob("scheduling/**/*.py")]
    pure += [p for p in ROOT.glob("workflows/**/*.py") if p.name not in SHELLS]
    return sorted(pure)


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_imports_no_io(path: Path) -> None:
    assert _imports(path).isdisjoint(IO_MODULES)


@pytest.mark.parametrize(
    "path", sorted(ROOT.glob("activities/**/*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_activities_never_import_workflows(path: Path) -> None:
    assert "workflows" not in _imports(path)
