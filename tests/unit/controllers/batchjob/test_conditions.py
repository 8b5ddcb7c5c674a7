"""Conditions as the controller writes them: whole seconds, ensure, Suspended."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from controllers import effects as fx
from controllers.batchjob import conditions
from models.batchv1 import BatchJobStatus, Reason
from tests.unit.controllers.batchjob.records import T0, at


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(T0, T0, id="whole-second"),
        pytest.param(T0 + timedelta(milliseconds=1), at(1), id="just-after"),
        pytest.param(T0 + timedelta(milliseconds=999), at(1), id="almost-next"),
    ],
)
def test_next_second(given: datetime, expected: datetime) -> None:
    assert conditions.next_second(given) == expected


def test_ensure_updates_appends_or_leaves_alone() -> None:
    first = conditions.new("Suspended", "JobSuspended", "Job suspended", T0)
    same, changed = conditions.ensure(
        [first], "Suspended", "True", "JobSuspended", "Job suspended", at(5)
    )
    assert (same, changed) == ([first], False)
    flipped, changed = conditions.ensure(
        [first], "Suspended", "False", "JobResumed", "Job resumed", at(5)
    )
    assert changed and flipped == [
        conditions.new("Suspended", "JobResumed", "Job resumed", at(5), "False")
    ]
    assert conditions.ensure([], "Suspended", "False", "JobResumed", "m", T0) == ([], False)


def test_suspending_clears_the_start_time() -> None:
    status, events = conditions.suspension(BatchJobStatus(start_time=T0), True, at(5))
    assert status == BatchJobStatus(
        conditions=[conditions.new("Suspended", Reason.JOB_SUSPENDED, "Job suspended", at(5))]
    )
    assert events == (fx.RecordEvent(reason="Suspended", message="Job suspended"),)


def test_resuming_restarts_the_clock() -> None:
    suspended = conditions.new("Suspended", Reason.JOB_SUSPENDED, "Job suspended", T0)
    status, events = conditions.suspension(BatchJobStatus(conditions=[suspended]), False, at(9))
    assert status.start_time == at(9)
    assert [(c.status, c.reason) for c in status.conditions or []] == [("False", "JobResumed")]
    assert events == (fx.RecordEvent(reason="Resumed", message="Job resumed"),)


def test_never_suspended_says_nothing() -> None:
    status = BatchJobStatus(start_time=T0)
    assert conditions.suspension(status, False, at(9)) == (status, ())
