"""The CronJob controller's decisions for one CronJob. Pure.

Inputs: the CronJob observed or deleted (forwarder); its Jobs' phase changes and deletions
(forwarder); a scheduled run asking whether it is due, reporting the Job it made, or ending
early (CronRunWorkflow). Effects: keep the Temporal Schedule in step with the spec (and take a
run missed while it was suspended or before the schedule existed, as Volcano would on its next
sync); answer the runs; tell a run its Job finished; delete finished Jobs beyond the history
limits; write status (active, lastScheduleTime, lastSuccessfulTime) whenever it changes.
Deleting the CronJob deletes the schedule, ends its runs and the workflow; its Jobs go by
garbage collection, as they are owned by it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.cronjob import due, plan, runs
from controllers.cronjob import effects as cj_fx
from controllers.cronjob.due import Effects, event
from controllers.cronjob.state import CronJobRecord
from controllers.outcomes import ActionFailed, AnyOutcome, BindOutcome, PodsAbsent, TimerFired
from models import cronjob, keys, vcjob
from models.signals import common as common_signals
from models.signals import cronjob as cronjob_signals

DELETED: Final = "Deleted"
GONE: Final = "CronJobDeleted"

Input = (
    cronjob_signals.CronJobObserved
    | common_signals.JobDeleted
    | cronjob_signals.CronJobRunChanged
    | cronjob_signals.RunDue
    | cronjob_signals.RunCreated
    | cronjob_signals.RunEnded
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: CronJobRecord
    effects: tuple[cj_fx.AnyEffect, ...] = ()


def decide(state: CronJobRecord, item: Input | AnyOutcome, now: datetime) -> Decision:
    if state.deleted:
        return Decision(state=state)
    effects: Effects
    match item:
        case cronjob_signals.CronJobObserved():
            after, effects = _observed(state, item.cron_job, now)
        case common_signals.JobDeleted():
            after, effects = _deleted(state) if _is_ours(state, item.uid) else (state, [])
        case cronjob_signals.CronJobRunChanged():
            after, effects = _run_changed(state, item.job)
        case cronjob_signals.RunDue():
            after, effects = due.decide_due(state, item, now)
        case cronjob_signals.RunCreated():
            after, effects = _created(state, item)
        case cronjob_signals.RunEnded():
            after, effects = _ended(state, item)
        case ActionFailed():
            after, effects = _failed(state, item)
        case TimerFired() | BindOutcome() | PodsAbsent():
            after, effects = state, []  # no timers, pods or bindings of its own
    if not after.deleted and status(after) != status(state) and after.cron_job is not None:
        write = cj_fx.WriteCronJobStatus(
            namespace=after.namespace, name=after.name, status=status(after)
        )
        effects = [*effects, write]
    return Decision(state=after, effects=tuple(effects))


def status(state: CronJobRecord) -> cronjob.CronJobStatus:
    refs = [
        cronjob.ObjectReference(
            api_version=vcjob.API_VERSION,
            kind=vcjob.KIND,
            namespace=state.namespace,
            name=r.name,
            uid=r.uid,
            resource_version=r.resource_version or None,
        )
        for r in due.active(state)
    ]
    return cronjob.CronJobStatus(
        active=refs or None,
        last_schedule_time=state.reported_schedule_time,
        last_successful_time=state.last_successful_time,
    )


def _is_ours(state: CronJobRecord, uid: str) -> bool:
    cj = state.cron_job
    return cj is None or not uid or cj.metadata.uid == uid


def _observed(
    state: CronJobRecord, cj: cronjob.CronJob, now: datetime
) -> tuple[CronJobRecord, Effects]:
    old = state.cron_job
    if old is not None and old.metadata.uid != cj.metadata.uid:
        state = CronJobRecord(applied=state.applied)  # made again under the same name
    seen = cj.status.last_schedule_time if cj.status else None
    last = _later(state.last_schedule_time, seen)
    success = cj.status.last_successful_time if cj.status else None
    state = state.model_copy(
        update={
            "namespace": cj.metadata.namespace or "",
            "name": cj.metadata.name or "",
            "cron_job": cj,
            "last_schedule_time": last,
            "reported_schedule_time": _later(state.reported_schedule_time, seen),
            "last_successful_time": state.last_successful_time or success,
        }
    )
    found = due.parsed(cj)
    if isinstance(found, str):
        # No new Jobs while the schedule cannot be read (Volcano's sync stops there too).
        effects: Effects = [event("InvalidSchedule", found, warning=True)]
        if state.applied is not None and not state.applied.paused:
            return _apply(state, state.applied.model_copy(update={"paused": True}), effects)
        return state, effects
    wanted = plan.plan(cj, found[0])
    effects = []
    resumed = state.applied is None or (state.applied.paused and not wanted.paused)
    if wanted != state.applied:
        state, effects = _apply(state, wanted, effects)
    missed = due.missed(state, cj, now) if resumed and not wanted.paused else None
    if missed is not None:
        schedule_id = keys.cronjob_workflow_id(state.namespace, state.name)
        effects.append(
            cj_fx.BackfillSchedule(schedule_id=schedule_id, at=missed, overlap=wanted.overlap)
        )
    return state, effects


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later of two times; None: neither is known."""
    return max(a, b) if a is not None and b is not None else a or b


