"""BatchJobWorkflow: one durable workflow per batch/v1 Job whose `spec.managedBy` is
Caldera's (id `job/<namespace>/<name>`).

The shell only moves data: signal handlers append to the inbox, `run` feeds each input to
`controller.decide` and executes the returned effects in order through activities, durable
timers and search-attribute upserts. Activity outcomes the core needs (pods created,
finalizers removed, an action that gave up) go back into the inbox ahead of everything else.
State is set in `@workflow.init`, so signals that arrive before `run` starts are never lost.

Patches in force: none yet.
"""

from __future__ import annotations

from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import batchjobs, batchpods, options
    from activities import events as event_activities
    from activities.messages import (
        BatchJobStatusInput,
        CreateJobPodsInput,
        DeleteJobInput,
        DeleteJobPodsInput,
        JobInput,
        JobPod,
        RecordEventInput,
        RemoveFinalizersInput,
    )
    from controllers.batchjob import controller, tracking
    from controllers.batchjob import effects as fx
    from controllers.batchjob.state import BatchJobRecord
    from models import batchv1, signals
    from workflows import activity_call, placing, search_attributes
    from workflows.inbox import Inbox, continue_due
    from workflows.timers import Timers


class BatchJobWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.BatchJobStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: BatchJobRecord | None = None  # None: a new job
    observed: signals.JobObserved | None = None  # None: wait for the forwarder's first signal
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=signals.BATCH_JOB_WORKFLOW)
class BatchJobWorkflow:
    @workflow.init
    def __init__(self, start: BatchJobWorkflowInput) -> None:
        self._state = start.state or BatchJobRecord()
        self._inbox: Inbox[controller.AnyInput] = Inbox()
        self._timers = Timers[fx.StartTimer](self._timer_fired)
        self._finished = False
        self._start_over: signals.JobObserved | None = None
        self._max_history = start.max_history
        if start.observed is not None:
            self._inbox.accept(start.observed)

    @workflow.run
    async def run(self, start: BatchJobWorkflowInput) -> None:
        for effect in controller.restored_timers(self._state):
            self._timers.start(effect)
        while True:
            await workflow.wait_condition(
                lambda: bool(self._inbox) or continue_due(self._max_history)
            )
            while self._inbox and not self._done():
                ticket, item = self._inbox.take()
                await self._process(item)
                self._inbox.done(ticket, tracking.phase(self._state.status))
            if self._done() or continue_due(self._max_history):
                await workflow.wait_condition(workflow.all_handlers_finished)
                if self._inbox and not self._done():
                    continue
                self._timers.cancel_all()
                if self._finished:
                    return
                workflow.continue_as_new(
                    BatchJobWorkflowInput(
                        state=None if self._start_over else self._state,
                        observed=self._start_over,
                        max_history=self._max_history,
                    )
                )

    def _done(self) -> bool:
        return self._finished or self._start_over is not None

    def _timer_fired(self, effect: fx.StartTimer) -> None:
        self._inbox.internal(controller.TimerFired(key=effect.key))

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=signals.SIGNAL_JOB_OBSERVED)
    def job_observed(self, observed: signals.JobObserved) -> None:
        self._inbox.accept(observed)

    @workflow.signal(name=signals.SIGNAL_JOB_DELETED)
    def job_deleted(self, deleted: signals.JobDeleted) -> None:
        self._inbox.accept(deleted)

    @workflow.signal(name=signals.SIGNAL_PODS_CHANGED)
    def pods_changed(self, changed: signals.BatchPodsChanged) -> None:
        self._inbox.accept(changed)

    @workflow.signal(name=signals.SIGNAL_PODS_PLACED)
    def pods_placed(self, placed: signals.PodsPlaced) -> None:
        self._inbox.accept(placed)

    @workflow.query
    def status(self) -> signals.BatchJobView:
        state = self._state
        meta = state.job.metadata if state.job else None
        return signals.BatchJobView(
            namespace=(meta.namespace if meta else None) or "",
            name=(meta.name if meta else None) or "",
            uid=(meta.uid if meta else None) or "",
            phase=tracking.phase(state.status),
            status=state.status.dump(),
            pods={
                n: p.phase + (" terminating" if p.deleting else "")
                for n, p in sorted(state.pods.items())
            },
            timers={k: at.isoformat() for k, at in sorted(state.timers.items())},
            backlog=self._inbox.backlog,
        )

    # -- effects ------------------------------------------------------------------------------

    async def _process(self, item: controller.AnyInput) -> None:
        first_sight = self._state.job is None
        decision = controller.decide(self._state, item, workflow.now())
        self._state = decision.state
        if first_sight and self._state.job is not None:
            meta = self._state.job.metadata
            workflow.upsert_search_attributes(
                [
                    search_attributes.NAMESPACE.value_set(meta.namespace or ""),
                    search_attributes.JOB_NAME.value_set(meta.name or ""),
                ]
            )
        for effect in decision.effects:
            await self._apply(effect)

    def _job(self) -> batchv1.BatchJob:
        job = self._state.job
        assert job is not None, "effects that touch the cluster come after the Job is observed"
        return job

    async def _apply(self, effect: fx.AnyEffect) -> None:
        try:
            match effect:
                case fx.CreatePods():
                    await self._create(effect)
                case fx.DeletePods():
                    meta = self._job().metadata
                    await activity_call.run(
                        batchpods.delete_job_pods,
                        DeleteJobPodsInput(
                            namespace=meta.namespace or "",
                            job_name=meta.name or "",
                            job_uid=meta.uid or "",
                            names=effect.names,
                            keep_finalizers=effect.keep_finalizers,
                        ),
                        options.POD_BATCH,
                        f"delete {len(effect.names)} pods: {effect.why}",
                    )
                case fx.RemoveFinalizers():
                    await activity_call.run(
                        batchpods.remove_pod_finalizers,
                        RemoveFinalizersInput(
                            namespace=self._job().metadata.namespace or "", pods=effect.pods
                        ),
                        options.POD_BATCH,
                        f"remove the tracking finalizer of {len(effect.pods)} pods: {effect.why}",
                    )
                    removed = controller.FinalizersRemoved(pods=effect.pods)
                    self._inbox.internal(removed, first=True)
                case fx.WriteStatus():
                    meta = self._job().metadata
                    await activity_call.run(
                        batchjobs.write_batch_job_status,
                        BatchJobStatusInput(
                            namespace=meta.namespace or "",
                            name=meta.name or "",
                            uid=meta.uid or "",
                            status=effect.status,
                        ),
                        options.KUBE_WRITE,
                        f"write status {effect.summary}",
                    )
                case fx.RecordEvent():
                    await self._record(effect)
                case fx.StartTimer():
                    self._timers.start(effect)
                case fx.CancelTimer():
                    self._timers.cancel(effect.key)
                case fx.PhaseChanged():
                    workflow.upsert_search_attributes(
                        [search_attributes.JOB_PHASE.value_set(effect.phase)]
                    )
                    workflow.set_current_details(f"{effect.phase}: {effect.reason}")
                    workflow.logger.info(
                        "phase changed batchjob=%s from=%s to=%s reason=%s",
                        self._state.key,
                        effect.previous,
                        effect.phase,
                        effect.reason,
                    )
                case fx.DeleteJob():
                    await activity_call.run(
                        batchjobs.delete_batch_job,
                        DeleteJobInput(
                            namespace=effect.namespace, name=effect.name, uid=effect.uid
                        ),
                        options.KUBE_WRITE,
                        "delete job: ttlSecondsAfterFinished expired",
                    )
                case fx.EnsurePodGroup():
                    await activity_call.run(
                        batchjobs.ensure_batch_pod_group,
                        JobInput(job=effect.job),
                        options.KUBE_WRITE,
                        f"ensure PodGroup {self._job().pod_group_name}",
                    )
                case fx.BindPlacements():
                    result = await placing.bind(self._job().metadata.namespace or "", effect)
                    if result.failed:
                        outcome = controller.BindOutcome(failed=result.failed)
                        self._inbox.internal(outcome, first=True)
                case fx.MarkUnschedulable():
                    await placing.mark_unschedulable(self._job().metadata.namespace or "", effect)
                case fx.TellScheduler():
                    await placing.tell_scheduler(effect)
                case fx.Finish():
                    self._finished = True
                case fx.StartOver():
                    self._start_over = signals.JobObserved(job=effect.job)
                case _:
                    assert_never(effect)
        except ActivityError as e:
            cause = str(e.cause) if e.cause is not None else str(e)
            # Handled next, before anything else: the core arms its API back-off.
            self._inbox.internal(
                controller.ActionFailed(effect=effect.kind, error=cause), first=True
            )

    async def _create(self, effect: fx.CreatePods) -> None:
        result = await activity_call.run(
            batchpods.create_job_pods,
            CreateJobPodsInput(
                job=effect.job,
                pods=[
                    JobPod(
                        name=p.name,
                        index=p.index,
                        failure_count=p.failure_count,
                        ignored_failure_count=p.ignored_failure_count,
                    )
                    for p in effect.pods
                ],
            ),
            options.POD_BATCH,
            f"create {len(effect.pods)} pods",
        )
        created = {
            name: controller.CreatedPod(uid=p.uid, created_at=p.created_at)
            for name, p in result.created.items()
        }
        outcome = controller.PodsCreated(created=created, failed=result.failed)
        self._inbox.internal(outcome, first=True)

    async def _record(self, effect: fx.RecordEvent) -> None:
        meta = self._job().metadata
        try:
            await activity_call.run(
                event_activities.record_event,
                RecordEventInput(
                    namespace=meta.namespace or "",
                    name=meta.name or "",
                    uid=meta.uid or "",
                    type=effect.type,
                    reason=effect.reason,
                    message=effect.message,
                    api_version=batchv1.API_VERSION,
                    kind=batchv1.KIND,
                ),
                options.KUBE_EVENT,
                f"event {effect.reason}: {effect.message}",
            )
        except ActivityError:
            workflow.logger.warning(
                "event not recorded batchjob=%s reason=%s", self._state.key, effect.reason
            )

    # -- durable timers -------------------------------------------------------------------------
