"""Raw objects → payloads and routing, one table per resource."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder.routing import envelopes, translate
from models.signals import common as common_signals
from models.signals import job as job_signals
from tests.unit.forwarder import command, container, job, owner, pod, pod_group

BASE = job_signals.PodSnapshot(
    name="train-worker-0",
    uid="pod-uid",
    resource_version="10",
    job_uid="job-uid",
    task="worker",
    index=0,
    job_version=0,
)

POD_SNAPSHOTS = [
    pytest.param(pod(), {}, id="pending-fresh"),
    pytest.param(
        pod(phase="Running", node="n1", statuses=[container(ready=True, restarts=2)]),
        {"phase": "Running", "node_name": "n1", "ready": True, "restart_count": 2},
        id="running-ready",
    ),
    pytest.param(pod(phase=None), {"phase": "Pending"}, id="no-phase-is-pending"),
    pytest.param(
        pod(phase="Failed", statuses=[container(exit_code=3)]),
        {"phase": "Failed", "exit_code": 3},
        id="failed-exit-code",
    ),
    pytest.param(
        pod(
            phase="Failed",
            containers=("main", "sidecar"),
            statuses=[container("sidecar", exit_code=0), container("main", exit_code=137)],
        ),
        {"phase": "Failed", "exit_code": 137},
        id="exit-code-of-first-spec-container",
    ),
    pytest.param(
        pod(
            phase="Running",
            containers=("main", "sidecar"),
            statuses=[container("main", exit_code=1), container("sidecar")],
        ),
        {"phase": "Running", "exit_code": 1},
        id="first-container-terminated-pod-running",
    ),
    pytest.param(
        pod(phase="Running", statuses=[container(restarts=1)]),
        {"phase": "Running", "restart_count": 1},
        id="running-not-ready",
    ),
    pytest.param(
        pod(
            phase="Running",
            containers=("main", "sidecar"),
            statuses=[container("main", ready=True, restarts=1)],
            init_statuses=[container("init", restarts=2, exit_code=0)],
        ),
        {"phase": "Running", "restart_count": 3},
        id="restarts-summed-with-init-not-all-ready",
    ),
    pytest.param(pod(deleting=True), {"deleting": True}, id="deleting"),
    pytest.param(
        pod(annotations={"volcano.sh/controller-out-of-sync": "true"}),
        {"out_of_sync": True},
        id="out-of-sync",
    ),
    pytest.param(pod(annotations={"volcano.sh/controller-out-of-sync": "false"}), {}, id="in-sync"),
    pytest.param(
        pod(labels={"volcano.sh/partition-id": "p1"}), {"partition": "p1"}, id="partition"
    ),
    pytest.param(
        pod(annotations={"volcano.sh/job-version": "4", "volcano.sh/task-index": "7"}),
        {"job_version": 4, "index": 7},
        id="version-and-index",
    ),
    pytest.param(
        pod(annotations={"volcano.sh/job-version": "x", "volcano.sh/task-index": "y"}),
        {"job_version": 0, "index": None},
        id="garbage-numbers",
    ),
    pytest.param(pod(owners=[]), {"job_uid": None}, id="no-owner"),
    pytest.param(
        pod(owners=[{**owner(), "controller": False}]), {"job_uid": None}, id="owner-not-controller"
    ),
    pytest.param(
        pod(owners=[{**owner(), "apiVersion": "batch/v1"}]), {"job_uid": None}, id="k8s-job-owner"
    ),
]


@pytest.mark.parametrize(("obj", "changes"), POD_SNAPSHOTS)
def test_pod_snapshot_translates_fields(obj: dict[str, Any], changes: dict[str, Any]) -> None:
    assert translate.pod_snapshot(obj) == BASE.model_copy(update=changes)


def test_pod_snapshot_deleted_event_marks_deleted() -> None:
    assert translate.pod_snapshot(pod(), deleted=True) == BASE.model_copy(update={"deleted": True})


POD_ROUTES = [
    pytest.param(pod(), envelopes.JobRef("ns", "train"), id="annotated"),
    pytest.param(pod(job_name=None), None, id="no-job-name"),
    pytest.param(pod(task=None), None, id="no-task-spec"),
    pytest.param(pod(owners=[]), envelopes.JobRef("ns", "train"), id="routed-without-owner"),
]


@pytest.mark.parametrize(("obj", "expected"), POD_ROUTES)
def test_pod_job_routes_by_annotation(
    obj: dict[str, Any], expected: envelopes.JobRef | None
) -> None:
    assert translate.pod_job(obj) == expected


def test_job_observed_carries_whole_object() -> None:
    obj = job(phase="Running", running=1)
    assert translate.job_observed(obj) == job_signals.JobObserved(job=obj)


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def test_job_observed_leaves_out_managed_fields_only() -> None:
    """managedFields is the apiserver's bookkeeping no core reads; the annotations stay whole
    (a Job's are copied onto its PodGroup, last-applied-configuration too, as Volcano does)."""
    obj = job(phase="Running")
    managed = [{"manager": "kubectl-client-side-apply", "operation": "Update", "fieldsV1": {}}]
    notes = {LAST_APPLIED: '{"kind":"Job"}'}
    meta = {**obj["metadata"], "managedFields": managed, "annotations": notes}
    stored = {**obj, "metadata": meta}
    sent = translate.job_observed(stored).job
    assert "managedFields" not in sent["metadata"]
    assert sent == {**obj, "metadata": {**obj["metadata"], "annotations": notes}}
    assert stored["metadata"]["managedFields"] == managed, "the watched object is left alone"


POD_GROUP_ROUTES = [
    pytest.param(pod_group(), envelopes.JobRef("ns", "train"), id="owned-by-job"),
    pytest.param(pod_group(owners=[]), None, id="no-owner"),
    pytest.param(pod_group(owners=[owner(kind="Deployment")]), None, id="other-kind"),
]


@pytest.mark.parametrize(("obj", "expected"), POD_GROUP_ROUTES)
def test_pod_group_job_routes_by_controller(
    obj: dict[str, Any], expected: envelopes.JobRef | None
) -> None:
    assert translate.pod_group_job(obj) == expected


def test_pod_group_observed_translates_phase_and_conditions() -> None:
    cond = [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}]
    assert translate.pod_group_observed(pod_group(phase="Inqueue", conditions=cond)) == (
        job_signals.PodGroupObserved(name="train-pg", phase="Inqueue", conditions=cond)
    )
    assert translate.pod_group_observed(pod_group(phase=None), deleted=True) == (
        job_signals.PodGroupObserved(name="train-pg", phase=None, deleted=True)
    )


COMMAND_ROUTES = [
    pytest.param(command(), envelopes.JobRef("ns", "train"), id="job-target"),
    pytest.param(command(target={**owner(), "kind": "Queue"}), None, id="queue-target"),
    pytest.param(command(target={**owner(), "apiVersion": "batch/v1"}), None, id="k8s-job"),
    pytest.param(command(target={}), None, id="no-target"),
]


@pytest.mark.parametrize(("obj", "expected"), COMMAND_ROUTES)
def test_command_job_only_for_volcano_job_targets(
    obj: dict[str, Any], expected: envelopes.JobRef | None
) -> None:
    assert translate.command_job(obj) == expected


def test_command_issued_carries_action_name_reason_message() -> None:
    assert translate.command_issued(command()) == common_signals.CommandIssued(
        action="AbortJob", command="train-abortjob-x", reason="user", message="stop it"
    )
    assert translate.command_issued(command(action=None)) is None
