"""A CronJob's Temporal Schedule: create it, bring it in step, backfill one time, delete it.

These are the only activities that talk to Temporal rather than the apiserver, so they are
`async` and use the client of the worker that runs them (`activity.client()`, with the
worker's data converter): nothing to configure, and the schedule lives in the namespace the
CronJobWorkflow runs in. Its action starts a CronRunWorkflow on the task queue of the worker
that applied it, with the CronJob's namespace and name as search attributes, so every run
can be found in the UI and with `temporal workflow list`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict
from temporalio import activity
from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleCalendarSpec,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleRange,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from activities.messages import Done
from controllers.cronjob import plan
from models import keys
from models.signals import cronjob as cronjob_signals
from service import search_attributes

OVERLAP = {
    plan.Overlap.ALLOW_ALL: ScheduleOverlapPolicy.ALLOW_ALL,
    plan.Overlap.BUFFER_ALL: ScheduleOverlapPolicy.BUFFER_ALL,
    plan.Overlap.CANCEL_OTHER: ScheduleOverlapPolicy.CANCEL_OTHER,
}
# Half a second each side of the one time wanted: the range holds it, whichever end is exclusive.
_EDGE = timedelta(milliseconds=500)


class ApplyScheduleInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schedule_id: str
    namespace: str
    name: str
    plan: plan.SchedulePlan


class BackfillInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schedule_id: str
    at: datetime
    overlap: plan.Overlap


class DeleteScheduleInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schedule_id: str


def ranges(values: Sequence[int]) -> list[ScheduleRange]:
    """Sorted values as the fewest inclusive ranges."""
    out: list[ScheduleRange] = []
    for value in values:
        if out and out[-1].end == value - 1:
            out[-1] = ScheduleRange(out[-1].start, value)
        else:
            out.append(ScheduleRange(value, value))
    return out


def spec(p: plan.SchedulePlan) -> ScheduleSpec:
    calendars = [
        ScheduleCalendarSpec(
            second=[ScheduleRange(0)],
            minute=ranges(c.minute),
            hour=ranges(c.hour),
            day_of_month=ranges(c.day_of_month),
            month=ranges(c.month),
            day_of_week=ranges(c.day_of_week),
            comment=p.comment,
        )
        for c in p.calendars
    ]
    intervals = [ScheduleIntervalSpec(every=p.every, offset=p.offset)] if p.every else []
    return ScheduleSpec(calendars=calendars, intervals=intervals, time_zone_name=p.time_zone)


def schedule(request: ApplyScheduleInput) -> Schedule:
    p = request.plan
    attributes = TypedSearchAttributes(
        [
            SearchAttributePair(search_attributes.NAMESPACE, request.namespace),
            SearchAttributePair(search_attributes.JOB_NAME, request.name),
        ]
    )
    action = ScheduleActionStartWorkflow(
        cronjob_signals.CRON_RUN_WORKFLOW,
        cronjob_signals.CronRunStart(namespace=request.namespace, name=request.name),
        id=keys.cron_run_workflow_id(request.namespace, request.name),
        task_queue=activity.info().task_queue,
        typed_search_attributes=attributes,
        static_summary=f"run of Volcano CronJob {request.namespace}/{request.name}",
    )
    return Schedule(
        action=action,
        spec=spec(p),
        policy=SchedulePolicy(overlap=OVERLAP[p.overlap], catchup_window=p.catchup),
        state=ScheduleState(paused=p.paused, note=_note(p)),
    )


def _note(p: plan.SchedulePlan) -> str:
    return "suspended: spec.suspend is true" if p.paused else f"schedule {p.comment!r}"


@activity.defn(name="apply_cron_schedule")
async def apply_cron_schedule(request: ApplyScheduleInput) -> Done:
    client = activity.client()
    wanted = schedule(request)
    try:
        await client.create_schedule(request.schedule_id, wanted)
        activity.logger.info("schedule created schedule=%s", request.schedule_id)
        return Done()
    except ScheduleAlreadyRunningError:
        pass
    handle = client.get_schedule_handle(request.schedule_id)

    def update(current: ScheduleUpdateInput) -> ScheduleUpdate:
        return ScheduleUpdate(schedule=wanted)

    await handle.update(update)
    # The paused flag is state, not spec: set it explicitly so an update never leaves it.
    paused = (await handle.describe()).schedule.state.paused
    if paused and not request.plan.paused:
        await handle.unpause(note=_note(request.plan))
    elif request.plan.paused and not paused:
        await handle.pause(note=_note(request.plan))
    activity.logger.info("schedule updated schedule=%s", request.schedule_id)
    return Done()


@activity.defn(name="backfill_cron_schedule")
async def backfill_cron_schedule(request: BackfillInput) -> Done:
    handle = activity.client().get_schedule_handle(request.schedule_id)
    window = ScheduleBackfill(
        start_at=request.at - _EDGE, end_at=request.at + _EDGE, overlap=OVERLAP[request.overlap]
    )
    await handle.backfill(window)
    return Done()


@activity.defn(name="delete_cron_schedule")
async def delete_cron_schedule(request: DeleteScheduleInput) -> Done:
    """A schedule already gone is the end wanted."""
    try:
        await activity.client().get_schedule_handle(request.schedule_id).delete()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
    return Done()
