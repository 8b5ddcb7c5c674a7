"""What the router sends for each watch event or full list, given what it saw before."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder.routing import envelopes, router, translate
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.unit.forwarder import command, job, owner, pod, pod_group, queue
from tests.unit.forwarder.inbound import added, deleted, modified, route_all

K = envelopes.Kind
REF = envelopes.JobRef("ns", "train")


def observed(obj: dict[str, Any]) -> envelopes.Signal:
    return envelopes.Signal(
        REF, job_signals.SIGNAL_JOB_OBSERVED, job_signals.JobObserved(job=obj), start=True
    )


def job_gone(uid: str = "job-uid") -> envelopes.Signal:
    return envelopes.Signal(REF, job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid=uid))


def pod_update(obj: dict[str, Any], gone: bool = False) -> envelopes.PodUpdate:
    return envelopes.PodUpdate(REF, translate.pod_snapshot(obj, deleted=gone))


def group_signal(obj: dict[str, Any], gone: bool = False) -> envelopes.Signal:
    payload = translate.pod_group_observed(obj, deleted=gone)
    return envelopes.Signal(REF, job_signals.SIGNAL_POD_GROUP_OBSERVED, payload)


JOB_UPDATES = [
    pytest.param(job(phase="Running"), job(phase="Running", running=2), False, id="counters-only"),
    # The status is the workflow's own write: a phase change on every job's way is its echo.
    pytest.param(job(phase="Pending"), job(phase="Running"), False, id="phase-changed"),
    # Into or out of a phase Volcano acts on entering, the echo is the next step.
    pytest.param(job(phase="Running"), job(phase="Restarting"), True, id="into-restarting"),
    pytest.param(job(phase="Restarting"), job(phase="Pending"), True, id="out-of-restarting"),
    pytest.param(job(phase="Aborting"), job(phase="Aborted"), True, id="out-of-aborting"),
    # A finished phase too: its echo is the soft kill that removes the PodGroup.
    pytest.param(job(phase="Running"), job(phase="Completed"), True, id="completed"),
    pytest.param(job(phase="Running"), job(phase="Failed"), True, id="failed"),
    pytest.param(job(phase="Completed"), job(phase="Completed", succeeded=1), False, id="stays"),
    pytest.param(job(replicas=2), job(replicas=4), True, id="spec-changed"),
]


@pytest.mark.parametrize(("first", "second", "sent"), JOB_UPDATES)
def test_job_modified_sent_when_spec_or_a_phase_acted_on_changed(
    first: dict[str, Any], second: dict[str, Any], sent: bool
) -> None:
    r = router.Router()
    assert r.route(added(K.JOB, first)) == [observed(first)]
    assert r.route(modified(K.JOB, second)) == ([observed(second)] if sent else [])


def test_job_added_again_is_always_sent() -> None:
    r = router.Router()
    route_all(r, added(K.JOB, job()))
    assert r.route(added(K.JOB, job())) == [observed(job())]


def test_job_deleting_still_observed() -> None:
    r = router.Router()
    going = {
        **job(),
        "metadata": {**job()["metadata"], "deletionTimestamp": "2025-01-01T00:00:00Z"},
    }
    assert route_all(r, added(K.JOB, job()), modified(K.JOB, going)) == [
        observed(job()),
        observed(going),
    ]


def test_job_deleted_sends_job_deleted_and_refuses_late_events() -> None:
    r = router.Router()
    out = route_all(r, added(K.JOB, job()), deleted(K.JOB, job()))
    assert out == [observed(job()), job_gone()]
    assert r.job_deleted("job-uid")
    # A late event (or a relist race) for the deleted uid must never start a new run.
    assert r.route(modified(K.JOB, job(phase="Completed"))) == []
    assert r.route(envelopes.Relisted(K.JOB, [job()])) == []
    # The same name under a new uid is a new Job.
    fresh = job(uid="uid-2")
    assert r.route(added(K.JOB, fresh)) == [observed(fresh)]


def test_deleted_uids_are_bounded() -> None:
    r = router.Router(deleted_capacity=2)
    for uid in ("a", "b", "c"):
        r.route(deleted(K.JOB, job(uid=uid)))
    assert [r.job_deleted(u) for u in ("a", "b", "c")] == [False, True, True]


def test_relist_sends_every_job_and_deletes_the_vanished() -> None:
    r = router.Router()
    stay, gone = job(uid="stay"), job(name="old", uid="gone")
    route_all(r, envelopes.Relisted(K.JOB, [stay, gone]))
    out = r.route(envelopes.Relisted(K.JOB, [stay]))
    old = envelopes.JobRef("ns", "old")
    assert out == [
        envelopes.Signal(
            old, job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="gone")
        ),
        observed(stay),
    ]
    assert r.job_deleted("gone")


def test_pod_events_update_then_delete() -> None:
    r = router.Router()
    running = pod(phase="Running", rv="11", node="n1")
    out = route_all(r, added(K.POD, pod()), modified(K.POD, running), deleted(K.POD, running))
    # The creation is the Job's own (it counts the pods it creates); the rest is news.
    assert out == [pod_update(running), pod_update(running, gone=True)]


def test_pod_created_by_its_job_is_an_echo_but_relisted_it_is_sent() -> None:
    assert router.Router().route(added(K.POD, pod())) == []
    assert router.Router().route(envelopes.Relisted(K.POD, [pod()])) == [pod_update(pod())]


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(pod(node="n1"), id="bound"),
        pytest.param(pod(phase="Running", node="n1"), id="running"),
        pytest.param(pod(deleting=True), id="deleting"),
    ],
)
def test_new_pod_beyond_its_creation_is_sent(first: dict[str, Any]) -> None:
    assert router.Router().route(added(K.POD, first)) == [pod_update(first)]


def test_pod_bound_alone_is_not_sent_its_node_travels_with_running() -> None:
    r = router.Router()
    bound, running = pod(node="n1", rv="11"), pod(phase="Running", node="n1", rv="12")
    assert route_all(r, added(K.POD, pod()), modified(K.POD, bound)) == []
    [update] = r.route(modified(K.POD, running))
    assert isinstance(update, envelopes.PodUpdate) and update.pod.node_name == "n1"


def test_pod_resource_version_bump_alone_not_sent() -> None:
    r = router.Router()
    route_all(r, added(K.POD, pod()))
    assert r.route(modified(K.POD, pod(rv="11"))) == []


def test_pod_without_volcano_annotations_ignored() -> None:
    r = router.Router()
    assert route_all(r, added(K.POD, pod(task=None)), deleted(K.POD, pod(job_name=None))) == []


def test_relist_resends_pods_and_marks_vanished_deleted() -> None:
    r = router.Router()
    a, b = pod(name="a", uid="ua"), pod(name="b", uid="ub")
    route_all(r, envelopes.Relisted(K.POD, [a, b]))
    assert r.route(envelopes.Relisted(K.POD, [b])) == [pod_update(a, gone=True), pod_update(b)]
    assert r.route(envelopes.Relisted(K.POD, [])) == [pod_update(b, gone=True)]


POD_GROUP_UPDATES = [
    pytest.param("Pending", "Pending", False, id="same-phase"),
    pytest.param("Pending", "Inqueue", True, id="phase-changed"),
    pytest.param("Running", "Unknown", True, id="unknown"),
    pytest.param("Inqueue", "Pending", True, id="back-behind-the-gate"),
    # Past the gate the phase decides nothing for the Job: Inqueue → Running is not sent.
    pytest.param("Inqueue", "Running", False, id="past-the-gate"),
    pytest.param("Running", "Completed", False, id="completed"),
]


@pytest.mark.parametrize(("first", "second", "sent"), POD_GROUP_UPDATES)
def test_pod_group_sent_on_phase_change_only(first: str, second: str, sent: bool) -> None:
    r = router.Router()
    a, b = pod_group(phase=first), pod_group(phase=second, conditions=[{"type": "x"}])
    assert r.route(envelopes.Relisted(K.POD_GROUP, [a])) == [group_signal(a)]
    assert r.route(modified(K.POD_GROUP, b)) == ([group_signal(b)] if sent else [])


@pytest.mark.parametrize(("phase", "sent"), [(None, False), ("Pending", False), ("Inqueue", True)])
def test_new_pod_group_is_its_jobs_echo_until_it_has_a_phase(phase: str | None, sent: bool) -> None:
    group = pod_group(phase=phase)
    assert router.Router().route(added(K.POD_GROUP, group)) == (
        [group_signal(group)] if sent else []
    )


def test_pod_group_deleted_and_vanished() -> None:
    r = router.Router()
    a, b = pod_group(name="a", uid="ua"), pod_group(name="b", uid="ub")
    route_all(r, envelopes.Relisted(K.POD_GROUP, [a, b]))
    assert r.route(deleted(K.POD_GROUP, a)) == [group_signal(a, gone=True)]
    assert r.route(envelopes.Relisted(K.POD_GROUP, [])) == [group_signal(b, gone=True)]


def test_pod_group_not_owned_by_job_ignored() -> None:
    r = router.Router()
    assert r.route(added(K.POD_GROUP, pod_group(owners=[owner(kind="Other")]))) == []


def test_command_added_for_job_is_consumed() -> None:
    r = router.Router()
    issued = common_signals.CommandIssued(
        action="AbortJob", command="train-abortjob-x", reason="user", message="stop it"
    )
    expected = envelopes.ConsumeCommand(
        "ns",
        "train-abortjob-x",
        "cmd-uid",
        envelopes.Signal(REF, common_signals.SIGNAL_COMMAND_ISSUED, issued),
    )
    assert r.route(added(K.COMMAND, command())) == [expected]
    assert r.route(envelopes.Relisted(K.COMMAND, [command()])) == [expected]


COMMANDS_IGNORED = [
    pytest.param(modified(K.COMMAND, command()), id="modified"),
    pytest.param(deleted(K.COMMAND, command()), id="deleted"),
    pytest.param(added(K.COMMAND, command(target={**owner(), "kind": "Queue"})), id="queue"),
    pytest.param(added(K.COMMAND, command(action=None)), id="no-action"),
]


@pytest.mark.parametrize("item", COMMANDS_IGNORED)
def test_command_ignored(item: envelopes.Observed) -> None:
    assert router.Router().route(item) == []


def test_members_of_a_deleted_job_are_not_sent() -> None:
    """Its workflow is ending: a late pod or PodGroup signal would only retry its last task."""
    r = router.Router()
    running, group = pod(phase="Running"), pod_group(phase="Running")
    route_all(r, added(K.JOB, job()), added(K.POD, running), added(K.POD_GROUP, group))
    assert r.route(deleted(K.JOB, job())) == [job_gone()]
    assert route_all(r, deleted(K.POD, running), deleted(K.POD_GROUP, group)) == []
    # The same name under a new uid is a new Job, and its pods are its news.
    fresh = pod(uid="pod-2", owners=[owner(uid="uid-2")], phase="Running")
    assert r.route(added(K.POD, fresh)) == [pod_update(fresh)]


def test_a_full_list_of_pods_tells_every_job_which_of_its_pods_exist() -> None:
    """Regression (chaos soak): a pod deleted while no forwarder led was in no list and no
    watch; now each Job hears the pods a full list holds, and one with none hears so too."""
    r = router.Router()
    other = envelopes.JobRef("ns", "idle")
    route_all(r, envelopes.Relisted(K.JOB, [job(), job(name="idle", uid="idle-uid")]))
    out = r.route(envelopes.Relisted(K.POD, [pod(name="a", uid="ua")]))
    listed = {s.target: s.payload for s in out if isinstance(s, envelopes.Signal)}
    assert listed == {
        REF: job_signals.PodsListed(uids=["ua"], names=["a"]),
        other: job_signals.PodsListed(),
    }
    assert [s.name for s in out if isinstance(s, envelopes.Signal)] == [
        job_signals.SIGNAL_PODS_LISTED
    ] * 2


def test_a_full_list_of_pod_groups_tells_every_queue_which_of_its_pod_groups_exist() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [queue("root", parent=None), queue()]))
    out = r.route(envelopes.Relisted(K.POD_GROUP, [pod_group(owners=[], queue="q1")]))
    listed = {
        s.target: s.payload
        for s in out
        if isinstance(s, envelopes.Signal) and s.name == queue_signals.SIGNAL_POD_GROUPS_LISTED
    }
    assert listed == {
        envelopes.QueueRef("q1"): queue_signals.PodGroupsListed(keys=["ns/train-pg"]),
        envelopes.QueueRef("root"): queue_signals.PodGroupsListed(),
    }


def _namespace(name: str = "ns", deleting: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T05:00:00Z"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def test_a_namespace_being_deleted_tells_each_of_its_jobs_once_and_at_once() -> None:
    """One notice for the namespace: every Job in it hears its deletion when the namespace
    starts going, not when the namespace controller reaches it; the Job's own DELETED event
    and its pods' then send nothing. Jobs of other namespaces and a live namespace's changes
    are left alone."""
    r = router.Router()
    other = job(uid="uid-other", ns="elsewhere")
    running = pod(phase="Running")
    route_all(r, added(K.JOB, job()), added(K.JOB, other), added(K.POD, running))
    assert r.route(modified(K.NAMESPACE, _namespace(deleting=False))) == []
    assert r.route(modified(K.NAMESPACE, _namespace())) == [job_gone()]
    assert r.route(modified(K.NAMESPACE, _namespace())) == []  # told once
    assert route_all(r, deleted(K.POD, running), deleted(K.JOB, job())) == []
    assert r.route(modified(K.JOB, job(phase="Completed"))) == []  # never a new run
    gone_elsewhere = envelopes.Signal(
        envelopes.JobRef("elsewhere", "train"),
        job_signals.SIGNAL_JOB_DELETED,
        common_signals.JobDeleted(uid="uid-other"),
    )
    assert r.route(deleted(K.NAMESPACE, _namespace("elsewhere", deleting=False))) == [
        gone_elsewhere
    ]
