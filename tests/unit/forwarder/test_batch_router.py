"""batch/v1 Jobs and their pods through the router and coalescer: only Jobs whose managedBy is
Caldera's reach a workflow, and they reach `job/<ns>/<name>`."""

from __future__ import annotations

from typing import Any

from forwarder import signaller
from forwarder.routing import batch_translate, coalesce, envelopes, router
from models import batchv1
from models.signals import batchjob as batchjob_signals
from models.signals import common as common_signals
from models.signals import job as job_signals

K = envelopes.Kind
REF = envelopes.BatchJobRef("ns", "train")


def batch_job(uid: str = "job-uid", managed: bool = True, **spec: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"parallelism": 2, "completions": 4, **spec}
    if managed:
        fields["managedBy"] = batchv1.CONTROLLER_NAME
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ns", "uid": uid, "resourceVersion": "1"},
        "spec": fields,
    }


def batch_pod(
    name: str = "train-abcde",
    uid: str = "pod-uid",
    owner: str = "job-uid",
    rv: str = "10",
    **status: Any,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": rv,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {batchv1.CONTROLLER_UID_LABEL: owner},
            "annotations": {batchv1.COMPLETION_INDEX: "3"},
            "finalizers": [batchv1.TRACKING_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train",
                    "uid": owner,
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}], "nodeName": "n1"},
        "status": {"phase": "Pending", **status},
    }


def _route(r: router.Router, kind: K, type_: envelopes.WatchType, obj: dict[str, Any]) -> list[Any]:
    return r.route(envelopes.Observed(kind, type_, obj))


def test_unmanaged_jobs_and_their_pods_are_left_to_the_builtin_controller() -> None:
    r = router.Router()
    assert _route(r, K.BATCH_JOB, "ADDED", batch_job(managed=False)) == []
    assert _route(r, K.BATCH_POD, "ADDED", batch_pod()) == []
    assert _route(r, K.BATCH_JOB, "DELETED", batch_job(managed=False)) == []


def test_managed_job_starts_its_workflow_and_status_echoes_are_dropped() -> None:
    r = router.Router()
    (added,) = _route(r, K.BATCH_JOB, "ADDED", batch_job())
    assert (added.target.workflow_id, added.name, added.start) == (
        "job/ns/train",
        job_signals.SIGNAL_JOB_OBSERVED,
        True,
    )
    echoed = {**batch_job(), "status": {"active": 2}}
    assert _route(r, K.BATCH_JOB, "MODIFIED", echoed) == []
    (suspended,) = _route(r, K.BATCH_JOB, "MODIFIED", batch_job(suspend=True))
    assert suspended.payload.job["spec"]["suspend"] is True


def test_deleted_job_is_told_and_never_restarted_by_a_late_event() -> None:
    r = router.Router()
    _route(r, K.BATCH_JOB, "ADDED", batch_job())
    (gone,) = _route(r, K.BATCH_JOB, "DELETED", batch_job())
    assert (gone.name, gone.payload, gone.start) == (
        job_signals.SIGNAL_JOB_DELETED,
        common_signals.JobDeleted(uid="job-uid"),
        False,
    )
    assert _route(r, K.BATCH_JOB, "MODIFIED", batch_job(suspend=True)) == []


def test_a_namespace_being_deleted_leaves_its_jobs_to_their_own_deletion() -> None:
    """Regression (CI rehearsal): told at the namespace's notice, a Job's workflow ended while
    its pods still carried the job-tracking finalizer it removes as they terminate, and the
    namespace stayed Terminating for good. Its workflow hears of the Job's own deletion."""
    r = router.Router()
    _route(r, K.BATCH_JOB, "ADDED", batch_job())
    going = {
        "metadata": {"name": "ns", "uid": "ns-uid", "deletionTimestamp": "2026-12-07T05:00:00Z"}
    }
    assert _route(r, K.NAMESPACE, "MODIFIED", going) == []
    (gone,) = _route(r, K.BATCH_JOB, "DELETED", batch_job())
    assert (gone.target.workflow_id, gone.name, gone.payload) == (
        "job/ns/train",
        job_signals.SIGNAL_JOB_DELETED,
        common_signals.JobDeleted(uid="job-uid"),
    )


