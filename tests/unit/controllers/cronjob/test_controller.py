"""The CronJob core by value: the schedule it keeps, which runs make a Job (concurrency,
deadline, superseded, already scheduled), history limits, status, deletion."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from controllers import effects as fx
from controllers.cronjob import controller, plan
from controllers.cronjob import effects as cj_fx
from controllers.cronjob.runs import Run
from controllers.cronjob.state import CronJobRecord
from models.signals import common as common_signals
from models.signals import cronjob as cronjob_signals
from tests.unit.controllers.cronjob.cronjobs import at, cron_job

RUN = "cronrun/ns/nightly-2026-12-02T06:05:00Z"


def _observed(state: CronJobRecord, now: datetime, **spec: Any) -> controller.Decision:
    return controller.decide(state, cronjob_signals.CronJobObserved(cron_job=cron_job(**spec)), now)


def _known(**spec: Any) -> CronJobRecord:
    return _observed(CronJobRecord(), at(6, 0), **spec).state


def _own(decision: controller.Decision, kind: type) -> list[Any]:
    return [e for e in decision.effects if isinstance(e, kind)]


def _due(state: CronJobRecord, scheduled: datetime, now: datetime) -> controller.Decision:
    return controller.decide(
        state, cronjob_signals.RunDue(workflow_id=RUN, scheduled=scheduled), now
    )


def _answer(decision: controller.Decision) -> cronjob_signals.RunAnswer:
    [answer] = _own(decision, cj_fx.AnswerRun)
    return answer.answer


def _running(state: CronJobRecord, name: str = "nightly-29936520") -> CronJobRecord:
    run = Run(name=name, uid=f"{name}-uid", workflow_id="cronrun/ns/old", phase="Running")
    return state.model_copy(update={"runs": {**state.runs, name: run}})


def test_first_sight_creates_the_schedule() -> None:
    decision = _observed(CronJobRecord(), at(6, 0), concurrencyPolicy="Replace")
    [apply] = _own(decision, cj_fx.ApplySchedule)
    assert apply.schedule_id == "cronjob/ns/nightly"
    assert apply.plan.overlap is plan.Overlap.CANCEL_OTHER and not apply.plan.paused
    assert apply.plan.calendars[0].minute == list(range(0, 60, 5))
    # Created at 00:00:30 the day before: the run of 06:00 (now) was missed; it is taken.
    [backfill] = _own(decision, cj_fx.BackfillSchedule)
    assert backfill.at == at(6, 0)


@pytest.mark.parametrize(
    ("policy", "overlap"),
    [
        ("Allow", plan.Overlap.ALLOW_ALL),
        ("Forbid", plan.Overlap.BUFFER_ALL),
        ("Replace", plan.Overlap.CANCEL_OTHER),
    ],
)
def test_concurrency_policy_maps_to_overlap(policy: str, overlap: plan.Overlap) -> None:
    [apply] = _own(
        _observed(CronJobRecord(), at(6, 0), concurrencyPolicy=policy), cj_fx.ApplySchedule
    )
    assert apply.plan.overlap is overlap


def test_deadline_is_the_catchup_window_at_least_temporals_minimum() -> None:
    [short] = _own(
        _observed(CronJobRecord(), at(6, 0), startingDeadlineSeconds=3), cj_fx.ApplySchedule
    )
    [long] = _own(
        _observed(CronJobRecord(), at(6, 0), startingDeadlineSeconds=600), cj_fx.ApplySchedule
    )
    assert (short.plan.catchup, long.plan.catchup) == (timedelta(seconds=10), timedelta(minutes=10))


def test_suspend_pauses_and_resuming_takes_the_most_recent_missed_run() -> None:
    state = _known()
    paused = _observed(state, at(6, 1), suspend=True)
    [apply] = _own(paused, cj_fx.ApplySchedule)
    assert apply.plan.paused and _own(paused, cj_fx.BackfillSchedule) == []
    resumed = _observed(paused.state, at(6, 31), suspend=False)
    [apply] = _own(resumed, cj_fx.ApplySchedule)
    [backfill] = _own(resumed, cj_fx.BackfillSchedule)
    assert not apply.plan.paused and backfill.at == at(6, 30)


def test_resuming_past_the_deadline_takes_nothing() -> None:
    state = _known(startingDeadlineSeconds=60)
    paused = _observed(state, at(6, 1), suspend=True, startingDeadlineSeconds=60)
    resumed = _observed(paused.state, at(6, 34), suspend=False, startingDeadlineSeconds=60)
    assert _own(resumed, cj_fx.BackfillSchedule) == []


def test_a_due_run_gets_its_job() -> None:
    decision = _due(_known(), at(6, 5), at(6, 5, 1))
    job = _answer(decision).job
    assert job is not None and job.metadata.name == "nightly-29936525"
    assert decision.state.last_schedule_time == at(6, 5)


@pytest.mark.parametrize(
    ("scheduled", "now", "spec", "reason"),
    [
        pytest.param(at(6, 5), at(6, 11), {}, "a later time is due", id="superseded"),
        pytest.param(
            at(6, 5), at(6, 6), {"startingDeadlineSeconds": 60}, "deadline", id="too-late"
        ),
        pytest.param(at(6, 5), at(6, 5, 59), {"startingDeadlineSeconds": 60}, "", id="in-time"),
        pytest.param(at(6, 5), at(6, 5, 1), {"suspend": True}, "suspended", id="suspended"),
    ],
)
def test_due_checks(scheduled: datetime, now: datetime, spec: dict[str, Any], reason: str) -> None:
    answer = _answer(_due(_known(**spec), scheduled, now))
    assert (answer.job is None) == bool(reason) and reason in answer.reason


def test_a_time_scheduled_already_makes_no_second_job() -> None:
    first = _due(_known(), at(6, 5), at(6, 5, 1))
    again = _due(first.state, at(6, 5), at(6, 5, 2))
    assert "scheduled already" in _answer(again).reason


def test_forbid_refuses_while_a_job_runs() -> None:
    decision = _due(_running(_known(concurrencyPolicy="Forbid")), at(6, 5), at(6, 5, 1))
    assert _answer(decision).job is None
    assert [e.reason for e in _own(decision, fx.RecordEvent)] == ["ForbidConcurrent"]


def test_replace_deletes_the_active_job_then_makes_the_new_one() -> None:
    decision = _due(_running(_known(concurrencyPolicy="Replace")), at(6, 5), at(6, 5, 1))
    [delete] = _own(decision, fx.DeleteJob)
    assert (delete.name, delete.uid) == ("nightly-29936520", "nightly-29936520-uid")
    assert _answer(decision).job is not None


def test_allow_makes_a_second_job_beside_the_running_one() -> None:
    decision = _due(_running(_known()), at(6, 5), at(6, 5, 1))
    assert _answer(decision).job is not None and _own(decision, fx.DeleteJob) == []


def _created(state: CronJobRecord, name: str, created: datetime) -> CronJobRecord:
    made = cronjob_signals.RunCreated(
        workflow_id=f"cronrun/ns/{name}",
        name=name,
        uid=f"{name}-uid",
        resource_version="7",
        created=created,
    )
    return controller.decide(state, made, created).state


def test_created_job_is_active_in_status() -> None:
    admitted = _due(_known(), at(6, 5), at(6, 5, 1)).state
    made = cronjob_signals.RunCreated(
        workflow_id=RUN, name="nightly-29936525", uid="u1", resource_version="7"
    )
    decision = controller.decide(admitted, made, at(6, 5, 2))
    [write] = _own(decision, cj_fx.WriteCronJobStatus)
    [ref] = write.status.active or []
    assert (ref.name, ref.uid, ref.kind, ref.resource_version) == (
        "nightly-29936525",
        "u1",
        "Job",
        "7",
    )
    assert write.status.last_schedule_time == at(6, 5)


def _phase(state: CronJobRecord, name: str, phase: str, when: datetime) -> controller.Decision:
    job = cronjob_signals.CronJobRun(
        name=name, uid=f"{name}-uid", phase=phase, created=None, finished_at=when
    )
    return controller.decide(state, cronjob_signals.CronJobRunChanged(job=job), when)


def test_finished_job_leaves_active_tells_its_run_and_sets_last_successful_time() -> None:
    state = _created(_known(), "nightly-1", at(6, 0))
    decision = _phase(state, "nightly-1", "Completed", at(6, 3))
    [tell] = _own(decision, cj_fx.TellRun)
    [write] = _own(decision, cj_fx.WriteCronJobStatus)
    assert (tell.workflow_id, tell.phase) == ("cronrun/ns/nightly-1", "Completed")
    assert write.status.active is None and write.status.last_successful_time == at(6, 3)


@pytest.mark.parametrize(
    ("phase", "limits", "deleted"),
    [
        pytest.param(
            "Completed", {"successfulJobsHistoryLimit": 2}, ["nightly-1"], id="successful"
        ),
        pytest.param("Failed", {"failedJobsHistoryLimit": 1}, ["nightly-2"], id="failed"),
        pytest.param("Failed", {}, ["nightly-2"], id="failed-default-one"),
        pytest.param("Completed", {}, [], id="successful-default-three"),
        pytest.param(
            "Terminated", {"failedJobsHistoryLimit": 0}, [], id="terminated-counts-nowhere"
        ),
    ],
)
def test_history_limits_delete_oldest_first(
    phase: str, limits: dict[str, Any], deleted: list[str]
) -> None:
    state = _known(**limits)
    for i in (1, 2, 3):
        state = _created(state, f"nightly-{i}", at(6, i))
    for i in (2, 1):  # finishing out of order: creation time decides
        state = _phase(state, f"nightly-{i}", phase, at(6, 10 + i)).state
    decision = _phase(state, "nightly-3", phase, at(6, 20))
    assert [e.name for e in _own(decision, fx.DeleteJob)] == deleted


def test_deleting_the_cronjob_deletes_the_schedule_and_ends_runs() -> None:
    state = _created(_known(), "nightly-1", at(6, 0))
    decision = controller.decide(state, common_signals.JobDeleted(uid="cj-uid"), at(6, 1))
    kinds = [type(e) for e in decision.effects]
    assert kinds == [cj_fx.DeleteSchedule, cj_fx.TellRun, fx.Finish]
    assert (
        controller.decide(
            decision.state, cronjob_signals.RunDue(workflow_id=RUN, scheduled=at(6, 5)), at(6, 5)
        ).effects
        == ()
    )


def test_a_replaced_run_that_deleted_its_job_leaves_active() -> None:
    state = _created(_known(), "nightly-1", at(6, 0))
    decision = controller.decide(
        state,
        cronjob_signals.RunEnded(workflow_id="cronrun/ns/nightly-1", name="nightly-1"),
        at(6, 1),
    )
    [write] = _own(decision, cj_fx.WriteCronJobStatus)
    assert write.status.active is None


def test_an_unparseable_schedule_pauses_the_schedule() -> None:
    decision = _observed(_known(), at(6, 1), schedule="61 * * * *")
    [apply] = _own(decision, cj_fx.ApplySchedule)
    assert apply.plan.paused
    assert [e.reason for e in _own(decision, fx.RecordEvent)] == ["InvalidSchedule"]
