"""No product module is over 400 lines (STYLE.md, house rule 1): a module that grows past the cap
holds more than one concept, and the cap is kept here rather than by review, which let six
modules drift past it. The product is every `.py` file in the checkout except the tests, the
docs, build output and `bench/`: the benchmarks are run by hand, are not installed (`pyproject`'s
`packages.find`) and, like the tests, are exempt."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CAP = 400
# Top-level folders that are not product code; hidden ones (.venv, .git, caches) are skipped too.
NOT_PRODUCT = frozenset({"tests", "docs", "build", "bench"})


def _product_modules() -> list[Path]:
    """Every product `.py` file, as a path relative to the checkout."""
    found = []
    for top in ROOT.iterdir():
        if top.name in NOT_PRODUCT or top.name.startswith("."):
            continue
        paths = [top] if top.is_file() else top.rglob("*.py")
        for path in paths:
            relative = path.relative_to(ROOT)
            if path.suffix == ".py" and not any(p.startswith(".") for p in relative.parts):
                found.append(relative)
    return sorted(found)


def _lines(path: Path) -> int:
    """Lines as `wc -l` counts them."""
    return (ROOT / path).read_bytes().count(b"\n")


def test_the_product_tree_is_found() -> None:
    modules = {str(path) for path in _product_modules()}
    assert {"worker.py", "scheduling/cache/objects.py", "service/metrics.py"} <= modules
    assert not any(name.startswith(("tests/", "bench/", "docs/")) for name in modules)


def test_no_product_module_is_over_the_line_cap() -> None:
    sizes = {str(path): _lines(path) for path in _product_modules()}
    over = ", ".join(f"{name} ({n})" for name, n in sorted(sizes.items()) if n > CAP)
    assert not over, f"product modules over {CAP} lines (split them along their seams): {over}"
