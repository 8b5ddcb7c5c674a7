"""Kubernetes' own gang API (KEP-4671, scheduling.k8s.io/v1beta1 with the GenericWorkload
feature gate on the dev control plane): plain pods that name a Kubernetes PodGroup and Caldera's
scheduler are gang-scheduled as that PodGroup's gang, in the queue its Workload names, and the
PodGroup gets the condition kube-scheduler would write (`models.kube_gangs`). A batch/v1 Job
Caldera runs with spec.scheduling (WorkloadWithJob, on in the dev apiserver only) gets its
Workload and PodGroup from Caldera's Job controller, and its pods run as that PodGroup's gang."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from models import batchv1, kube_gangs, labels
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler serves the pods naming `volcano`
KUBE = (kube_gangs.GROUP, kube_gangs.VERSION)


def _workload(queue: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "/".join(KUBE),
        "kind": "Workload",
        "metadata": {"name": "train", "annotations": {labels.QUEUE_NAME: queue}},
        "spec": {
            "podGroupTemplates": [
                {"name": "workers", "schedulingPolicy": {"gang": {"minCount": min_count}}}
            ]
        },
    }


def _pod_group(min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "/".join(KUBE),
        "kind": "PodGroup",
        "metadata": {"name": "train-workers"},
        "spec": {
            "workloadRef": {"workloadName": "train", "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
        },
    }


def _pod(name: str) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "schedulingGroup": {"podGroupName": "train-workers"},
            "containers": [container],
        },
    }


def _kube_group(api: client.ApiClient, namespace: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        *KUBE, namespace, "podgroups", "train-workers"
    )
    return found


def _mirror(api: client.ApiClient, namespace: str, uid: str) -> dict[str, Any] | None:
    """The Volcano PodGroup mirroring the Kubernetes PodGroup `uid`; None: not made yet."""
    return volcano.pod_group(api, namespace, f"podgroup-{uid}")


def _condition(group: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _running(core: client.CoreV1Api, namespace: str, count: int) -> list[client.V1Pod] | None:
    pods = list(core.list_namespaced_pod(namespace).items)
    return pods if len(pods) == count and all(p.status.phase == "Running" for p in pods) else None


def _waiting_for_pods(api: client.ApiClient, namespace: str, uid: str) -> dict[str, Any] | None:
    """The mirror, once the scheduler has said its gang lacks pods."""
    mirror = _mirror(api, namespace, uid)
    return mirror if mirror is not None and _condition(mirror, "Unschedulable") else None


def test_pods_naming_a_kubernetes_podgroup_run_as_its_gang_in_the_workload_s_queue(
    api: client.ApiClient, namespace: str, queue: str
) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.create_namespaced_pod(namespace, _pod("worker-0"))  # before its PodGroup: it waits
    custom.create_namespaced_custom_object(*KUBE, namespace, "workloads", _workload(queue, 3))
    uid = custom.create_namespaced_custom_object(*KUBE, namespace, "podgroups", _pod_group(3))[
        "metadata"
    ]["uid"]
    core.create_namespaced_pod(namespace, _pod("worker-1"))

    mirror = eventually(
        lambda: _waiting_for_pods(api, namespace, uid), 60, "the mirror waiting for its 3rd pod"
    )
    assert mirror["spec"]["minMember"] == 3 and mirror["spec"]["queue"] == queue
    [owner] = mirror["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
        kube_gangs.API_VERSION,
        "PodGroup",
        uid,
    )
    assert not [
        p.metadata.name for p in core.list_namespaced_pod(namespace).items if p.spec.node_name
    ]
    # kube-scheduler says nothing while a gang waits for its pods; neither does Caldera.
    assert _condition(_kube_group(api, namespace), kube_gangs.INITIALLY_SCHEDULED) is None

    core.create_namespaced_pod(namespace, _pod("worker-2"))
    running = eventually(lambda: _running(core, namespace, 3), 60, "the gang of 3 Running")
    assert {p.metadata.annotations[labels.GROUP_NAME] for p in running} == {f"podgroup-{uid}"}

    def scheduled() -> dict[str, Any] | None:
        found = _condition(_kube_group(api, namespace), kube_gangs.INITIALLY_SCHEDULED)
        return found if found is not None and found.get("status") == "True" else None

    condition = eventually(scheduled, 30, "PodGroupInitiallyScheduled=True on the PodGroup")
    assert condition["reason"] == kube_gangs.SCHEDULED_REASON


def test_a_lowered_min_count_lets_the_gang_start_with_the_pods_it_has(
    api: client.ApiClient, namespace: str, queue: str
) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(*KUBE, namespace, "workloads", _workload(queue, 3))
    uid = custom.create_namespaced_custom_object(*KUBE, namespace, "podgroups", _pod_group(3))[
        "metadata"
    ]["uid"]
    for name in ("worker-0", "worker-1"):
        core.create_namespaced_pod(namespace, _pod(name))
    eventually(lambda: _waiting_for_pods(api, namespace, uid), 60, "the gang waiting for a pod")

    lowered = {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    custom.patch_namespaced_custom_object(*KUBE, namespace, "podgroups", "train-workers", lowered)
    eventually(lambda: _running(core, namespace, 2), 60, "both pods Running at minCount 2")
    mirror = _mirror(api, namespace, uid)
    assert mirror is not None and mirror["spec"]["minMember"] == 2


def _gang_job(queue: str) -> dict[str, Any]:
    """A Job Caldera runs, with spec.scheduling (WorkloadWithJob, on in the dev apiserver)."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": batchv1.API_VERSION,
        "kind": batchv1.KIND,
        "metadata": {"name": "train"},
        "spec": {
            "managedBy": batchv1.CONTROLLER_NAME,
            "parallelism": 3,
            "completions": 3,
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}},
            "template": {
                "metadata": {"annotations": {batchv1.QUEUE_ANNOTATION: queue}},
                "spec": {
                    "schedulerName": "volcano",
                    "restartPolicy": "Never",
                    "containers": [container],
                },
            },
        },
    }


