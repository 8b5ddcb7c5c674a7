"""The JobFlow's phase machine: one action (a sync), a rule per phase. Pure.

Volcano's flow states: Pending and Running sync and move on the counts of the flow's Jobs,
Succeed syncs without moving, Failed and Terminating do nothing at all (not even a status
write). Volcano moves one step per sync and syncs again on the next write of any of the
flow's Jobs; Caldera hears only their phase changes, so `settle` takes every step the counts
allow at once (Pending → Running → Succeed when the only Job went straight to Completed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from models.jobflow import FlowPhase, JobFlowStatus


@dataclass(frozen=True)
class Counts:
    running: int
    completed: int
    failed: int
    terminated: int
    entries: int  # the flow's entries, every one of which must complete


def counts(status: JobFlowStatus, entries: int) -> Counts:
    return Counts(
        running=len(status.running_jobs or ()),
        completed=len(status.completed_jobs or ()),
        failed=len(status.failed_jobs or ()),
        terminated=len(status.terminated_jobs or ()),
        entries=entries,
    )


def _pending(c: Counts) -> FlowPhase:
    if (c.running > 0 or c.completed > 0) and c.failed <= 0:
        return FlowPhase.RUNNING
    if c.failed > 0 or c.terminated > 0:
        return FlowPhase.FAILED
    return FlowPhase.PENDING


def _running(c: Counts) -> FlowPhase:
    if c.completed == c.entries:
        return FlowPhase.SUCCEED
    if c.failed > 0 or c.terminated > 0:
        return FlowPhase.FAILED
    return FlowPhase.RUNNING


def _stays(phase: FlowPhase) -> Callable[[Counts], FlowPhase]:
    return lambda c: phase


Rule = Callable[[Counts], FlowPhase]
# Phases that sync (deploy Jobs, write status), with where their counts lead.
TRANSITIONS: Final[Mapping[FlowPhase, Rule]] = {
    FlowPhase.PENDING: _pending,
    FlowPhase.RUNNING: _running,
    FlowPhase.SUCCEED: _stays(FlowPhase.SUCCEED),
}
# Phases that do nothing on a sync: no Job is made and no status is written.
IGNORED: Final = frozenset({FlowPhase.FAILED, FlowPhase.TERMINATING})


def syncs(phase: FlowPhase) -> bool:
    return phase in TRANSITIONS


def settle(phase: FlowPhase, c: Counts) -> FlowPhase:
    """Step until the rule of the phase reached keeps it (or it is one that does not sync)."""
    for _ in range(len(FlowPhase)):
        rule = TRANSITIONS.get(phase)
        following = rule(c) if rule is not None else phase
        if following == phase:
            return phase
        phase = following
    return phase
