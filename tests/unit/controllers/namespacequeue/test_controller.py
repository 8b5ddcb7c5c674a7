"""decide() for NamespaceQueues: the read, the status written once, the lifecycle, by value."""

from __future__ import annotations

from datetime import timedelta

from controllers import effects as fx
from controllers.namespacequeue import controller
from controllers.namespacequeue import effects as nq_fx
from controllers.namespacequeue.hierarchy import select
from controllers.namespacequeue.state import NamespaceQueueRecord
from models.bus import Action
from models.namespacequeue import NamespaceQueue
from models.scheduling import Queue, QueueState
from models.signals import common as common_signals
from models.signals import namespacequeue as nq_signals
from models.signals import queue as queue_signals
from tests.unit.controllers.namespacequeue.builders import T0, nq, queue

NOW = T0 + timedelta(hours=1)
LATER = NOW + timedelta(minutes=5)
RESEARCH = queue("research", allowed=["team-a"])
ZERO = {"pending": 0, "running": 0, "unknown": 0, "inqueue": 0, "completed": 0}


def _observed(queue_: NamespaceQueue) -> controller.ParsedNamespaceQueue:
    signal = nq_signals.NamespaceQueueObserved(queue=queue_.dump())
    return controller.ParsedNamespaceQueue(signal=signal, queue=queue_)


def _read(
    me: NamespaceQueue, queues: list[Queue], *others: NamespaceQueue
) -> controller.SurroundingsRead:
    s = select("team-a", me.metadata.name or "", [me, *others], queues)
    return controller.SurroundingsRead(surroundings=s)


def _ready(me: NamespaceQueue | None = None) -> NamespaceQueueRecord:
    me = me or nq("training", "cluster/research")
    r = controller.decide(NamespaceQueueRecord(), _observed(me), NOW).state
    return controller.decide(r, _read(me, [RESEARCH]), NOW).state


def _write(d: controller.Decision) -> nq_fx.WriteNamespaceQueueStatus:
    writes = [e for e in d.effects if isinstance(e, nq_fx.WriteNamespaceQueueStatus)]
    assert len(writes) == 1, d.effects
    return writes[0]


def _groups(*refs: tuple[str, str | None, bool]) -> queue_signals.PodGroupsChanged:
    return queue_signals.PodGroupsChanged(
        groups=[queue_signals.PodGroupRef(key=k, phase=p, deleted=d) for k, p, d in refs]
    )


def test_first_observation_reads_surroundings_and_writes_nothing_yet() -> None:
    d = controller.decide(
        NamespaceQueueRecord(), _observed(nq("training", "cluster/research")), NOW
    )
    assert d.effects == (nq_fx.ReadSurroundings(namespace="team-a", name="training"),)


def test_surroundings_read_writes_open_authorized_ready_with_counters() -> None:
    me = nq("training", "cluster/research")
    r = controller.decide(NamespaceQueueRecord(), _observed(me), NOW).state
    d = controller.decide(r, _read(me, [RESEARCH]), NOW)
    stamp = "2026-07-10T01:00:00Z"
    assert _write(d).status == {
        "state": "Open",
        "conditions": [
            {
                "type": "Authorized",
                "status": "True",
                "reason": "NamespaceAllowed",
                "message": 'namespace "team-a" is authorized to use research',
                "lastTransitionTime": stamp,
                "observedGeneration": 1,
            },
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "NamespaceQueue is ready for scheduling",
                "lastTransitionTime": stamp,
                "observedGeneration": 1,
            },
        ],
        **ZERO,
    }


def test_same_surroundings_read_again_writes_nothing() -> None:
    r = _ready()
    d = controller.decide(r, _read(nq("training", "cluster/research"), [RESEARCH]), LATER)
    assert d.effects == ()


def test_authorization_revoked_flips_both_conditions_and_keeps_state() -> None:
    r = _ready()
    revoked = [queue("research", allowed=["team-b"])]
    d = controller.decide(r, _read(nq("training", "cluster/research"), revoked), LATER)
    status = _write(d).status
    assert status["state"] == "Open"
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Authorized", "False", "NamespaceNotAllowed"),
        ("Ready", "False", "NamespaceNotAllowed"),
    ]
    assert {c["lastTransitionTime"] for c in status["conditions"]} == {"2026-07-10T01:05:00Z"}


def test_message_change_keeps_last_transition_time() -> None:
    me = nq("training", "cluster/research", capability={"cpu": "200"})
    r = _ready(me)
    tighter = [queue("research", allowed=["team-a"], capability={"cpu": "100"})]
    r = controller.decide(r, _read(me, tighter), LATER).state
    tightest = [queue("research", allowed=["team-a"], capability={"cpu": "50"})]
    d = controller.decide(r, _read(me, tightest), LATER + timedelta(minutes=1))
    ready = _write(d).status["conditions"][1]
    assert (ready["reason"], ready["lastTransitionTime"]) == (
        "ParentConstraintViolation",
        "2026-07-10T01:05:00Z",
    )
    assert "the 50 of cluster/research" in ready["message"]


def test_pod_groups_counted_and_written() -> None:
    r = _ready()
    d = controller.decide(
        r, _groups(("team-a/pg1", "Running", False), ("team-a/pg2", None, False)), LATER
    )
    status = _write(d).status
    assert (status["running"], status["pending"]) == (1, 1)


