"""A gang's transaction (spec C8.3): place tasks tentatively, then keep all or none.

Allocate moves a task onto a node in the session books at once, so the next task of the same
gang sees the room it took; Commit dispatches every recorded placement in order; Discard
undoes them in reverse order, leaving node, queue and job books exactly as before. This is what
makes gang scheduling all-or-nothing: a job whose minMember cannot be met never holds a node.
Only Allocate is recorded: Caldera does not pipeline or evict yet (no preempt/reclaim).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from scheduling.snapshot import NodeName, PodKey
from scheduling.state import SessionState


class Statement:
    """One job's log of session allocations; use once, then commit or discard."""

    def __init__(self, state: SessionState) -> None:
        self._state = state
        self._allocated: list[PodKey] = []

    @property
    def allocated(self) -> tuple[PodKey, ...]:
        return tuple(self._allocated)

    def allocate(self, task: PodKey, node: NodeName) -> None:
        self._state.allocate(task, node)
        self._allocated.append(task)

    def commit(self) -> tuple[PodKey, ...]:
        """Dispatch every placement in the order it was made; returns them."""
        done = tuple(self._allocated)
        for task in done:
            self._state.dispatch(task)
        self._allocated.clear()
        return done

    def discard(self) -> None:
        """Undo every placement, last first (the log walked in reverse)."""
        while self._allocated:
            self._state.deallocate(self._allocated.pop())
