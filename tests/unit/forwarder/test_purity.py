"""The forwarder's deciding stages stay pure, so they are tested without a server or a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import test_layering

ROUTING = test_layering.ROOT / "forwarder" / "routing"
IO = frozenset({"temporalio", "kubernetes", "urllib3"})


def _modules() -> list[Path]:
    return sorted(ROUTING.glob("**/*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(test_layering.ROOT)))
def test_forwarder_routing_module_imports_no_io(path: Path) -> None:
    assert sorted(n for n in test_layering._imports(path) if n.split(".")[0] in IO) == []


def test_the_routing_folder_has_the_stages() -> None:
    assert {p.stem for p in _modules()} >= {"events", "translate", "router", "coalesce"}
