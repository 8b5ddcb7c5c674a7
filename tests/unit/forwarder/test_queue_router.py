"""What QueueWorkflows hear for each Queue, PodGroup and Command event, given what was seen."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder.routing import envelopes, router
from forwarder.routing import queue_translate as qt
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.unit.forwarder import command, owner, pod_group, queue, queue_owner
from tests.unit.forwarder.inbound import added, deleted, modified, route_all

K = envelopes.Kind
Q = envelopes.QueueRef
CLOSED = {"volcano.sh/closed-by-parent": "true"}


def observed(obj: dict[str, Any]) -> envelopes.Signal:
    payload = queue_signals.QueueObserved(queue=obj)
    return envelopes.Signal(
        qt.queue_ref(obj), queue_signals.SIGNAL_QUEUE_OBSERVED, payload, start=True
    )


def child(parent: str, obj: dict[str, Any], start: bool = True) -> envelopes.Signal:
    payload = qt.child_observed(obj)
    return envelopes.Signal(
        Q(parent), queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, payload, start=start
    )


def child_gone(parent: str, name: str = "q1") -> envelopes.Signal:
    payload = queue_signals.ChildQueueObserved(name=name, deleted=True)
    return envelopes.Signal(Q(parent), queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, payload)


def queue_gone(name: str = "q1", uid: str | None = None) -> envelopes.Signal:
    payload = queue_signals.QueueDeleted(uid=uid or f"uid-{name}")
    return envelopes.Signal(Q(name), queue_signals.SIGNAL_QUEUE_DELETED, payload)


def ref(
    queue_name: str, key: str = "ns/pg", phase: str | None = "Pending", gone: bool = False
) -> envelopes.GroupRefUpdate:
    payload = queue_signals.PodGroupRef(key=key, phase=phase, deleted=gone)
    return envelopes.GroupRefUpdate(Q(queue_name), payload)


def group(
    phase: str | None = "Pending", queue_name: str = "q1", uid: str = "pg-uid", **kw: Any
) -> dict[str, Any]:
    """A PodGroup not created by a Job, so only its queue hears about it."""
    return pod_group(name="pg", uid=uid, phase=phase, owners=[], queue=queue_name, **kw)


def with_queues(*objs: dict[str, Any]) -> router.Router:
    """A router that has listed root and `objs` (outputs discarded)."""
    r = router.Router()
    r.route(envelopes.Relisted(K.QUEUE, [queue("root", parent=None), *objs]))
    return r


# --- Queue add and update ---------------------------------------------------------------------


def test_queue_added_starts_it_and_tells_parent() -> None:
    r = with_queues()
    assert r.route(added(K.QUEUE, queue())) == [observed(queue()), child("root", queue())]


def test_root_has_no_parent_to_tell() -> None:
    root = queue("root", parent=None)
    assert router.Router().route(added(K.QUEUE, root)) == [observed(root)]


QUEUE_UPDATES = [
    pytest.param(queue(running=2, pending=1), False, False, id="status-counts-not-echoed"),
    pytest.param(queue(allocated={"cpu": "1"}), False, False, id="allocated-not-echoed"),
    pytest.param(queue(weight=5), True, False, id="spec-observed-only"),
    pytest.param(queue(annotations={"note": "x"}), True, False, id="annotation-observed-only"),
    pytest.param(queue(state="Closed"), True, True, id="state-both"),
    pytest.param(queue(state="Closed", annotations=CLOSED), True, True, id="closed-by-parent-both"),
]


@pytest.mark.parametrize(("update", "to_self", "to_parent"), QUEUE_UPDATES)
def test_queue_modified_filtered(update: dict[str, Any], to_self: bool, to_parent: bool) -> None:
    r = with_queues(queue())
    expected = [observed(update)] if to_self else []
    expected += [child("root", update)] if to_parent else []
    assert r.route(modified(K.QUEUE, update)) == expected


def test_queue_added_again_is_always_sent() -> None:
    r = with_queues(queue())
    assert r.route(added(K.QUEUE, queue())) == [observed(queue()), child("root", queue())]


def test_parent_changed_tells_old_parent_gone_and_new_parent() -> None:
    team = queue("team")
    r = with_queues(team, queue())
    moved = queue(parent="team")
    assert r.route(modified(K.QUEUE, moved)) == [
        observed(moved),
        child_gone("root"),
        child("team", moved),
    ]
    back = queue(parent=None)  # empty parent is root again
    assert r.route(modified(K.QUEUE, back)) == [
        observed(back),
        child_gone("team"),
        child("root", back),
    ]


def test_unknown_parent_is_signalled_not_started() -> None:
    r = with_queues()
    orphan = queue(parent="missing")
    assert r.route(added(K.QUEUE, orphan)) == [observed(orphan), child("missing", orphan, False)]


# --- Queue deletion ---------------------------------------------------------------------------


def test_queue_deleted_tells_it_and_its_parent_and_refuses_late_events() -> None:
    r = with_queues(queue())
    assert r.route(deleted(K.QUEUE, queue())) == [queue_gone(), child_gone("root")]
    assert r.queue_deleted("uid-q1")
    # A late event (or a relist race) for the deleted uid must never start a new run.
    assert r.route(modified(K.QUEUE, queue(state="Closed"))) == []
    assert r.route(envelopes.Relisted(K.QUEUE, [queue("root", parent=None), queue()])) == [
        observed(queue("root", parent=None))
    ]
    # The same name under a new uid is a new Queue.
    fresh = queue(uid="uid-2")
    assert r.route(added(K.QUEUE, fresh)) == [observed(fresh), child("root", fresh)]


def test_root_deleted_has_no_parent_to_tell() -> None:
    root = queue("root", parent=None)
    r = with_queues()
    assert r.route(deleted(K.QUEUE, root)) == [queue_gone("root")]


def test_deleted_queue_uids_are_bounded() -> None:
    r = router.Router(deleted_capacity=2)
    for uid in ("a", "b", "c"):
        r.route(deleted(K.QUEUE, queue(uid=uid)))
    assert [r.queue_deleted(u) for u in ("a", "b", "c")] == [False, True, True]


# --- Queue relist -----------------------------------------------------------------------------


def test_relist_observes_every_queue_and_deletes_the_vanished() -> None:
    root, stay, gone = queue("root", parent=None), queue("stay"), queue("gone", parent="stay")
    r = with_queues(stay, gone)
    assert r.route(envelopes.Relisted(K.QUEUE, [root, stay])) == [
        queue_gone("gone"),
        child_gone("stay", "gone"),
        observed(root),
        observed(stay),
        child("root", stay),
    ]
    assert r.queue_deleted("uid-gone")


def test_relist_child_before_parent_still_starts_parent() -> None:
    kid, team, root = queue("a-kid", parent="team"), queue("team"), queue("root", parent=None)
    out = router.Router().route(envelopes.Relisted(K.QUEUE, [kid, team, root]))
    assert out == [
        observed(kid),
        child("team", kid),
        observed(team),
        child("root", team),
        observed(root),
    ]


# --- PodGroups counted in queues --------------------------------------------------------------


POD_GROUP_UPDATES = [
    pytest.param("Pending", "Pending", False, id="same-phase"),
    pytest.param("Pending", "Inqueue", True, id="phase-changed"),
    pytest.param(None, "Pending", True, id="first-phase"),
    pytest.param("Running", "Completed", True, id="completed"),
]


@pytest.mark.parametrize(("first", "second", "sent"), POD_GROUP_UPDATES)
def test_pod_group_ref_on_add_and_phase_change(first: str | None, second: str, sent: bool) -> None:
    r = with_queues(queue())
    assert r.route(added(K.POD_GROUP, group(first))) == [ref("q1", phase=first)]
    expected = [ref("q1", phase=second)] if sent else []
    assert r.route(modified(K.POD_GROUP, group(second, conditions=[{"type": "x"}]))) == expected


def test_pod_group_deleted_sends_deleted_ref() -> None:
    r = with_queues(queue())
    out = route_all(r, added(K.POD_GROUP, group()), deleted(K.POD_GROUP, group("Running")))
    assert out == [ref("q1"), ref("q1", phase="Running", gone=True)]


def test_pod_group_without_queue_counts_in_default() -> None:
    r = with_queues(queue("default"))
    obj = pod_group(name="pg", owners=[])
    assert r.route(added(K.POD_GROUP, obj)) == [ref("default")]


def test_job_pod_group_goes_to_job_and_queue() -> None:
    r = with_queues(queue())
    # Its creation is only the queue's news: the Job made it.
    assert r.route(added(K.POD_GROUP, pod_group(name="pg", queue="q1"))) == [ref("q1")]
    obj = pod_group(name="pg", queue="q1", phase="Inqueue")
    out = r.route(modified(K.POD_GROUP, obj))
    job = envelopes.Signal(
        envelopes.JobRef("ns", "train"),
        job_signals.SIGNAL_POD_GROUP_OBSERVED,
        job_signals.PodGroupObserved(name="pg", phase="Inqueue"),
    )
    assert out == [job, ref("q1", phase="Inqueue")]


def test_pod_group_queue_changed_moves_ref() -> None:
    r = with_queues(queue(), queue("q2"))
    route_all(r, added(K.POD_GROUP, group()))
    assert r.route(modified(K.POD_GROUP, group(queue_name="q2"))) == [
        ref("q1", gone=True),
        ref("q2"),
    ]


def test_pod_group_of_unknown_queue_held_until_queue_appears() -> None:
    r = with_queues()
    assert route_all(r, added(K.POD_GROUP, group()), modified(K.POD_GROUP, group("Inqueue"))) == []
    assert r.route(added(K.QUEUE, queue())) == [
        observed(queue()),
        child("root", queue()),
        ref("q1", phase="Inqueue"),
    ]
    # Already live: a later relist of the queue does not resend the refs.
    assert ref("q1", phase="Inqueue") not in r.route(
        envelopes.Relisted(K.QUEUE, [queue("root", parent=None), queue()])
    )


def test_pod_group_of_deleted_queue_not_sent() -> None:
    r = with_queues(queue())
    route_all(r, deleted(K.QUEUE, queue()))
    assert r.route(added(K.POD_GROUP, group())) == []


def test_pod_group_relist_resends_refs_and_deletes_vanished() -> None:
    r = with_queues(queue())
    a, b = group(uid="ua"), pod_group(name="b", uid="ub", owners=[], queue="q1")
    route_all(r, envelopes.Relisted(K.POD_GROUP, [a, b]))
    out = r.route(envelopes.Relisted(K.POD_GROUP, [b]))
    assert [o for o in out if not isinstance(o, envelopes.Signal)] == [
        ref("q1", gone=True),
        ref("q1", key="ns/b"),
    ]
    out = r.route(envelopes.Relisted(K.POD_GROUP, []))
    assert [o for o in out if not isinstance(o, envelopes.Signal)] == [
        ref("q1", key="ns/b", gone=True)
    ]
    # And every live queue hears which PodGroups the list holds.
    listed = [o.payload for o in out if isinstance(o, envelopes.Signal) and o.target == Q("q1")]
    assert listed == [queue_signals.PodGroupsListed()]


# --- Commands aimed at queues -----------------------------------------------------------------


def consumed(action: str = "CloseQueue") -> envelopes.ConsumeCommand:
    issued = common_signals.CommandIssued(
        action=action, command="q1-close", reason="user", message="m"
    )
    signal = envelopes.Signal(Q("q1"), common_signals.SIGNAL_COMMAND_ISSUED, issued)
    return envelopes.ConsumeCommand("default", "q1-close", "cmd-uid", signal)


def queue_command(**kw: Any) -> dict[str, Any]:
    obj = command(name="q1-close", ns="default", action="CloseQueue", **kw)
    return {**obj, "message": "m"}


QUEUE_COMMANDS = [
    pytest.param(queue_command(target=queue_owner()), consumed(), id="target"),
    pytest.param(queue_command(target={}, owners=[queue_owner()]), consumed(), id="owner-ref"),
    pytest.param(
        queue_command(target=queue_owner(), owners=[queue_owner()]), consumed(), id="both"
    ),
    pytest.param(queue_command(target=owner(), owners=[queue_owner()]), None, id="job-target"),
    pytest.param(queue_command(target={}), None, id="no-target"),
]


@pytest.mark.parametrize(("obj", "expected"), QUEUE_COMMANDS)
def test_queue_command_consumed_then_delivered(
    obj: dict[str, Any], expected: envelopes.ConsumeCommand | None
) -> None:
    out = router.Router().route(added(K.COMMAND, obj))
    if expected is None:
        assert all(
            o.signal.target != Q("q1") for o in out if isinstance(o, envelopes.ConsumeCommand)
        )
    else:
        assert out == [expected]


def test_queue_command_without_action_ignored() -> None:
    obj = queue_command(target=queue_owner())
    del obj["action"]
    assert router.Router().route(added(K.COMMAND, obj)) == []
