"""The gang transaction (C8.3): tentative placements, then commit all or discard all."""

from __future__ import annotations

import pytest

from models.keys import JobKey, QueueName
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import NodeName, PodKey, TaskStatus
from scheduling.api.vectors import Resources
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from tests.unit.scheduling.builders import gang, make_node, make_pod, snapshot

GI = 2**30
A0, A1 = PodKey("default/a-worker-0"), PodKey("default/a-worker-1")
N1, N2 = NodeName("n1"), NodeName("n2")
QUEUE = QueueName("default")


def _state() -> SessionState:
    running = make_pod("a-worker-9", group="a").on("n1").obj()
    group, pods = gang("a", 2)
    return SessionState(
        snapshot([make_node("n1").obj(), make_node("n2").obj()], gangs=[(group, [*pods, running])])
    )


def test_allocate_books_node_queue_and_job_at_once() -> None:
    state = _state()
    statement = Statement(state)
    statement.allocate(A0, N1)
    statement.allocate(A1, N2)
    assert statement.allocated == (A0, A1)
    assert state.nodes[N1].used == Resources.of(2000, 2 * GI, 2)
    assert state.nodes[N2].used == Resources.of(1000, GI, 1)
    assert state.allocated_of(QUEUE) == Resources.of(3000, 3 * GI, 3)
    assert state.job_allocated[JobKey("default/a")] == Resources.of(3000, 3 * GI, 3)
    assert (state.tasks[A0].status, state.tasks[A0].node_name) == (TaskStatus.ALLOCATED, N1)


def test_discard_restores_every_book_exactly() -> None:
    state = _state()
    before = (dict(state.nodes), dict(state.tasks), dict(state.queue_allocated))
    statement = Statement(state)
    statement.allocate(A0, N1)
    statement.allocate(A1, N1)
    statement.discard()
    assert (state.nodes, state.tasks, state.queue_allocated) == before
    assert statement.allocated == ()
    assert state.discarded == {A0: N1, A1: N1}
    assert state.dispatched == []


def test_commit_dispatches_in_order() -> None:
    state = _state()
    statement = Statement(state)
    statement.allocate(A1, N2)
    statement.allocate(A0, N1)
    assert statement.commit() == (A1, A0)
    assert state.dispatched == [A1, A0]
    assert state.tasks[A0].status is TaskStatus.BINDING
    assert state.nodes[N1].used.pods == 2
    statement.discard()  # nothing left to undo
    assert state.tasks[A0].status is TaskStatus.BINDING


def test_commit_clears_an_earlier_discard_note() -> None:
    state = _state()
    first = Statement(state)
    first.allocate(A0, N2)
    first.discard()
    second = Statement(state)
    second.allocate(A0, N1)
    second.commit()
    assert state.discarded == {}


@pytest.mark.parametrize(
    "key", [A0, PodKey("default/a-worker-9")], ids=["pending", "running-before-session"]
)
def test_deallocate_refuses_a_task_this_session_did_not_allocate(key: PodKey) -> None:
    with pytest.raises(ValueError, match="cannot deallocate"):
        _state().deallocate(key)


@pytest.mark.parametrize(
    ("key", "node"),
    [
        pytest.param(PodKey("default/a-worker-9"), N1, id="running-task"),
        pytest.param(A0, NodeName("nowhere"), id="unknown-node"),
    ],
)
def test_allocate_refuses_what_cannot_be_placed(key: PodKey, node: NodeName) -> None:
    with pytest.raises(ValueError, match="cannot allocate"):
        Statement(_state()).allocate(key, node)


A9 = PodKey("default/a-worker-9")


def test_evict_and_pipeline_move_room_from_releasing_to_waiting() -> None:
    state = _state()
    statement = Statement(state)
    statement.evict(A9, EvictReason.RECLAIM, A0)
    assert state.tasks[A9].status is TaskStatus.RELEASING
    assert state.nodes[N1].releasing == Resources.of(1000, GI, 1)
    assert state.allocated_of(QUEUE) == Resources.of(0, 0, 0)  # the victim stops counting
    assert state.nodes[N1].future_idle.milli_cpu == 4000
    statement.pipeline(A0, N1)
    assert (state.tasks[A0].status, state.tasks[A0].node_name) == (TaskStatus.PIPELINED, N1)
    assert state.nodes[N1].future_idle.milli_cpu == 3000
    assert state.nodes[N1].idle.milli_cpu == 3000  # the victim still sits there
    assert state.allocated_of(QUEUE) == Resources.of(1000, GI, 1)  # the waiting task counts
    assert statement.evicted == (A9,)


def test_discard_after_evict_and_pipeline_restores_every_book() -> None:
    state = _state()
    before = (dict(state.nodes), dict(state.tasks), dict(state.queue_allocated))
    statement = Statement(state)
    statement.evict(A9, EvictReason.PREEMPT, A0)
    statement.pipeline(A0, N1)
    statement.allocate(A1, N2)
    statement.discard()
    assert (state.nodes, state.tasks, state.queue_allocated) == before
    assert state.evictions == []


def test_commit_turns_evictions_into_results_and_leaves_pipelined_tasks_waiting() -> None:
    state = _state()
    statement = Statement(state)
    statement.evict(A9, EvictReason.RECLAIM, A0)
    statement.pipeline(A0, N1)
    assert statement.commit() == ()  # nothing to bind yet
    (eviction,) = state.evictions
    assert (eviction.pod, eviction.node, eviction.reason) == (A9, N1, EvictReason.RECLAIM)
    assert eviction.message == f"Pod is evicted, because of reclaim by {A0} (queue default)"
    assert state.tasks[A0].status is TaskStatus.PIPELINED and state.dispatched == []


def test_merge_hands_a_trials_operations_to_the_job_statement() -> None:
    state = _state()
    job, trial = Statement(state), Statement(state)
    trial.evict(A9, EvictReason.RECLAIM, A0)
    trial.pipeline(A0, N1)
    job.merge(trial)
    trial.discard()  # empty now: changes nothing
    assert state.tasks[A9].status is TaskStatus.RELEASING
    job.discard()
    assert state.tasks[A9].status is TaskStatus.RUNNING


def test_evict_refuses_a_task_that_is_not_running() -> None:
    statement = Statement(_state())
    with pytest.raises(ValueError, match="cannot evict"):
        statement.evict(A0, EvictReason.RECLAIM, A1)  # pending: on no node
    statement.evict(A9, EvictReason.RECLAIM, A0)
    with pytest.raises(ValueError, match="cannot evict"):
        statement.evict(A9, EvictReason.RECLAIM, A1)  # already releasing
