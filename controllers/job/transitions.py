"""Volcano's job state machine as data: (phase, action) → Rule.

One row per cell of Volcano's `pkg/controllers/job/state/*.go`, shared arms declared once.
The controller interprets a Rule (kill or sync, what to retain, which status function);
nothing here performs I/O. Every (phase, action) cell over JOB_ACTIONS is filled: there is no
fallback default, and a test walks the whole product.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

from models.bus import Action
from models.vcjob import JobPhase


class Operation(StrEnum):
    KILL_JOB = "KillJob"  # every pod, version bumped, PodGroup deleted
    KILL_TARGET = "KillTarget"  # the event's task, pod or partition only
    SYNC = "SyncJob"  # reconcile pods with the spec


class Retain(StrEnum):
    NONE = "None"  # delete every pod
    SOFT = "Soft"  # keep Succeeded and Failed pods


class StatusFn(StrEnum):
    TO = "to"  # set `target` unconditionally
    PENDING = "pending"  # f_pending: gang formed → Running
    RUNNING = "running"  # f_running: finished / lost gang
    RESTARTING = "restarting"  # f_restarting: maxRetry reached → Failed, pods back → Pending
    DRAIN = "drain"  # f_drain: nothing alive → `target`
    KEEP = "keep"  # no phase change


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    operation: Operation
    retain: Retain = Retain.NONE
    status: StatusFn
    target: JobPhase | None = None  # None: the status function decides the phase
    retry: bool = False  # retryCount += 1


JOB_ACTIONS: Final = (
    Action.ABORT_JOB,
    Action.RESTART_JOB,
    Action.RESTART_TASK,
    Action.RESTART_POD,
    Action.RESTART_PARTITION,
    Action.TERMINATE_JOB,
    Action.COMPLETE_JOB,
    Action.RESUME_JOB,
    Action.SYNC_JOB,
    Action.ENQUEUE_JOB,
)
TARGETED: Final = (Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION)

_RESTART = Rule(
    operation=Operation.KILL_JOB, status=StatusFn.TO, target=JobPhase.RESTARTING, retry=True
)
_RESTART_TARGET = Rule(
    operation=Operation.KILL_TARGET, status=StatusFn.TO, target=JobPhase.RESTARTING, retry=True
)
_RESUME = Rule(
    operation=Operation.KILL_JOB,
    retain=Retain.SOFT,
    status=StatusFn.TO,
    target=JobPhase.RESTARTING,
    retry=True,
)


def _soft_kill_to(phase: JobPhase) -> Rule:
    return Rule(operation=Operation.KILL_JOB, retain=Retain.SOFT, status=StatusFn.TO, target=phase)


def _drain_to(phase: JobPhase) -> Rule:
    return Rule(
        operation=Operation.KILL_JOB, retain=Retain.SOFT, status=StatusFn.DRAIN, target=phase
    )


_SOFT_KILL_KEEP = Rule(operation=Operation.KILL_JOB, retain=Retain.SOFT, status=StatusFn.KEEP)


def _live_phase(sync: StatusFn) -> dict[Action, Rule]:
    """Pending and Running share every arm but the sync status function."""
    rules = {a: Rule(operation=Operation.SYNC, status=sync) for a in JOB_ACTIONS}
    rules[Action.RESTART_JOB] = _RESTART
    rules.update({a: _RESTART_TARGET for a in TARGETED})
    rules[Action.ABORT_JOB] = _soft_kill_to(JobPhase.ABORTING)
    rules[Action.COMPLETE_JOB] = _soft_kill_to(JobPhase.COMPLETING)
    rules[Action.TERMINATE_JOB] = _soft_kill_to(JobPhase.TERMINATING)
    return rules


def _restarting() -> dict[Action, Rule]:
    # Abort/Terminate/Complete/Resume while restarting are a kill that keeps restarting.
    rules = {a: Rule(operation=Operation.KILL_JOB, status=StatusFn.RESTARTING) for a in JOB_ACTIONS}
    rules[Action.SYNC_JOB] = Rule(operation=Operation.SYNC, status=StatusFn.RESTARTING)
    rules.update(
        {a: Rule(operation=Operation.KILL_TARGET, status=StatusFn.RESTARTING) for a in TARGETED}
    )
    return rules


def _every(rule: Rule, **overrides: Rule) -> dict[Action, Rule]:
    rules = dict.fromkeys(JOB_ACTIONS, rule)
    rules.update({Action(k): v for k, v in overrides.items()})
    return rules


_BY_PHASE: Final[dict[JobPhase, dict[Action, Rule]]] = {
    JobPhase.PENDING: _live_phase(StatusFn.PENDING),
    JobPhase.RUNNING: _live_phase(StatusFn.RUNNING),
    JobPhase.RESTARTING: _restarting(),
    JobPhase.ABORTING: _every(_drain_to(JobPhase.ABORTED), ResumeJob=_RESUME),
    JobPhase.ABORTED: _every(_SOFT_KILL_KEEP, ResumeJob=_RESUME),
    JobPhase.COMPLETING: _every(_drain_to(JobPhase.COMPLETED)),
    JobPhase.TERMINATING: _every(_drain_to(JobPhase.TERMINATED)),
    JobPhase.COMPLETED: _every(_SOFT_KILL_KEEP),
    JobPhase.FAILED: _every(_SOFT_KILL_KEEP),
    JobPhase.TERMINATED: _every(_SOFT_KILL_KEEP),
}

TRANSITIONS: Final[Mapping[tuple[JobPhase, Action], Rule]] = {
    (phase, action): rule for phase, rules in _BY_PHASE.items() for action, rule in rules.items()
}
FINISHED: Final = frozenset({JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED})


def rule_for(phase: JobPhase | None, action: Action) -> Rule:
    """The cell for this phase and action; a never-initiated job ("") behaves as Pending."""
    return TRANSITIONS[(phase or JobPhase.PENDING, action)]


def finished(phase: JobPhase | None) -> bool:
    return phase in FINISHED