def test_pod_snapshot_carries_what_the_controller_reads() -> None:
    r = router.Router()
    _route(r, K.BATCH_JOB, "ADDED", batch_job())
    failed = batch_pod(
        phase="Failed",
        conditions=[
            {"type": "DisruptionTarget", "status": "True"},
            {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:09Z"},
        ],
        containerStatuses=[
            {
                "name": "main",
                "restartCount": 1,
                "state": {"terminated": {"exitCode": 42, "finishedAt": "2026-01-01T00:00:08Z"}},
            }
        ],
    )
    (update,) = _route(r, K.BATCH_POD, "MODIFIED", failed)
    assert isinstance(update, envelopes.BatchPodUpdate) and update.job == REF
    pod = update.pod
    assert (pod.phase, pod.index, pod.finalizer, pod.job_uid, pod.node_name) == (
        "Failed",
        3,
        True,
        "job-uid",
        "n1",
    )
    assert pod.exits == [batchjob_signals.ContainerExitSnapshot(name="main", exit_code=42)]
    assert pod.conditions == {"DisruptionTarget": "True", "Ready": "False"}
    assert pod.finished_at is not None and pod.finished_at.second == 8  # the container's
    assert (pod.restarts, pod.max_restarts) == (1, 1)
    assert (
        _route(
            r,
            K.BATCH_POD,
            "MODIFIED",
            {**failed, "metadata": {**failed["metadata"], "resourceVersion": "11"}},
        )
        == []
    )
    (deleted,) = _route(r, K.BATCH_POD, "DELETED", failed)
    assert deleted.pod.deleted


def test_finish_time_falls_back_to_ready_false_then_deletion() -> None:
    ready_false = batch_pod(
        phase="Failed",
        conditions=[
            {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:05Z"}
        ],
    )
    assert batch_translate.finished_at(ready_false).second == 5  # type: ignore[union-attr]
    deleted = batch_pod(phase="Running")
    deleted["metadata"].update(
        deletionTimestamp="2026-01-01T00:00:30Z", deletionGracePeriodSeconds=20
    )
    assert batch_translate.pod_snapshot(deleted).finished_at.second == 10  # type: ignore[union-attr]


def test_pods_of_other_jobs_are_ignored() -> None:
    r = router.Router()
    _route(r, K.BATCH_JOB, "ADDED", batch_job())
    assert _route(r, K.BATCH_POD, "ADDED", batch_pod(owner="someone-else")) == []


def test_relist_reports_what_vanished_unseen() -> None:
    r = router.Router()
    r.route(envelopes.Relisted(K.BATCH_JOB, [batch_job(), batch_job(uid="old")]))
    r.route(envelopes.Relisted(K.BATCH_POD, [batch_pod(), batch_pod(name="train-zzzzz", uid="p2")]))
    out = r.route(envelopes.Relisted(K.BATCH_JOB, [batch_job()]))
    assert [(s.name, s.payload) for s in out if s.name == job_signals.SIGNAL_JOB_DELETED] == [
        (job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="old"))
    ]
    out = r.route(envelopes.Relisted(K.BATCH_POD, [batch_pod()]))
    updates = [u for u in out if isinstance(u, envelopes.BatchPodUpdate)]
    assert [(u.pod.name, u.pod.deleted) for u in updates] == [
        ("train-zzzzz", True),
        ("train-abcde", False),
    ]
    # And the Job hears which of its pods the list holds (one gone unseen by anyone is not).
    assert [s.payload for s in out if isinstance(s, envelopes.Signal)] == [
        job_signals.PodsListed(uids=["pod-uid"], names=["train-abcde"])
    ]


def test_coalescer_batches_batch_pods_into_their_own_payload() -> None:
    c = coalesce.Coalescer(delay=0.2)
    pod = batch_translate.pod_snapshot(batch_pod())
    c.add(envelopes.BatchPodUpdate(REF, pod), now=0.0)
    assert len(c) == 1
    (sent,) = c.due(1.0)
    assert sent.target == REF and sent.name == job_signals.SIGNAL_PODS_CHANGED
    assert sent.payload == batchjob_signals.BatchPodsChanged(pods=[pod])


def test_signaller_names_kubernetes_jobs_in_the_summary() -> None:
    assert signaller.summary(REF) == "Kubernetes Job ns/train"
