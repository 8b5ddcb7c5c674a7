"""A worker cluster's size and room: the nodes' allocatable summed, less what the unfinished pods
on those nodes request (Kubernetes' PodRequests rule), never below zero."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.dispatch.capacity import capacity

pytestmark = pytest.mark.unit


def node(name: str, cpu: str = "8", memory: str = "32Gi", **more: str) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    return {"metadata": {"name": name}, "status": {"allocatable": {**allocatable, **more}}}


def pod(
    node_name: str | None, cpu: str, memory: str, phase: str = "Running", **more: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        **more,
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    return {"spec": spec, "status": {"phase": phase}}


def test_allocatable_is_the_nodes_sum_and_free_takes_the_pods_off() -> None:
    got = capacity(
        [node("a"), node("b", cpu="4", memory="16Gi")],
        [pod("a", "1500m", "1Gi"), pod("b", "2", "2Gi", phase="Pending")],
    )
    assert got.nodes == 2
    assert got.allocatable == {"cpu": "12", "memory": str(48 * 2**30), "pods": "220"}
    assert got.free == {"cpu": "8500m", "memory": str(45 * 2**30), "pods": "218"}


def test_finished_unscheduled_and_foreign_pods_hold_nothing() -> None:
    got = capacity(
        [node("a")],
        [
            pod("a", "1", "1Gi", phase="Succeeded"),
            pod("a", "1", "1Gi", phase="Failed"),
            pod(None, "1", "1Gi", phase="Pending"),
            pod("gone", "1", "1Gi"),  # on a node not listed
        ],
    )
    assert got.free == got.allocatable


def test_init_containers_overhead_and_extended_resources_count() -> None:
    gpu = "nvidia.com/gpu"
    init = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
    got = capacity(
        [node("a", **{gpu: "4"})],
        [
            pod("a", "1", "1Gi", initContainers=init, overhead={"cpu": "250m"}),
            {
                "spec": {
                    "nodeName": "a",
                    "containers": [{"name": "c", "resources": {"limits": {gpu: "2"}}}],
                },
                "status": {"phase": "Running"},
            },
        ],
    )
    assert got.allocatable[gpu] == "4"
    assert got.free["cpu"] == "4750m"  # 8 - max(1, 3) - 250m overhead
    assert got.free[gpu] == "2"  # a limit stands in for the missing request


def test_an_overcommitted_cluster_has_no_room_not_negative_room() -> None:
    got = capacity([node("a", cpu="1")], [pod("a", "3", "1Gi")])
    assert got.free["cpu"] == "0"


def test_no_nodes_no_figures() -> None:
    got = capacity([], [pod("a", "1", "1Gi")])
    assert (got.nodes, got.allocatable, got.free) == (0, {}, {})
