"""Caldera's gang scheduler end to end: Volcano Jobs with `schedulerName: volcano`, the
PodGroup gate on, sessions in the SchedulerWorkflow, binding by each JobWorkflow, on kwok
nodes of 8 CPUs (3 nodes: 24 CPUs in all)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.builders import make_job
from tests.e2e.conftest import eventually

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
