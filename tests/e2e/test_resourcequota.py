"""The resourcequota plugin on the real stack: a namespace's ResourceQuota holds jobs back.

The namespace gets a ResourceQuota of `requests.cpu: 4` (its status kept by
kube-controller-manager's resourcequota controller, and charged by the apiserver's quota
admission as pods are created). Three one-pod Volcano Jobs of 2 CPUs arrive at once on a
cluster of 24 CPUs: two run, the third is not enqueued (its PodGroup stays Pending with
Volcano's "resource quota insufficient" condition, and no pod of it is ever created, so the
apiserver never had to refuse one). Deleting a running job lets it run. The stack's
volcano-scheduler.conf gains `resourcequota` for this module and is restored afterwards.
Volcano has no e2e for the plugin; its unit cases
(`pkg/scheduler/plugins/resourcequota/resourcequota_test.go`) are in
`tests/unit/scheduling/test_resourcequota.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest
from kubernetes import client

from cli.devstack import processes
from scheduling.framework.conf import CALDERA_DEFAULT
from scheduling.plugins.resourcequota import INSUFFICIENT
from tests.builders import make_job
from tests.e2e import sharing
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and enqueue are on
WITH_QUOTA: Final = CALDERA_DEFAULT + "  - name: resourcequota\n"
JOBS: Final = ("q0", "q1", "q2")  # 2 CPUs each; the quota holds two
_G, _V = "scheduling.volcano.sh", "v1beta1"


def _submit(api: client.ApiClient, ns: str, name: str) -> None:
    """A one-pod job of 2 CPUs that runs until deleted."""
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
            ],
        }
    }
    manifest = make_job(name, namespace=ns).task("w", replicas=1, template=template).manifest()
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", manifest
    )


def _running(api: client.ApiClient, ns: str) -> set[str]:
    """The jobs with a pod running on a node and not being deleted."""
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return {
        p.metadata.name.rsplit("-", 2)[0]
        for p in pods
        if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp
    }


def _groups(api: client.ApiClient, ns: str) -> dict[str, dict[str, Any]]:
    """Each job's PodGroup by job name (PodGroups are `<job>-<uid>`)."""
    listed: Any = client.CustomObjectsApi(api).list_namespaced_custom_object(
        _G, _V, ns, "podgroups"
    )
    return {g["metadata"]["name"].rsplit("-", 5)[0]: g for g in listed["items"]}


def _refused(api: client.ApiClient, ns: str) -> tuple[str, str] | None:
    """The one job whose PodGroup is Pending with the quota's Unschedulable condition, and the
    condition's message; None: no such job yet."""
    for job, group in _groups(api, ns).items():
        status = group.get("status") or {}
        if status.get("phase") not in (None, "", "Pending"):  # none yet: just created, Pending
            continue
        for condition in status.get("conditions") or []:
            message = str(condition.get("message") or "")
            if condition.get("type") == "Unschedulable" and message.startswith(INSUFFICIENT):
                return job, message
    return None


def _job_event(api: client.ApiClient, ns: str, job: str) -> str | None:
    """The message of the job's Unschedulable event naming the quota; None: none yet."""
    for event in client.CoreV1Api(api).list_namespaced_event(ns).items:
        involved = event.involved_object
        message = event.message or ""
        if (involved.kind, involved.name, event.reason) == ("Job", job, "Unschedulable") and (
            message.startswith(INSUFFICIENT)
        ):
            return message
    return None


def test_a_job_past_its_namespace_quota_waits_until_a_running_one_goes(
    api: client.ApiClient,
    namespace: str,
    scheduler_conf: Path,
    controllers: list[processes.Process],
) -> None:
    core = client.CoreV1Api(api)
    scheduler_conf.write_text(WITH_QUOTA)
    body = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute"},
        "spec": {"hard": {"requests.cpu": "4"}},
    }
    core.create_namespaced_resource_quota(namespace, body)

    def synced() -> bool:
        status = core.read_namespaced_resource_quota("compute", namespace).status
        return status is not None and (status.hard or {}).get("requests.cpu") == "4"

    eventually(synced, 60, "the resourcequota controller to write the quota's status")
    seen = sharing.sessions(controllers[0])
    eventually(lambda: sharing.sessions(controllers[0]) > seen, 60, "a session under the new conf")

    for name in JOBS:
        _submit(api, namespace, name)
    eventually(lambda: len(_running(api, namespace)) == 2, 120, "two jobs running")
    try:
        job, message = eventually(lambda: _refused(api, namespace), 60, "the third job refused")
    except AssertionError as e:
        statuses = {j: g.get("status") for j, g in _groups(api, namespace).items()}
        raise AssertionError(f"{e}; podgroups {statuses}") from None
    assert message == (
        f"{INSUFFICIENT}, requested: map[requests.cpu:2], used: map[requests.cpu:4], "
        "limited: map[requests.cpu:4], quota: compute"
    ), message
    assert eventually(lambda: _job_event(api, namespace, job), 30, "the job's event") == message

    # It stays out through more sessions, and no pod of it was ever created (so the
    # apiserver's quota admission never had to refuse one).
    seen = sharing.sessions(controllers[0])
    eventually(lambda: sharing.sessions(controllers[0]) >= seen + 3, 60, "three more sessions")
    assert job not in _running(api, namespace)
    assert _groups(api, namespace)[job]["status"].get("phase") in (None, "", "Pending")
    assert not [
        p
        for p in core.list_namespaced_pod(namespace).items
        if p.metadata.name.startswith(f"{job}-")
    ]

    gone = sorted(_running(api, namespace))[0]
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", gone
    )
    eventually(lambda: job in _running(api, namespace), 120, f"{job} running once {gone} went")
    assert len(_running(api, namespace)) == 2
