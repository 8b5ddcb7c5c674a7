"""Which watch events are work for a gang scheduler: the rule a waiting session wakes on."""

from __future__ import annotations

from typing import Any

import pytest

from models import labels
from scheduling.cache.arrivals import woken

pytestmark = pytest.mark.unit


def pod(
    scheduler: str | None = "volcano",
    node: str | None = None,
    phase: str = "Pending",
    group: str | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if group:
        meta["annotations"] = {labels.GROUP_NAME: group}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {}
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("type_", "before", "after", "expected"),
    [
        ("ADDED", None, pod(), "volcano"),
        ("ADDED", None, pod(scheduler="other"), "other"),
        ("ADDED", None, pod(node="n1"), None),  # placed already
        ("ADDED", None, pod(phase="Running", node="n1"), None),
        ("ADDED", None, pod(deleting=True), None),
        ("ADDED", None, pod(scheduler=None), None),
        ("MODIFIED", pod(), pod(), None),  # a status write on a waiting pod is no news
        ("MODIFIED", pod(), pod(group="pg"), "volcano"),  # joined its PodGroup: placeable now
        ("MODIFIED", pod(group="pg"), pod(group="pg"), None),
        ("MODIFIED", None, pod(), "volcano"),  # not in the cache before (a relist gap)
        ("DELETED", pod(), pod(), None),
    ],
)
def test_pods(type_: str, before: Any, after: Any, expected: str | None) -> None:
    assert woken("pods", type_, before, after) == expected


def test_a_new_podgroup_wakes_the_default_scheduler_and_nothing_else_does() -> None:
    group = {"metadata": {"name": "g", "namespace": "ns"}, "status": {"phase": "Pending"}}
    assert woken("podgroups", "ADDED", None, group) == "volcano"
    assert woken("podgroups", "MODIFIED", group, group) is None
    assert woken("queues", "ADDED", None, {"metadata": {"name": "q"}}) is None
    assert woken("nodes", "ADDED", None, {"metadata": {"name": "n"}}) is None
