"""decide() for queues: counts, the hierarchy rules and refusals, by value."""

from __future__ import annotations

from typing import Any

from controllers.queue import controller
from controllers.queue import effects as queue_fx
from controllers.queue.state import QueueRecord
from models.bus import Action
from models.scheduling import QueueState
from models.signals import common as common_signals
from models.signals import queue as queue_signals
from tests.builders import observed_queue


def _queue(
    name: str, parent: str = "root", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"u-{name}", "annotations": annotations or {}}
    return {"metadata": meta, "spec": {"weight": 1, "parent": parent}}


def _observed(name: str, parent: str = "root", **kw: Any) -> QueueRecord:
    return controller.decide(QueueRecord(), observed_queue(_queue(name, parent, **kw))).state


def test_first_observation_writes_open_with_zero_counts() -> None:
    decision = controller.decide(QueueRecord(), observed_queue(_queue("q")))
    zero = {"pending": 0, "running": 0, "unknown": 0, "inqueue": 0, "completed": 0}
    assert decision.effects[0] == queue_fx.WriteQueueStatus(
        name="q", state=QueueState.OPEN, counts=zero
    )
    assert isinstance(decision.effects[1], queue_fx.StateChanged)


def test_pod_group_counts_follow_phases_and_deletions() -> None:
    q = _observed("q")
    refs = [
        queue_signals.PodGroupRef(key="a/1", phase="Running"),
        queue_signals.PodGroupRef(key="a/2", phase="Inqueue"),
        queue_signals.PodGroupRef(key="a/3"),
    ]
    q = controller.decide(q, queue_signals.PodGroupsChanged(groups=refs)).state
    assert controller.view(q).pod_groups == {
        "pending": 1,
        "running": 1,
        "unknown": 0,
        "inqueue": 1,
        "completed": 0,
    }
    q = controller.decide(
        q, queue_signals.PodGroupsChanged(groups=[refs[0].model_copy(update={"deleted": True})])
    ).state
    assert controller.view(q).pod_groups["running"] == 0


def test_closing_queue_becomes_closed_when_its_last_pod_group_goes() -> None:
    q = _observed("q")
    q = controller.decide(
        q,
        queue_signals.PodGroupsChanged(
            groups=[queue_signals.PodGroupRef(key="a/1", phase="Running")]
        ),
    ).state
    q = controller.decide(q, controller.Command(action=Action.CLOSE_QUEUE)).state
    assert q.state == QueueState.CLOSING
    gone = queue_signals.PodGroupRef(key="a/1", deleted=True)
    decision = controller.decide(q, queue_signals.PodGroupsChanged(groups=[gone]))
    assert decision.state.state == QueueState.CLOSED


def test_parent_closing_closes_an_open_child_and_marks_it() -> None:
    q = _observed("c", parent="p")
    decision = controller.decide(q, queue_signals.ParentStateChanged(parent="p", state="Closing"))
    assert decision.state.state == QueueState.CLOSED and decision.state.closed_by_parent
    assert queue_fx.PatchQueue(name="c", closed_by_parent=True) in decision.effects


def test_parent_open_reopens_only_a_child_it_closed() -> None:
    mine = _observed("c", parent="p", annotations={"volcano.sh/closed-by-parent": "true"})
    mine = mine.model_copy(update={"state": QueueState.CLOSED})
    theirs = mine.model_copy(update={"closed_by_parent": False})
    open_parent = queue_signals.ParentStateChanged(parent="p", state="Open")
    assert controller.decide(mine, open_parent).state.state == QueueState.OPEN
    assert controller.decide(theirs, open_parent).state.state == QueueState.CLOSED


def test_new_child_is_told_the_parent_state() -> None:
    q = controller.decide(_observed("p"), controller.Command(action=Action.CLOSE_QUEUE)).state
    decision = controller.decide(q, queue_signals.ChildQueueObserved(name="c"))
    assert decision.effects == (queue_fx.TellChildren(children=["c"], state=QueueState.CLOSED),)


def test_unknown_command_is_reported_not_executed() -> None:
    q = _observed("q")
    decision = controller.decide(q, common_signals.CommandIssued(action="AbortJob", command="x"))
    assert decision.state == q
    assert [e.kind for e in decision.effects] == ["RecordEvent"]


def test_parent_waits_for_open_children_before_it_is_closed() -> None:
    q = controller.decide(_observed("p"), queue_signals.ChildQueueObserved(name="c")).state
    q = controller.decide(q, controller.Command(action=Action.CLOSE_QUEUE)).state
    assert q.state == QueueState.CLOSING
    closed = queue_signals.ChildQueueObserved(name="c", state="Closed", closed_by_parent=True)
    assert controller.decide(q, closed).state.state == QueueState.CLOSED


def test_an_object_created_again_under_the_same_name_is_written_afresh() -> None:
    q = _observed("q")
    again = controller.decide(q, observed_queue(_queue("q"))).effects
    assert not any(isinstance(e, queue_fx.WriteQueueStatus) for e in again)
    recreated = _queue("q")
    recreated["metadata"]["uid"] = "u-q-2"  # deleted and created while no one watched
    decision = controller.decide(q, observed_queue(recreated))
    zero = {"pending": 0, "running": 0, "unknown": 0, "inqueue": 0, "completed": 0}
    assert decision.effects[0] == queue_fx.WriteQueueStatus(
        name="q", state=QueueState.OPEN, counts=zero
    )
    assert decision.state.uid == "u-q-2"


def test_a_new_object_that_records_a_state_keeps_it() -> None:
    q = _observed("q")
    recreated = _queue("q")
    recreated["metadata"]["uid"] = "u-q-2"
    recreated["status"] = {"state": "Closed"}
    decision = controller.decide(q, observed_queue(recreated))
    assert decision.state.state == QueueState.CLOSED


def test_pod_groups_gone_while_no_forwarder_watched_leave_the_counts() -> None:
    """Regression (chaos soak): PodGroups deleted between two forwarder leaders stayed in the
    queue's counts for good; a full list now says which exist."""
    q = _observed("q")
    refs = [
        queue_signals.PodGroupRef(key="a/1", phase="Running"),
        queue_signals.PodGroupRef(key="a/2"),
    ]
    q = controller.decide(q, queue_signals.PodGroupsChanged(groups=refs)).state
    decision = controller.decide(q, queue_signals.PodGroupsListed(keys=["a/2"]))
    assert controller.view(decision.state).pod_groups["running"] == 0
    assert any(isinstance(e, queue_fx.WriteQueueStatus) for e in decision.effects)
    assert (
        controller.decide(decision.state, queue_signals.PodGroupsListed(keys=["a/2"])).effects == ()
    )