def test_close_with_running_pod_group_is_closing_then_closed_when_it_ends() -> None:
    r = _ready()
    r = controller.decide(
        r, _groups(("team-a/pg1", "Running", False), ("team-a/pg2", "Pending", False)), NOW
    ).state
    d = controller.decide(r, common_signals.CommandIssued(action="CloseQueue", command="c1"), LATER)
    assert d.state.current == QueueState.CLOSING
    status = _write(d).status
    assert status["state"] == "Closing"
    assert (status["conditions"][1]["status"], status["conditions"][1]["reason"]) == (
        "False",
        "Closing",
    )
    assert any(isinstance(e, fx.RecordEvent) and e.reason == "CloseQueue" for e in d.effects)
    d = controller.decide(d.state, _groups(("team-a/pg1", "Completed", False)), LATER)
    assert d.state.current == QueueState.CLOSED  # a Pending PodGroup holds nothing
    assert _write(d).status["conditions"][1]["reason"] == "Closed"


def test_open_after_close_is_ready_again() -> None:
    r = controller.decide(_ready(), controller.Command(action=Action.CLOSE_QUEUE), NOW).state
    assert r.current == QueueState.CLOSED
    d = controller.decide(r, controller.Command(action=Action.OPEN_QUEUE, why="reopen"), LATER)
    assert _write(d).status["conditions"][1]["status"] == "True"
    assert d.state.current == QueueState.OPEN


def test_status_already_on_object_is_adopted_not_written_again() -> None:
    me = nq("training", "cluster/research")
    first = controller.decide(
        _ready(me).model_copy(update={"written": None}), _read(me, [RESEARCH]), NOW
    )
    written = _write(first).status
    restarted = nq("training", "cluster/research", status=written)
    r = controller.decide(NamespaceQueueRecord(), _observed(restarted), LATER).state
    assert controller.decide(r, _read(me, [RESEARCH]), LATER).effects == ()


def test_hierarchy_changed_reads_again_once_observed() -> None:
    assert (
        controller.decide(NamespaceQueueRecord(), nq_signals.HierarchyChanged(), NOW).effects == ()
    )
    d = controller.decide(_ready(), nq_signals.HierarchyChanged(why="parent changed"), NOW)
    assert d.effects == (nq_fx.ReadSurroundings(namespace="team-a", name="training"),)


def test_deleted_finishes() -> None:
    d = controller.decide(_ready(), nq_signals.NamespaceQueueDeleted(uid="u"), NOW)
    assert d.effects == (fx.Finish(),)
    assert controller.decide(d.state, _groups(("team-a/pg", "Running", False)), NOW).effects == ()


def test_command_that_is_not_open_or_close_is_a_warning() -> None:
    d = controller.decide(
        _ready(), common_signals.CommandIssued(action="AbortJob", command="c"), NOW
    )
    assert d.effects == (
        fx.RecordEvent(
            type="Warning",
            reason="InvalidCommand",
            message="action AbortJob does not apply to a NamespaceQueue; ignored",
        ),
    )


def test_pod_groups_listed_drops_those_gone_unseen() -> None:
    r = controller.decide(_ready(), _groups(("team-a/pg1", "Running", False)), NOW).state
    d = controller.decide(r, queue_signals.PodGroupsListed(keys=[]), NOW)
    assert _write(d).status["running"] == 0
    assert controller.decide(d.state, queue_signals.PodGroupsListed(keys=[]), NOW).effects == ()


def test_made_again_under_same_name_starts_from_scratch() -> None:
    r = controller.decide(_ready(), _groups(("team-a/pg1", "Running", False)), NOW).state
    again = nq("training", "cluster/research").model_copy(deep=True)
    meta = again.metadata.model_copy(update={"uid": "new-uid"})
    d = controller.decide(r, _observed(again.model_copy(update={"metadata": meta})), LATER)
    assert d.state.written is None and d.state.surroundings is None
    assert d.effects == (nq_fx.ReadSurroundings(namespace="team-a", name="training"),)


def test_refusals() -> None:
    assert controller.refusal(NamespaceQueueRecord(), Action.OPEN_QUEUE) is not None
    r = _ready()
    assert (
        controller.refusal(r, Action.OPEN_QUEUE) == "NamespaceQueue team-a/training is already Open"
    )
    assert controller.refusal(r, Action.CLOSE_QUEUE) is None


def test_view_shows_conditions_and_parent() -> None:
    view = controller.view(_ready(nq("training")))
    assert (view.parent, view.authorized, view.ready, view.reason) == (
        "cluster/default",
        "False",
        "False",
        "ParentNotFound",
    )


def test_ready_moving_is_told_as_an_event_both_ways() -> None:
    me = nq("training", "cluster/research")
    r = _ready(me)
    revoked = controller.decide(r, _read(me, [queue("research", allowed=["team-b"])]), LATER)
    assert revoked.effects[1:] == (
        fx.RecordEvent(
            type="Warning",
            reason="NamespaceNotAllowed",
            message='namespace "team-a" is not in the allowedNamespaces of Queue research',
        ),
    )
    restored = controller.decide(revoked.state, _read(me, [RESEARCH]), LATER)
    assert restored.effects[1:] == (
        fx.RecordEvent(reason="Ready", message="NamespaceQueue is ready for scheduling"),
    )


def test_first_status_not_ready_is_a_warning() -> None:
    me = nq("training", "cluster/missing")
    r = controller.decide(NamespaceQueueRecord(), _observed(me), NOW).state
    d = controller.decide(r, _read(me, [RESEARCH]), NOW)
    assert [(e.type, e.reason) for e in d.effects if isinstance(e, fx.RecordEvent)] == [
        ("Warning", "ParentNotFound")
    ]
