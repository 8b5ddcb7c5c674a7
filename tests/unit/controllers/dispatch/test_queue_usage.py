"""A queue's figures on a worker cluster, from plain API objects: which pods are in which queue
(label, else annotation), what its unfinished pods request and what its bound ones hold, and a
Queue object read as state, capability and allocated."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.dispatch import queue_usage
from models.dispatch import QueueThere

pytestmark = pytest.mark.unit


def pod(
    cpu: str,
    queue: str = "q1",
    node: str | None = "n0",
    phase: str = "Running",
    by: str = "label",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p-{cpu}"}
    if by == "label":
        meta["labels"] = {"volcano.sh/queue-name": queue}
    elif by == "annotation":
        meta["annotations"] = {"scheduling.volcano.sh/queue-name": queue}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]
    }
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def queue(
    name: str = "q1",
    state: str | None = "Open",
    capability: dict[str, Any] | None = None,
    allocated: dict[str, str] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if state is not None:
        status["state"] = state
    if allocated is not None:
        status["allocated"] = allocated
    spec = {"capability": capability} if capability is not None else {}
    return {"metadata": {"name": name}, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("pods", "requested", "bound"),
    [
        pytest.param([pod("1")], "1", "1", id="running-bound"),
        pytest.param([pod("1", node=None, phase="Pending")], "1", "0", id="pending-not-bound"),
        pytest.param(
            [pod("1", phase="Succeeded"), pod("2", phase="Failed")], None, None, id="done"
        ),
        pytest.param([pod("1", by="annotation")], "1", "1", id="by-annotation"),
        pytest.param([pod("1", by="none")], None, None, id="in-no-queue"),
        pytest.param([pod("1", queue="q2")], None, None, id="another-queue"),
        pytest.param(
            [pod("1"), pod("500m", node=None, phase="Pending"), pod("2", queue="q2")],
            "1500m",
            "1",
            id="summed-by-queue",
        ),
    ],
)
def test_usage_counts_the_queues_unfinished_pods(
    pods: list[dict[str, Any]], requested: str | None, bound: str | None
) -> None:
    got = queue_usage.usage_by_queue(pods).get("q1")
    if requested is None:
        assert got is None
        return
    assert got is not None
    assert got.requested.to_resource_list()["cpu"] == requested
    assert got.bound.to_resource_list()["cpu"] == bound


def test_the_label_wins_over_the_annotation() -> None:
    p = pod("1", queue="q1")
    p["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "q2"}
    assert queue_usage.pod_queue(p) == "q1"


def test_queue_there_reads_state_capability_and_the_larger_allocated() -> None:
    usage = queue_usage.usage_by_queue(
        [pod("3"), pod("1", node=None, phase="Pending"), pod("9", queue="q2")]
    )
    found = queue(capability={"cpu": 8, "nvidia.com/gpu": "2"}, allocated={"cpu": "2"})
    got = queue_usage.queue_there("q1", found, usage)
    assert got == QueueThere(
        asked="q1",
        name="q1",
        state="Open",
        capability={"cpu": "8", "nvidia.com/gpu": "2"},
        allocated={"cpu": "3", "memory": str(2**30), "pods": "1"},
        used={"cpu": "4", "memory": str(2 * 2**30), "pods": "2"},
    )


def test_written_allocated_above_the_pods_is_kept() -> None:
    found = queue(allocated={"cpu": "6", "memory": "0"})
    got = queue_usage.queue_there("q1", found, {})
    assert got.allocated == {"cpu": "6", "memory": "0"}
    assert got.used == {"cpu": "0", "memory": "0"} and got.capability == {}


def test_default_stands_in_and_neither_is_said() -> None:
    landed = queue_usage.queue_there("q1", queue("default", state=None), {})
    assert (landed.asked, landed.name, landed.state) == ("q1", "default", "")
    assert queue_usage.queue_there("q1", None, {}) == QueueThere(asked="q1")
