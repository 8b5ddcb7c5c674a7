"""PodGroups for pods Caldera did not create: a bare pod and a ReplicaSet's pods that name
Caldera's gang scheduler get a PodGroup from the PodGroupWorkflow, are gang-scheduled by the
SchedulerWorkflow, and go Running (kwok). The dev control plane runs the ReplicaSet controller,
so the ReplicaSet's pods are its own."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from kubernetes import client

from models import labels
from models.quantity import parse_quantity
from scheduling.api.result import NOT_ENOUGH_RESOURCES
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler runs (schedulerName: volcano)
GANG_LABEL = "caldera.dev/e2e-gang"


def _pods(api: client.ApiClient, namespace: str) -> list[client.V1Pod]:
    return list(client.CoreV1Api(api).list_namespaced_pod(namespace).items)


def _running(api: client.ApiClient, namespace: str, count: int) -> list[client.V1Pod] | None:
    pods = _pods(api, namespace)
    if len(pods) == count and all(p.status.phase == "Running" for p in pods):
        return pods
    return None


def _container(cpu: str) -> dict[str, Any]:
    return {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}


def test_bare_pod_gets_a_podgroup_and_runs(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    pod = {
        "metadata": {"name": "solo"},
        "spec": {"schedulerName": "volcano", "containers": [_container("100m")]},
    }
    created = core.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    uid = created.metadata.uid
    [running] = eventually(lambda: _running(api, namespace, 1), 60, "the bare pod Running")
    name = f"podgroup-{uid}"
    assert running.metadata.annotations[labels.GROUP_NAME] == name
    group = volcano.pod_group(api, namespace, name)
    assert group is not None
    assert group["spec"]["minMember"] == 1 and group["spec"]["queue"] == "default"
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Pod", uid, True)


GANG_CPU = 5  # each gang pod's request: one pod per 8-CPU node


def _free_cpu(core: client.CoreV1Api) -> dict[str, Fraction]:
    """Each node's allocatable CPU less what its live pods request (other tests' included)."""
    free = {
        n.metadata.name: parse_quantity(n.status.allocatable["cpu"]) for n in core.list_node().items
    }
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.spec.node_name in free and pod.status.phase not in ("Succeeded", "Failed"):
            for c in pod.spec.containers:
                cpu = ((c.resources and c.resources.requests) or {}).get("cpu")
                free[pod.spec.node_name] -= parse_quantity(cpu) if cpu else 0
    return free


@pytest.fixture
def gang_nodes(api: client.ApiClient, namespace: str) -> Iterator[list[str]]:
    """Three nodes with room for one gang pod each (earlier tests' pods may still be going),
    none labelled for this test's gang yet; labels removed afterwards."""
    core = client.CoreV1Api(api)

    def roomy() -> list[str] | None:
        fits = sorted(n for n, cpu in _free_cpu(core).items() if cpu >= GANG_CPU)
        return fits[:3] if len(fits) >= 3 else None

    names = eventually(roomy, 60, f"three nodes with {GANG_CPU} CPUs free")
    yield names
    for name in names:
        core.patch_node(name, {"metadata": {"labels": {GANG_LABEL: None}}})


def _replica_set(namespace: str, queue: str) -> dict[str, Any]:
    match = {"app": "gang"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "gang", "annotations": {labels.GROUP_MIN_MEMBER: "3"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": match},
            "template": {
                "metadata": {"labels": match, "annotations": {labels.POD_QUEUE_NAME: queue}},
                "spec": {
                    "schedulerName": "volcano",
                    "nodeSelector": {GANG_LABEL: namespace},
                    "containers": [_container(str(GANG_CPU))],
                },
            },
        },
    }


def test_replica_set_pods_gang_scheduled_in_their_queue(
    api: client.ApiClient, namespace: str, queue: str, gang_nodes: list[str]
) -> None:
    core = client.CoreV1Api(api)
    for name in gang_nodes[:2]:  # room for two of the three
        core.patch_node(name, {"metadata": {"labels": {GANG_LABEL: namespace}}})
    rs = client.AppsV1Api(api).create_namespaced_replica_set(
        namespace,
        _replica_set(namespace, queue),  # type: ignore[arg-type]
    )
    name = f"podgroup-{rs.metadata.uid}"

    def unschedulable() -> dict[str, Any] | None:
        """The gang found short of nodes: NotEnoughResources, which the scheduler says only of
        a whole gang (while a pod is still unannotated the gang lacks a task, NotEnoughTasks:
        CI of 3f0ed5e read that one and found the third pod not annotated yet)."""
        group = volcano.pod_group(api, namespace, name)
        conditions = ((group or {}).get("status") or {}).get("conditions") or []
        short = [
            c
            for c in conditions
            if c.get("type") == "Unschedulable" and c.get("reason") == NOT_ENOUGH_RESOURCES
        ]
        return group if short else None

    group = eventually(unschedulable, 60, "the gang of 3 found unschedulable on 2 nodes")
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["queue"] == queue
    assert group["spec"]["minResources"]["cpu"] == "15"
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("ReplicaSet", rs.metadata.uid)
    pods = _pods(api, namespace)
    assert len(pods) == 3
    assert {p.metadata.annotations.get(labels.GROUP_NAME) for p in pods} == {name}
    assert not [p.metadata.name for p in pods if p.spec.node_name]  # none placed alone

    core.patch_node(gang_nodes[2], {"metadata": {"labels": {GANG_LABEL: namespace}}})
    running = eventually(lambda: _running(api, namespace, 3), 60, "all three Running")
    assert sorted(p.spec.node_name for p in running) == gang_nodes