def _one(api: client.ApiClient, namespace: str, plural: str) -> dict[str, Any] | None:
    """The namespace's one Kubernetes Workload or PodGroup; None: none yet."""
    found: Any = client.CustomObjectsApi(api).list_namespaced_custom_object(
        *KUBE, namespace, plural
    )
    items: list[dict[str, Any]] = found.get("items") or []
    return items[0] if len(items) == 1 else None


def test_a_caldera_job_with_spec_scheduling_runs_as_its_podgroup_s_gang(
    api: client.ApiClient, namespace: str, queue: str
) -> None:
    made = client.BatchV1Api(api).create_namespaced_job(namespace, _gang_job(queue))
    job_uid = made.metadata.uid
    assert made.spec.scheduling is not None, "the apiserver dropped spec.scheduling"

    workload = eventually(lambda: _one(api, namespace, "workloads"), 60, "the Job's Workload")
    [owner] = workload["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", job_uid, True)
    assert workload["spec"]["controllerRef"] == {
        "apiGroup": "batch",
        "kind": "Job",
        "name": "train",
    }
    [template] = workload["spec"]["podGroupTemplates"]
    assert template["name"] == "train-pgt-0"
    assert template["schedulingPolicy"] == {"gang": {"minCount": 3}}

    group = eventually(lambda: _one(api, namespace, "podgroups"), 60, "the Job's PodGroup")
    owners = {
        (o["kind"], o["uid"], bool(o.get("controller")))
        for o in group["metadata"]["ownerReferences"]
    }
    assert owners == {("Job", job_uid, True), ("Workload", workload["metadata"]["uid"], False)}
    assert group["spec"]["workloadRef"] == {
        "workloadName": workload["metadata"]["name"],
        "templateName": "train-pgt-0",
    }
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}

    core = client.CoreV1Api(api)
    running = eventually(lambda: _running(core, namespace, 3), 90, "the Job's 3 pods Running")
    uid = group["metadata"]["uid"]
    for pod in running:
        assert pod.spec.scheduling_group.pod_group_name == group["metadata"]["name"]
        assert pod.metadata.annotations[labels.GROUP_NAME] == f"podgroup-{uid}"  # the mirror's
    mirror = _mirror(api, namespace, uid)
    assert mirror is not None
    assert (mirror["spec"]["minMember"], mirror["spec"]["queue"]) == (3, queue)
    assert volcano.pod_group(api, namespace, f"podgroup-{job_uid}") is None  # not the Job's own
