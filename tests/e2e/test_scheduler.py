"""Caldera's gang scheduler end to end: Volcano Jobs with `schedulerName: volcano`, the
PodGroup gate on, sessions in the SchedulerWorkflow, binding by each JobWorkflow, on kwok
nodes of 8 CPUs (3 nodes: 24 CPUs in all)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.builders import make_job
from tests.e2e.conftest import NODES, eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on


def _template(cpu: str, seconds: str | None = None) -> dict[str, Any]:
    annotations = {"sim.caldera.dev/run-seconds": seconds} if seconds else {}
    return {
        "metadata": {"annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def _submit(
    api: client.ApiClient, ns: str, name: str, replicas: int, cpu: str, seconds: str | None = None
) -> None:
    doc = (
        make_job(name, namespace=ns)
        .task("w", replicas=replicas, template=_template(cpu, seconds))
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc
    )


def _phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def _pods(api: client.ApiClient, ns: str, job: str) -> list[Any]:
    return [
        p
        for p in client.CoreV1Api(api).list_namespaced_pod(ns).items
        if p.metadata.name.startswith(f"{job}-")
    ]


def test_gang_job_is_scheduled_by_caldera_and_completes(
    api: client.ApiClient, namespace: str
) -> None:
    _submit(api, namespace, "gang", replicas=3, cpu="2", seconds="2")
    eventually(lambda: _phase(api, namespace, "gang") == "Running", 90, "gang Running")
    pods = _pods(api, namespace, "gang")
    assert len(pods) == 3 and all(p.spec.node_name for p in pods)
    assert {p.spec.scheduler_name for p in pods} == {"volcano"}
    eventually(lambda: _phase(api, namespace, "gang") == "Completed", 90, "gang Completed")


def test_job_larger_than_the_cluster_binds_nothing_and_says_why(
    api: client.ApiClient, namespace: str
) -> None:
    _submit(api, namespace, "huge", replicas=4, cpu="7")  # 4 x 7 CPUs: only 3 nodes fit one each
    custom = client.CustomObjectsApi(api)

    def why() -> str | None:
        groups = custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
        )
        for group in groups["items"]:
            for condition in (group.get("status") or {}).get("conditions") or []:
                if condition.get("type") == "Unschedulable":
                    return str(condition.get("message"))
        return None

    message = eventually(why, 90, "Unschedulable condition on the PodGroup")
    # Its minResources exceed what the queue and cluster can take: enqueue refuses it.
    assert message == "queue resource quota insufficient: queue default", message
    assert not [p for p in _pods(api, namespace, "huge") if p.spec.node_name]
    assert _phase(api, namespace, "huge") == "Pending"


def test_three_gang_jobs_share_the_nodes(api: client.ApiClient, namespace: str) -> None:
    for name in ("ga", "gb", "gc"):
        _submit(api, namespace, name, replicas=3, cpu="2", seconds="3")
    for name in ("ga", "gb", "gc"):
        eventually(
            lambda n=name: _phase(api, namespace, n) in ("Running", "Completed"),
            120,
            f"{name} runs",
        )
    nodes = {p.spec.node_name for n in ("ga", "gb", "gc") for p in _pods(api, namespace, n)}
    assert len(nodes) == 3  # least-allocated spreads 9 pods x 2 CPUs over the 3 nodes
    for name in ("ga", "gb", "gc"):
        eventually(
            lambda n=name: _phase(api, namespace, n) == "Completed", 120, f"{name} completes"
        )


@pytest.fixture
def tainted(api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(api)
    node = NODES.names()[0]
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    core.patch_node(node, {"spec": {"taints": [taint]}})
    yield node
    core.patch_node(node, {"spec": {"taints": []}})


def test_tainted_node_is_skipped_unless_tolerated(
    api: client.ApiClient, namespace: str, tainted: str
) -> None:
    _submit(api, namespace, "plain", replicas=4, cpu="1")
    tolerating = make_job("tolerant", namespace=namespace).task(
        "w", replicas=3, template=_template("1")
    )
    doc = tolerating.manifest()
    doc["spec"]["tasks"][0]["template"]["spec"]["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    ]
    doc["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {
        "kubernetes.io/hostname": tainted
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc
    )
    for name in ("plain", "tolerant"):
        eventually(lambda n=name: _phase(api, namespace, n) == "Running", 90, f"{name} Running")
    assert tainted not in {p.spec.node_name for p in _pods(api, namespace, "plain")}
    assert {p.spec.node_name for p in _pods(api, namespace, "tolerant")} == {tainted}
