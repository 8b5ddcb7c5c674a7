"""The soak's history invariants on hand-made runs: each breaks on the case it names."""

from __future__ import annotations

from datetime import datetime, timedelta

from bench.chaos import invariants
from bench.chaos.histories import Run, Timer

NOW = datetime(2026, 1, 1)


def _run(open_: bool = True, **fields: object) -> Run:
    return Run(
        workflow_id="vcjob/ns/a", run_id="r", workflow_type="JobWorkflow", open=open_, **fields
    )  # type: ignore[arg-type]


def test_an_activity_still_retrying_once_every_job_ended_is_a_violation() -> None:
    assert invariants.activities_settled([_run()]) == []
    (v,) = invariants.activities_settled([_run(retrying=["create_pods attempt 7: 500"])])
    assert v.invariant == "activity retrying" and "attempt 7" in v.detail


def test_a_timer_neither_fired_nor_cancelled_is_lost_in_a_closed_run_or_overdue() -> None:
    pending = Timer(id="1", summary="restart job", fires_at=NOW + timedelta(seconds=60))
    assert invariants.timers_kept([_run(timers=[pending])], now=NOW) == []
    assert invariants.timers_kept([_run(open_=False, timers=[pending])], now=NOW)
    late = NOW + timedelta(seconds=120)
    (v,) = invariants.timers_kept([_run(timers=[pending])], now=late)
    assert "overdue" in v.detail
    fired = Timer(id="2", summary="ttl", fires_at=NOW, fired=True)
    assert invariants.timers_kept([_run(open_=False, timers=[fired])], now=late) == []


def test_a_failed_workflow_task_is_a_violation() -> None:
    (v,) = invariants.tasks_clean([_run(task_failures=["NON_DETERMINISTIC_ERROR: boom"])])
    assert "NON_DETERMINISTIC_ERROR" in v.detail
