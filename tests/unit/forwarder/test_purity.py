"""The forwarder's deciding stages stay pure, so they are tested without a server or a cluster."""

from __future__ import annotations

import pytest

from tests.unit import test_layering

PURE = (
    "events.py",
    "translate.py",
    "queue_translate.py",
    "router.py",
    "queue_router.py",
    "bounded.py",
    "coalesce.py",
    "logs.py",
    "batch_translate.py",
    "batch_router.py",
)


@pytest.mark.parametrize("name", PURE)
def test_forwarder_core_module_imports_no_io(name: str) -> None:
    path = test_layering.ROOT / "forwarder" / name
    assert test_layering._imports(path).isdisjoint({"temporalio", "kubernetes", "urllib3"})