def _apply(
    state: CronJobRecord, wanted: plan.SchedulePlan, effects: Effects
) -> tuple[CronJobRecord, Effects]:
    schedule_id = keys.cronjob_workflow_id(state.namespace, state.name)
    apply = cj_fx.ApplySchedule(
        schedule_id=schedule_id, namespace=state.namespace, name=state.name, plan=wanted
    )
    return state.model_copy(update={"applied": wanted}), [*effects, apply]


def _deleted(state: CronJobRecord) -> tuple[CronJobRecord, Effects]:
    effects: Effects = []
    if state.applied is not None:
        schedule_id = keys.cronjob_workflow_id(state.namespace, state.name)
        effects.append(cj_fx.DeleteSchedule(schedule_id=schedule_id))
    for run in state.runs.values():
        if run.workflow_id and not run.finished:
            effects.append(cj_fx.TellRun(workflow_id=run.workflow_id, phase=GONE))
    effects.append(fx.Finish())
    return state.model_copy(update={"deleted": True}), effects


def _run_changed(
    state: CronJobRecord, job: cronjob_signals.CronJobRun
) -> tuple[CronJobRecord, Effects]:
    known = state.runs.get(job.name)
    if known is not None and known.uid and known.uid != job.uid:
        return state, []  # another Job of that name (an older one going): not this run's
    if job.deleted:
        if known is None:
            return state, []
        rest = {n: r for n, r in state.runs.items() if n != job.name}
        effects: Effects = []
        if known.workflow_id and not known.finished:
            effects.append(cj_fx.TellRun(workflow_id=known.workflow_id, phase=DELETED))
        return state.model_copy(update={"runs": rest}), effects
    run = (known or runs.Run(name=job.name)).model_copy(
        update={
            "uid": job.uid,
            "resource_version": job.resource_version,
            "phase": job.phase,
            "created": job.created,
            "finished_at": job.finished_at,
        }
    )
    state = state.model_copy(update={"runs": {**state.runs, job.name: run}})
    if not run.finished or (known is not None and known.finished):
        return state, []
    return _finished(state, run)


def _finished(state: CronJobRecord, run: runs.Run) -> tuple[CronJobRecord, Effects]:
    """processFinishedJobs: off the active list, lastSuccessfulTime, the history limits."""
    effects: Effects = [
        event("SawCompletedJob", f"Saw completed job: {run.name}, status: {run.phase}")
    ]
    if run.workflow_id:
        effects.append(cj_fx.TellRun(workflow_id=run.workflow_id, phase=run.phase))
    if run.phase == vcjob.JobPhase.COMPLETED:
        latest = _later(state.last_successful_time, run.finished_at)
        state = state.model_copy(update={"last_successful_time": latest})
    cj = state.cron_job
    if cj is None:
        return state, effects
    spec = cj.spec
    extra = runs.beyond_limits(list(state.runs.values()), spec.successful_limit, spec.failed_limit)
    state, deletes = due.delete_runs(state, extra)
    return state, [*effects, *deletes]


def _created(
    state: CronJobRecord, made: cronjob_signals.RunCreated
) -> tuple[CronJobRecord, Effects]:
    known = state.runs.get(made.name)
    if made.error or not made.uid or not made.owned or made.phase in runs.FINISHED:
        if made.error:
            effects: Effects = [event("FailedCreate", made.error, warning=True)]
        elif not made.owned:
            text = f"Job {made.name} exists but is not owned by this CronJob"
            effects = [event("ForeignJob", text, warning=True)]
        else:
            effects = []
        if known is not None and not known.uid:
            rest = {n: r for n, r in state.runs.items() if n != made.name}
            state = state.model_copy(update={"runs": rest})
        return state, effects
    run = (known or runs.Run(name=made.name)).model_copy(
        update={
            "uid": made.uid,
            "resource_version": known.resource_version
            if known and known.resource_version
            else made.resource_version,
            "created": (known.created if known else None) or made.created,
            "workflow_id": made.workflow_id,
            "phase": (known.phase if known else "") or made.phase,
        }
    )
    text = f"Created job {made.name} for CronJob {state.namespace}/{state.name}"
    reported = _later(state.reported_schedule_time, run.scheduled)
    updated = {"runs": {**state.runs, made.name: run}, "reported_schedule_time": reported}
    return state.model_copy(update=updated), [event("SuccessfulCreate", text)]


def _ended(state: CronJobRecord, ended: cronjob_signals.RunEnded) -> tuple[CronJobRecord, Effects]:
    """A run cancelled by Replace deleted its own Job: it is no longer active."""
    known = state.runs.get(ended.name)
    if known is None or known.deleting:
        return state, []
    runs_now = {**state.runs, ended.name: known.model_copy(update={"deleting": True})}
    return state.model_copy(update={"runs": runs_now}), [
        event("SuccessfulDelete", f'Deleted job "{ended.name}"')
    ]


def _failed(state: CronJobRecord, failed: ActionFailed) -> tuple[CronJobRecord, Effects]:
    if failed.namespace_gone:
        return _deleted(state)
    if failed.effect == "ApplySchedule":
        # Written again with the next observation of the CronJob.
        return state.model_copy(update={"applied": None}), []
    return state, []  # a status write, an Event, a signal to a run that ended: nothing to redo
