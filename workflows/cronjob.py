"""CronJobWorkflow: one durable workflow per Volcano CronJob (id `cronjob/<namespace>/<name>`),
keeping the CronJob's Temporal Schedule (same id) in step with it.

It runs on the entity shell (`workflows.entity`) with the CronJob controller's core
(`controllers.cronjob`). The forwarder signals-with-start `cron_job_observed` and sends
`cron_job_deleted` and the phase changes of the CronJob's Jobs; each scheduled run
(`workflows.cronrun`) asks `run_due`, reports `run_created` or `run_ended`, and is answered
by signal. What is its own: the status query, the schedule activities, the run's Job-facing
writes (status, deleting finished Jobs), and the signals to its runs.

Patches in force: none yet.
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import cronjobs, jobs, schedules
    from activities.messages import DeleteJobInput
    from controllers import effects as fx
    from controllers.cronjob import controller, due
    from controllers.cronjob import effects as cj_fx
    from controllers.cronjob.state import CronJobRecord
    from controllers.outcomes import AnyOutcome
    from models import cronjob, keys, vcjob
    from models.signals import common as common_signals
    from models.signals import cronjob as cronjob_signals
    from models.signals import job as job_signals
    from workflows import activity_call, messaging
    from workflows.entity import Entity, Ref


class CronJobWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.cronjob.CronJobStart`, which must stay a subset of these fields
    (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: CronJobRecord | None = None  # None: a new CronJob
    observed: cronjob_signals.CronJobObserved | None = (
        None  # a CronJob made again as the last run ended
    )
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=cronjob_signals.CRON_JOB_WORKFLOW)
class CronJobWorkflow:
    @workflow.init
    def __init__(self, start: CronJobWorkflowInput) -> None:
        self._entity = Entity[CronJobRecord, controller.Input, cj_fx.Own](
            self, start.state or CronJobRecord(), start.max_history
        )
        if start.observed is not None:
            self._entity.accept(start.observed)

    @workflow.run
    async def run(self, start: CronJobWorkflowInput) -> None:
        await self._entity.run(())

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self, state: CronJobRecord, item: controller.Input | AnyOutcome, now: datetime
    ) -> controller.Decision:
        return controller.decide(state, item, now)

    def carry(
        self, state: CronJobRecord, start_over: job_signals.JobObserved | None, max_history: int
    ) -> CronJobWorkflowInput:
        return CronJobWorkflowInput(state=state, max_history=max_history)

    def made_again(
        self, state: CronJobRecord, item: object, max_history: int
    ) -> CronJobWorkflowInput | None:
        if not isinstance(item, cronjob_signals.CronJobObserved):
            return None
        if item.cron_job.metadata.uid == self.ref(state).uid:
            return None
        return CronJobWorkflowInput(observed=item, max_history=max_history)

    def answer(self, state: CronJobRecord) -> str:
        return "Deleted" if state.deleted else f"{len(due.active(state))} active"

    def ref(self, state: CronJobRecord) -> Ref:
        uid = (state.cron_job.metadata.uid if state.cron_job else None) or ""
        return Ref(
            namespace=state.namespace,
            name=state.name,
            uid=uid,
            api_version=vcjob.API_VERSION,
            kind=cronjob.KIND,
        )

    def decided(self, before: CronJobRecord, after: CronJobRecord) -> None:
        if after.applied is not None and after.applied != before.applied:
            paused = " (suspended)" if after.applied.paused else ""
            workflow.set_current_details(f"schedule `{after.applied.comment}`{paused}")

    def local_writes(self) -> bool:
        """Every run of this workflow began with local writes in force: no patch marker."""
        return True

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=cronjob_signals.SIGNAL_CRON_JOB_OBSERVED)
    def cron_job_observed(self, observed: cronjob_signals.CronJobObserved) -> None:
        self._entity.accept(observed)

    @workflow.signal(name=cronjob_signals.SIGNAL_CRON_JOB_DELETED)
    def cron_job_deleted(self, deleted: common_signals.JobDeleted) -> None:
        self._entity.accept(deleted)

    @workflow.signal(name=cronjob_signals.SIGNAL_CRON_JOB_RUN_CHANGED)
    def cron_job_run_changed(self, changed: cronjob_signals.CronJobRunChanged) -> None:
        self._entity.accept(changed)

    @workflow.signal(name=cronjob_signals.SIGNAL_RUN_DUE)
    def run_due(self, due: cronjob_signals.RunDue) -> None:
        self._entity.accept(due)

    @workflow.signal(name=cronjob_signals.SIGNAL_RUN_CREATED)
    def run_created(self, created: cronjob_signals.RunCreated) -> None:
        self._entity.accept(created)

    @workflow.signal(name=cronjob_signals.SIGNAL_RUN_ENDED)
    def run_ended(self, ended: cronjob_signals.RunEnded) -> None:
        self._entity.accept(ended)

    @workflow.query
    def status(self) -> cronjob_signals.CronJobView:
        state = self._entity.state
        return cronjob_signals.CronJobView(
            namespace=state.namespace,
            name=state.name,
            schedule_id=keys.cronjob_workflow_id(state.namespace, state.name),
            paused=state.applied.paused if state.applied else False,
            active=[r.name for r in due.active(state)],
            jobs={name: run.phase for name, run in state.runs.items()},
            last_schedule_time=state.last_schedule_time,
            backlog=self._entity.inbox.backlog,
        )

    # -- the effects only this kind has ----------------------------------------------------------

    async def apply(self, effect: cj_fx.Own) -> None:
        match effect:
            case cj_fx.ApplySchedule():
                await activity_call.run(
                    schedules.apply_cron_schedule,
                    schedules.ApplyScheduleInput(
                        schedule_id=effect.schedule_id,
                        namespace=effect.namespace,
                        name=effect.name,
                        plan=effect.plan,
                    ),
                    options.TEMPORAL_CALL,
                    f"apply schedule {effect.schedule_id}: {effect.plan.comment}"
                    + (" (paused)" if effect.plan.paused else ""),
                )
            case cj_fx.BackfillSchedule():
                await activity_call.run(
                    schedules.backfill_cron_schedule,
                    schedules.BackfillInput(
                        schedule_id=effect.schedule_id, at=effect.at, overlap=effect.overlap
                    ),
                    options.TEMPORAL_CALL,
                    f"backfill the run missed at {effect.at.isoformat()}",
                )
            case cj_fx.DeleteSchedule():
                await activity_call.run(
                    schedules.delete_cron_schedule,
                    schedules.DeleteScheduleInput(schedule_id=effect.schedule_id),
                    options.TEMPORAL_CALL,
                    f"delete schedule {effect.schedule_id}",
                )
            case cj_fx.AnswerRun():
                await messaging.tell(
                    effect.workflow_id, cronjob_signals.SIGNAL_RUN_ANSWERED, effect.answer
                )
            case cj_fx.TellRun():
                finished = cronjob_signals.RunFinished(phase=effect.phase)
                await messaging.tell(
                    effect.workflow_id, cronjob_signals.SIGNAL_RUN_FINISHED, finished
                )
            case cj_fx.WriteCronJobStatus():
                await activity_call.run(
                    cronjobs.write_cron_job_status,
                    cronjobs.CronJobStatusInput(
                        namespace=effect.namespace, name=effect.name, status=effect.status
                    ),
                    options.KUBE_WRITE,
                    f"write status: {len(effect.status.active or [])} active",
                )
            case fx.DeleteJob():
                await activity_call.run(
                    jobs.delete_job,
                    DeleteJobInput(namespace=effect.namespace, name=effect.name, uid=effect.uid),
                    options.KUBE_WRITE,
                    f"delete job {effect.name}",
                )
            case _:
                assert_never(effect)
