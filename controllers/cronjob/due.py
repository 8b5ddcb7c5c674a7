"""Whether a scheduled run makes its Job: the checks Volcano's sync makes before it creates one.
Pure.

Temporal starts a run for every nominal time the schedule reaches (late ones too, after an
outage or behind a run that held it back); Volcano creates a Job only for the most recent
unmet time, and none if that is older than startingDeadlineSeconds. So each run asks, and is
refused when: the CronJob is gone or suspended; its time was handled already (not after
lastScheduleTime, or its Job name is taken); it is `deadline` or more late; a later nominal
time has passed too (that run makes the Job instead); or, under Forbid, a Job is still active.
Under Replace the active Jobs are deleted before the new one is made (Temporal has cancelled
their runs already; this covers Jobs no run follows).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from controllers import effects as fx
from controllers.cronjob import cron, plan, runs
from controllers.cronjob import effects as cj_fx
from controllers.cronjob.state import CronJobRecord
from models.cronjob import ConcurrencyPolicy, CronJob
from models.signals import cronjob as cronjob_signals

Effects = list[cj_fx.AnyEffect]


def active(state: CronJobRecord) -> list[runs.Run]:
    """status.active: Jobs made and not finished, not being deleted."""
    return [r for r in state.runs.values() if r.uid and not r.finished and not r.deleting]


def parsed(cj: CronJob) -> tuple[cron.Cron, ZoneInfo] | str:
    """The schedule and its zone; or why they cannot be used."""
    try:
        schedule = cron.parse(cj.spec.schedule)
    except cron.CronError as e:
        return f"unparseable schedule {cj.spec.schedule!r}: {e}"
    zone = cron.load_zone(plan.zone_name(cj, schedule))
    if zone is None:
        return f"invalid time zone {plan.zone_name(cj, schedule)!r}"
    return schedule, zone


def missed(state: CronJobRecord, cj: CronJob, now: datetime) -> datetime | None:
    """The most recent nominal time since the last one scheduled (or the CronJob's creation),
    within the starting deadline; None: none."""
    found = parsed(cj)
    if isinstance(found, str):
        return None
    schedule, zone = found
    earliest = state.last_schedule_time or plan.origin(cj)
    deadline = cj.spec.starting_deadline_seconds
    if deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=deadline))
    return cron.most_recent(schedule, earliest, now, zone, plan.origin(cj))


def refusal(state: CronJobRecord, due: cronjob_signals.RunDue, now: datetime) -> str:
    """Why the run makes no Job; "" when it does (Forbid's refusal aside)."""
    cj = state.cron_job
    if cj is None or state.deleted:
        return "the CronJob is gone"
    found = parsed(cj)
    if isinstance(found, str):
        return found
    schedule, zone = found
    if cj.spec.suspended:
        return "the CronJob is suspended"
    last = state.last_schedule_time
    name = runs.job_name(state.name, due.scheduled)
    if (last is not None and due.scheduled <= last) or name in state.runs:
        return f"the time {due.scheduled.isoformat()} was scheduled already"
    deadline = cj.spec.starting_deadline_seconds
    if deadline is not None and now - due.scheduled >= timedelta(seconds=deadline):
        return f"missed its starting deadline of {deadline}s"
    later = cron.next_after(schedule, due.scheduled, zone, plan.origin(cj))
    if later is not None and later <= now:
        return f"a later time is due: {later.isoformat()}"
    return ""


def decide_due(
    state: CronJobRecord, due: cronjob_signals.RunDue, now: datetime
) -> tuple[CronJobRecord, Effects]:
    why = refusal(state, due, now)
    cj = state.cron_job
    effects: Effects = []
    running = active(state)
    if not why and cj is not None and running:
        if cj.spec.concurrency_policy is ConcurrencyPolicy.FORBID:
            why = "another Job is still running (Forbid)"
            effects.append(event("ForbidConcurrent", why, warning=True))
        elif cj.spec.concurrency_policy is ConcurrencyPolicy.REPLACE:
            effects.append(event("ReplaceConcurrent", "Replacing active job", warning=True))
            state, deletes = delete_runs(state, running)
            effects += deletes
    if why or cj is None:
        answer = cronjob_signals.RunAnswer(reason=why)
        return state, [*effects, cj_fx.AnswerRun(workflow_id=due.workflow_id, answer=answer)]
    job = runs.job_for(cj, due.scheduled)
    name = job.metadata.name or ""
    run = runs.Run(name=name, scheduled=due.scheduled, workflow_id=due.workflow_id)
    state = state.model_copy(
        update={"runs": {**state.runs, name: run}, "last_schedule_time": due.scheduled}
    )
    answer = cronjob_signals.RunAnswer(job=job, reason="due")
    return state, [*effects, cj_fx.AnswerRun(workflow_id=due.workflow_id, answer=answer)]


def delete_runs(state: CronJobRecord, going: list[runs.Run]) -> tuple[CronJobRecord, Effects]:
    """deleteJobByClient: delete each Job and take it off the active list at once."""
    effects: Effects = []
    updated = dict(state.runs)
    for run in going:
        updated[run.name] = run.model_copy(update={"deleting": True})
        effects.append(fx.DeleteJob(namespace=state.namespace, name=run.name, uid=run.uid))
        effects.append(event("SuccessfulDelete", f'Deleted job "{run.name}"'))
    return state.model_copy(update={"runs": updated}), effects


def event(reason: str, message: str, warning: bool = False) -> fx.RecordEvent:
    return fx.RecordEvent(type="Warning" if warning else "Normal", reason=reason, message=message)
