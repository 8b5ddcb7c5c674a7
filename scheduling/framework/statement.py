"""A gang's transaction: place and evict tentatively, then keep all or none.

Each operation changes the session books at once, so the next task of the same gang sees the
room it took or freed: Allocate takes idle room, Pipeline waits on a node for room being
released, Evict turns a running victim into a releasing one. Commit keeps them in order
(allocations are dispatched for binding, evictions become results for the shell to carry out,
pipelined tasks stay in the session only, to be placed for real once the room is free);
Discard undoes them in reverse order, leaving node, queue and job books exactly as before.
This is what makes gang scheduling and eviction all-or-nothing: a job whose minMember cannot
be met never holds a node, and no pod is evicted for a gang that would still not fit.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from scheduling.api.result import Eviction, EvictReason
from scheduling.api.snapshot import NodeName, PodKey, TaskStatus
from scheduling.framework.state import SessionState


class Op(StrEnum):
    ALLOCATE = "Allocate"
    PIPELINE = "Pipeline"
    EVICT = "Evict"


@dataclass(frozen=True)
class _Entry:
    op: Op
    task: PodKey
    before: TaskStatus = TaskStatus.PENDING  # an evicted task's status, restored on discard
    eviction: Eviction | None = None  # None: not an eviction


class Statement:
    """One job's log of session operations; use once, then commit or discard."""

    def __init__(self, state: SessionState) -> None:
        self._state = state
        self._log: list[_Entry] = []

    @property
    def allocated(self) -> tuple[PodKey, ...]:
        return tuple(e.task for e in self._log if e.op is Op.ALLOCATE)

    @property
    def placed(self) -> tuple[PodKey, ...]:
        """Tasks given a node, to take at once or once its room is released."""
        return tuple(e.task for e in self._log if e.op in (Op.ALLOCATE, Op.PIPELINE))

    @property
    def evicted(self) -> tuple[PodKey, ...]:
        return tuple(e.task for e in self._log if e.op is Op.EVICT)

    def allocate(self, task: PodKey, node: NodeName) -> None:
        self._state.allocate(task, node)
        self._log.append(_Entry(Op.ALLOCATE, task))

    def pipeline(self, task: PodKey, node: NodeName) -> None:
        self._state.pipeline(task, node)
        self._log.append(_Entry(Op.PIPELINE, task))

    def evict(self, victim: PodKey, reason: EvictReason, preemptor: PodKey) -> None:
        """Turn a running victim into a releasing one, for `preemptor`'s sake."""
        eviction = _eviction(self._state, victim, reason, preemptor)
        before = self._state.evict(victim)
        self._log.append(_Entry(Op.EVICT, victim, before, eviction))

    def merge(self, other: Statement) -> None:
        """Take over `other`'s operations (a node's trial that worked out); `other` empties."""
        self._log.extend(other._log)
        other._log.clear()

    def commit(self) -> tuple[PodKey, ...]:
        """Keep every operation in the order it was made; returns the dispatched placements."""
        done = []
        for entry in self._log:
            if entry.op is Op.ALLOCATE:
                self._state.dispatch(entry.task)
                done.append(entry.task)
            elif entry.eviction is not None:
                self._state.evictions.append(entry.eviction)
        self._log.clear()
        return tuple(done)

    def discard(self) -> None:
        """Undo every operation, last first (the log walked in reverse)."""
        while self._log:
            entry = self._log.pop()
            if entry.op is Op.ALLOCATE:
                self._state.deallocate(entry.task)
            elif entry.op is Op.PIPELINE:
                self._state.unpipeline(entry.task)
            else:
                self._state.unevict(entry.task, entry.before)


def _eviction(
    state: SessionState, victim: PodKey, reason: EvictReason, preemptor: PodKey
) -> Eviction:
    """Volcano's "Pod is evicted, because of <reason>", naming who the room is for."""
    task = state.tasks[victim]
    if task.node_name is None:
        raise ValueError(f"task {victim}: cannot evict a task that is on no node")
    queue = state.jobs[state.tasks[preemptor].job].queue
    return Eviction(
        pod=victim,
        uid=task.uid,
        job=task.job,
        node=task.node_name,
        reason=reason,
        preemptor=preemptor,
        message=f"Pod is evicted, because of {reason} by {preemptor} (queue {queue})",
    )
