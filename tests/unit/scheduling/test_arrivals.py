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


def claim(allocated: bool = False, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "c", "namespace": "ns", "uid": "u1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = {"devices": {"results": [{"request": "gpu", "device": "gpu-0"}]}}
        status["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "p1"}]
    return {"metadata": meta, "spec": {"devices": {"requests": []}}, "status": status}


@pytest.mark.parametrize(
    ("type_", "before", "after", "expected"),
    [
        ("ADDED", None, claim(), "volcano"),  # a template's claim, made after its waiting pod
        ("MODIFIED", None, claim(), "volcano"),  # first seen after a relist gap
        ("MODIFIED", claim(), claim(allocated=True), None),  # a binding's own write
        ("MODIFIED", claim(allocated=True), claim(allocated=True, deleting=True), None),
        ("MODIFIED", claim(allocated=True), claim(), "volcano"),  # its devices are free again
        ("MODIFIED", claim(), claim(deleting=True), None),
        ("DELETED", claim(allocated=True), claim(allocated=True), "volcano"),
        ("DELETED", claim(), claim(), None),
    ],
)
def test_resource_claims(type_: str, before: Any, after: Any, expected: str | None) -> None:
    assert woken("resourceclaims", type_, before, after) == expected


def device_slice(devices: int, version: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"name": "n1-gpu", "resourceVersion": version},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


@pytest.mark.parametrize("kind", ["slices", "deviceclasses"])
def test_new_or_changed_devices_wake_the_default_scheduler(kind: str) -> None:
    assert woken(kind, "ADDED", None, device_slice(2)) == "volcano"
    assert woken(kind, "MODIFIED", device_slice(2), device_slice(4, version="2")) == "volcano"
    assert woken(kind, "MODIFIED", None, device_slice(2)) == "volcano"
    # Only its metadata changed (a label, managedFields): nothing new to place on.
    assert woken(kind, "MODIFIED", device_slice(2), device_slice(2, version="2")) is None
    assert woken(kind, "DELETED", device_slice(2), device_slice(2)) is None


def namespace_queue(state: str = "Open", ready: str | None = "True") -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": "training", "namespace": "team-a"},
        "spec": {},
        "status": {"state": state, "conditions": conditions},
    }


@pytest.mark.parametrize(
    ("type_", "before", "after", "expected"),
    [
        pytest.param("ADDED", None, namespace_queue(), "volcano", id="added-ready"),
        pytest.param("ADDED", None, namespace_queue(ready=None), None, id="added-not-reconciled"),
        pytest.param(
            "MODIFIED", namespace_queue(ready="False"), namespace_queue(), "volcano", id="ready"
        ),
        pytest.param(
            "MODIFIED", namespace_queue("Closed"), namespace_queue(), "volcano", id="reopened"
        ),
        pytest.param("MODIFIED", namespace_queue(), namespace_queue(), None, id="still-ready"),
        pytest.param(
            "MODIFIED", namespace_queue(), namespace_queue(ready="False"), None, id="unready"
        ),
        pytest.param("DELETED", None, namespace_queue(), None, id="deleted"),
        pytest.param(
            "ADDED", None, {"metadata": {"name": "x"}, "spec": {"priority": -1}}, None, id="bad"
        ),
    ],
)
def test_a_namespace_queue_becoming_schedulable_wakes_the_scheduler(
    type_: str, before: dict[str, Any] | None, after: dict[str, Any], expected: str | None
) -> None:
    assert woken("namespacequeues", type_, before, after) == expected
