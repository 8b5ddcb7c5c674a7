"""The JobFlow phase table: every phase either syncs with a rule or is ignored, and the rules
move as Volcano's pending and running states do."""

from __future__ import annotations

import pytest

from controllers.jobflow import states
from models.jobflow import FlowPhase

pytestmark = pytest.mark.unit
P = FlowPhase


def test_every_phase_has_a_rule_or_is_ignored() -> None:
    for phase in FlowPhase:
        assert (phase in states.TRANSITIONS) != (phase in states.IGNORED), phase


def _c(running: int = 0, completed: int = 0, failed: int = 0, terminated: int = 0) -> states.Counts:
    return states.Counts(running, completed, failed, terminated, entries=2)


CASES = [
    pytest.param(P.PENDING, _c(), P.PENDING, id="pending-nothing-started"),
    pytest.param(P.PENDING, _c(running=1), P.RUNNING, id="pending-running"),
    pytest.param(P.PENDING, _c(completed=1), P.RUNNING, id="pending-one-completed"),
    pytest.param(P.PENDING, _c(completed=2), P.SUCCEED, id="pending-all-completed-settles"),
    pytest.param(P.PENDING, _c(running=1, failed=1), P.FAILED, id="pending-failed"),
    pytest.param(P.PENDING, _c(terminated=1), P.FAILED, id="pending-terminated"),
    pytest.param(
        P.PENDING, _c(completed=1, terminated=1), P.FAILED, id="pending-via-running-terminated"
    ),
    pytest.param(P.RUNNING, _c(running=1, completed=1), P.RUNNING, id="running-not-done"),
    pytest.param(P.RUNNING, _c(completed=2), P.SUCCEED, id="running-all-completed"),
    pytest.param(P.RUNNING, _c(failed=1), P.FAILED, id="running-failed"),
    pytest.param(P.RUNNING, _c(), P.RUNNING, id="running-no-jobs-listed"),
    pytest.param(P.SUCCEED, _c(failed=2), P.SUCCEED, id="succeed-stays"),
    pytest.param(P.FAILED, _c(completed=2), P.FAILED, id="failed-stays"),
    pytest.param(P.TERMINATING, _c(completed=2), P.TERMINATING, id="terminating-stays"),
]


@pytest.mark.parametrize(("phase", "counts", "settled"), CASES)
def test_settle(phase: FlowPhase, counts: states.Counts, settled: FlowPhase) -> None:
    assert states.settle(phase, counts) == settled
