"""Every repository path that the README and docs/ name in backticks (`deploy/base/...`,
`tests/e2e/test_job.py`) exists, so moving or renaming a file fails here rather than leaving the
docs pointing at nothing. The site build (`make docs`, strict) checks the links between pages;
it cannot check these, which are plain text to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# The top-level folders a path in the docs starts from. A folder added at the top joins here
# when the docs start naming files in it.
TOP = (
    ".ci",
    "activities",
    "admission",
    "bench",
    "cli",
    "controllers",
    "deploy",
    "docs",
    "forwarder",
    "models",
    "scheduling",
    "service",
    "tests",
    "workflows",
)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`([^`\n]+)`")
# A path starts a word (not `~/.cache/...`, not `$CALDERA_RESULTS/...`, not `a/tests/...`).
_PATH = re.compile(rf"(?<![\w./~$<-])((?:{'|'.join(map(re.escape, TOP))})/[\w.*/-]*)(<)?")


def _claims() -> list[tuple[str, str]]:
    """(page, path) for every path named in an inline code span; fenced blocks are commands and
    output, whose paths may be the reader's own (an overlay under `overlays/prod/`)."""
    found = []
    for page in PAGES:
        prose = _FENCE.sub("", page.read_text())
        for span in _CODE.findall(prose):
            for path, placeholder in _PATH.findall(span):
                if not placeholder:  # `deploy/<name>/...` names a pattern, not a file
                    found.append((str(page.relative_to(ROOT)), path.rstrip(".")))
    return sorted(set(found))


def _exists(path: str) -> bool:
    """A file or folder, a glob that matches something, or `module.attribute` of a module."""
    if any(ch in path for ch in "*?["):
        return any(ROOT.glob(path))
    if (ROOT / path).exists():
        return True
    module, _, attribute = path.rpartition(".")  # `service/temporal.connect`
    return bool(module) and attribute.isidentifier() and (ROOT / f"{module}.py").is_file()


def test_the_docs_name_some_paths() -> None:
    pages = {page for page, _ in _claims()}
    assert "README.md" in pages
    assert len(pages) > 10, pages


@pytest.mark.parametrize(("page", "path"), _claims(), ids=lambda v: v)
def test_a_path_the_docs_name_exists(page: str, path: str) -> None:
    assert _exists(path), f"{page} names `{path}`, which is not in the repository"
