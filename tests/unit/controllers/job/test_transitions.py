"""Every (phase, action) cell of Volcano's job state machine, by value."""

from __future__ import annotations

import itertools

import pytest

from controllers.job.transitions import (
    JOB_ACTIONS,
    TRANSITIONS,
    Operation,
    Retain,
    Rule,
    StatusFn,
    rule_for,
)
from models.bus import Action
from models.vcjob import JobPhase

P, A = JobPhase, Action
KILL_NONE_TO = lambda p, retry=False: Rule(  # noqa: E731
    operation=Operation.KILL_JOB, status=StatusFn.TO, target=p, retry=retry
)
SOFT_TO = lambda p: Rule(  # noqa: E731
    operation=Operation.KILL_JOB, retain=Retain.SOFT, status=StatusFn.TO, target=p
)
SOFT_DRAIN = lambda p: Rule(  # noqa: E731
    operation=Operation.KILL_JOB, retain=Retain.SOFT, status=StatusFn.DRAIN, target=p
)
SOFT_KEEP = Rule(operation=Operation.KILL_JOB, retain=Retain.SOFT, status=StatusFn.KEEP)
TARGET_RESTART = Rule(
    operation=Operation.KILL_TARGET, status=StatusFn.TO, target=P.RESTARTING, retry=True
)
RESUME = Rule(
    operation=Operation.KILL_JOB,
    retain=Retain.SOFT,
    status=StatusFn.TO,
    target=P.RESTARTING,
    retry=True,
)
TARGETED = (A.RESTART_TASK, A.RESTART_POD, A.RESTART_PARTITION)
OTHERS = (A.SYNC_JOB, A.RESUME_JOB, A.ENQUEUE_JOB)


def _live(phase: JobPhase, sync: StatusFn) -> list[object]:
    cases = [
        pytest.param(
            phase, A.RESTART_JOB, KILL_NONE_TO(P.RESTARTING, True), id=f"{phase}-RestartJob"
        ),
        pytest.param(phase, A.ABORT_JOB, SOFT_TO(P.ABORTING), id=f"{phase}-AbortJob"),
        pytest.param(phase, A.COMPLETE_JOB, SOFT_TO(P.COMPLETING), id=f"{phase}-CompleteJob"),
        pytest.param(phase, A.TERMINATE_JOB, SOFT_TO(P.TERMINATING), id=f"{phase}-TerminateJob"),
    ]
    cases += [pytest.param(phase, a, TARGET_RESTART, id=f"{phase}-{a}") for a in TARGETED]
    cases += [
        pytest.param(phase, a, Rule(operation=Operation.SYNC, status=sync), id=f"{phase}-{a}")
        for a in OTHERS
    ]
    return cases


def _restarting() -> list[object]:
    phase = P.RESTARTING
    cases = [
        pytest.param(
            phase,
            A.SYNC_JOB,
            Rule(operation=Operation.SYNC, status=StatusFn.RESTARTING),
            id="Restarting-SyncJob",
        )
    ]
    cases += [
        pytest.param(
            phase,
            a,
            Rule(operation=Operation.KILL_TARGET, status=StatusFn.RESTARTING),
            id=f"Restarting-{a}",
        )
        for a in TARGETED
    ]
    rest = [a for a in JOB_ACTIONS if a not in TARGETED and a != A.SYNC_JOB]
    cases += [
        pytest.param(
            phase,
            a,
            Rule(operation=Operation.KILL_JOB, status=StatusFn.RESTARTING),
            id=f"Restarting-{a}",
        )
        for a in rest
    ]
    return cases


def _all(phase: JobPhase, rule: Rule, resume: Rule | None = None) -> list[object]:
    return [
        pytest.param(
            phase, a, resume if (resume and a == A.RESUME_JOB) else rule, id=f"{phase}-{a}"
        )
        for a in JOB_ACTIONS
    ]


CELLS = [
    *_live(P.PENDING, StatusFn.PENDING),
    *_live(P.RUNNING, StatusFn.RUNNING),
    *_restarting(),
    *_all(P.ABORTING, SOFT_DRAIN(P.ABORTED), resume=RESUME),
    *_all(P.ABORTED, SOFT_KEEP, resume=RESUME),
    *_all(P.COMPLETING, SOFT_DRAIN(P.COMPLETED)),
    *_all(P.TERMINATING, SOFT_DRAIN(P.TERMINATED)),
    *_all(P.COMPLETED, SOFT_KEEP),
    *_all(P.FAILED, SOFT_KEEP),
    *_all(P.TERMINATED, SOFT_KEEP),
]


@pytest.mark.parametrize(("phase", "action", "rule"), CELLS)
def test_cell(phase: JobPhase, action: Action, rule: Rule) -> None:
    assert TRANSITIONS[(phase, action)] == rule


def test_every_cell_is_filled_and_tested() -> None:
    product = set(itertools.product(JobPhase, JOB_ACTIONS))
    assert set(TRANSITIONS) == product
    tested = {(c.values[0], c.values[1]) for c in CELLS}  # type: ignore[attr-defined]
    assert tested == product


def test_never_initiated_job_behaves_as_pending() -> None:
    assert rule_for(None, A.ABORT_JOB) == TRANSITIONS[(P.PENDING, A.ABORT_JOB)]
