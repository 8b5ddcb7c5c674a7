"""JobWorkflow: one durable workflow per Volcano Job (id `vcjob/<namespace>/<name>`).

The shell only moves data: signal and update handlers append to the inbox, `run` feeds each
input to `controller.decide` and executes the returned effects in order through activities,
durable timers and search-attribute upserts. State is set in `@workflow.init` so signals that
arrive before `run` starts (signal-with-start, continue-as-new) are never lost.

Patches in force: none yet.
"""

from __future__ import annotations

from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities import events as event_activities
    from activities import jobs, options, podgroups, pods, status
    from activities.messages import (
        CreatePodsInput,
        DeleteJobInput,
        DeletePodsInput,
        JobInput,
        PodGroupInput,
        RecordEventInput,
        WriteStatusInput,
    )
    from activities.plugins import PluginsInput, ensure_plugins, remove_plugins
    from controllers.job import controller, views
    from controllers.job import effects as fx
    from controllers.job.state import JobRecord
    from models import signals
    from models.bus import Action
    from service import metrics
    from workflows import activity_call, placing, search_attributes
    from workflows.inbox import Inbox, continue_due
    from workflows.timers import Timers


class JobWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.JobStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: signals.ControllerSettings = signals.ControllerSettings()
    state: JobRecord | None = None  # None: a new job
    observed: signals.JobObserved | None = None  # None: wait for the forwarder's first signal
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=signals.JOB_WORKFLOW)
class JobWorkflow:
    @workflow.init
    def __init__(self, start: JobWorkflowInput) -> None:
        self._state = start.state or JobRecord(settings=start.settings)
        self._inbox: Inbox[controller.Input] = Inbox()
        self._timers = Timers[fx.StartTimer](self._timer_fired)
        self._finished = False
        self._start_over: signals.JobObserved | None = None
        self._max_history = start.max_history
        if start.observed is not None:
            self._inbox.accept(start.observed)

    @workflow.run
    async def run(self, start: JobWorkflowInput) -> None:
        for effect in controller.restored_timers(self._state):
            self._timers.start(effect)
        while True:
            await workflow.wait_condition(
                lambda: bool(self._inbox) or continue_due(self._max_history)
            )
            while self._inbox and not self._done():
                ticket, item = self._inbox.take()
                await self._process(item)
                self._inbox.done(ticket, str(self._state.phase or "Pending"))
            if self._done() or continue_due(self._max_history):
                # Updates wait for their input to be processed: let them answer first.
                await workflow.wait_condition(workflow.all_handlers_finished)
                if self._inbox and not self._done():
                    continue
                self._timers.cancel_all()
                if self._finished:
                    return
                workflow.continue_as_new(
                    JobWorkflowInput(
                        settings=self._state.settings,
                        state=None if self._start_over else self._state,
                        observed=self._start_over,
                        max_history=self._max_history,
                    )
                )

    def _done(self) -> bool:
        return self._finished or self._start_over is not None

    def _timer_fired(self, effect: fx.StartTimer) -> None:
        self._inbox.internal(controller.TimerFired(key=effect.key, timer=effect.timer))

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=signals.SIGNAL_JOB_OBSERVED)
    def job_observed(self, observed: signals.JobObserved) -> None:
        self._inbox.accept(observed)

    @workflow.signal(name=signals.SIGNAL_JOB_DELETED)
    def job_deleted(self, deleted: signals.JobDeleted) -> None:
        self._inbox.accept(deleted)

    @workflow.signal(name=signals.SIGNAL_PODS_CHANGED)
    def pods_changed(self, changed: signals.PodsChanged) -> None:
        self._inbox.accept(changed)

    @workflow.signal(name=signals.SIGNAL_POD_GROUP_OBSERVED)
    def pod_group_observed(self, observed: signals.PodGroupObserved) -> None:
        self._inbox.accept(observed)

    @workflow.signal(name=signals.SIGNAL_PODS_PLACED)
    def pods_placed(self, placed: signals.PodsPlaced) -> None:
        self._inbox.accept(placed)

    @workflow.signal(name=signals.SIGNAL_COMMAND_ISSUED)
    def command_issued(self, command: signals.CommandIssued) -> None:
        self._inbox.accept(command)

    # -- commands as updates (validated, answered once carried out) -----------------------------

    def _refuse(self, action: Action) -> None:
        why = views.refusal(self._state, action)
        if why is not None:
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)

    async def _command(self, action: Action, cmd: signals.JobCommand) -> signals.JobCommandResult:
        before = str(self._state.phase or "Pending")
        ticket = self._inbox.accept(
            signals.CommandIssued(action=action, reason=cmd.reason, message=cmd.message)
        )
        # The run loop executes commands in arrival order with every other input.
        after = await self._inbox.answer(ticket)
        return signals.JobCommandResult(action=action, phase_before=before, phase_after=after)

    @workflow.update
    async def abort(self, cmd: signals.JobCommand) -> signals.JobCommandResult:
        return await self._command(Action.ABORT_JOB, cmd)

    @abort.validator
    def _abort_allowed(self, cmd: signals.JobCommand) -> None:
        self._refuse(Action.ABORT_JOB)

    @workflow.update
    async def restart(self, cmd: signals.JobCommand) -> signals.JobCommandResult:
        return await self._command(Action.RESTART_JOB, cmd)

    @restart.validator
    def _restart_allowed(self, cmd: signals.JobCommand) -> None:
        self._refuse(Action.RESTART_JOB)

    @workflow.update
    async def resume(self, cmd: signals.JobCommand) -> signals.JobCommandResult:
        return await self._command(Action.RESUME_JOB, cmd)

    @resume.validator
    def _resume_allowed(self, cmd: signals.JobCommand) -> None:
        self._refuse(Action.RESUME_JOB)

    @workflow.update
    async def terminate(self, cmd: signals.JobCommand) -> signals.JobCommandResult:
        return await self._command(Action.TERMINATE_JOB, cmd)

    @terminate.validator
    def _terminate_allowed(self, cmd: signals.JobCommand) -> None:
        self._refuse(Action.TERMINATE_JOB)

    @workflow.update
    async def complete(self, cmd: signals.JobCommand) -> signals.JobCommandResult:
        return await self._command(Action.COMPLETE_JOB, cmd)

    @complete.validator
    def _complete_allowed(self, cmd: signals.JobCommand) -> None:
        self._refuse(Action.COMPLETE_JOB)

    @workflow.query
    def status(self) -> signals.JobView:
        return views.view(self._state).model_copy(update={"backlog": self._inbox.backlog})

    @workflow.query
    def delayed_actions(self) -> list[signals.DelayedActionView]:
        return views.view(self._state).delayed

    # -- effects ------------------------------------------------------------------------------

    async def _process(self, item: controller.Input) -> None:
        first_sight = self._state.job is None
        decision = controller.decide(self._state, item, workflow.now())
        self._state = decision.state
        if first_sight and self._state.job is not None:
            self._announce()
        for effect in decision.effects:
            await self._apply(effect)

    def _announce(self) -> None:
        job = self._state.job
        assert job is not None
        workflow.upsert_search_attributes(
            [
                search_attributes.NAMESPACE.value_set(job.metadata.namespace or ""),
                search_attributes.JOB_NAME.value_set(job.metadata.name or ""),
                search_attributes.QUEUE.value_set(job.spec.queue or ""),
            ]
        )

    def _job_ref(self) -> tuple[str, str, str]:
        job = self._state.job
        meta = job.metadata if job else None
        return (
            (meta.namespace if meta else None) or "",
            (meta.name if meta else None) or "",
            (meta.uid if meta else None) or "",
        )

    async def _apply(self, effect: fx.AnyEffect) -> None:
        namespace, name, uid = self._job_ref()
        try:
            match effect:
                case fx.WriteStatus():
                    await activity_call.run(
                        status.write_job_status,
                        WriteStatusInput(
                            namespace=namespace, name=name, status=effect.status.dump()
                        ),
                        options.KUBE_WRITE,
                        f"write status {_phase(effect.status)}",
                    )
                case fx.EnsurePodGroup():
                    await activity_call.run(
                        podgroups.ensure_pod_group,
                        JobInput(job=effect.job),
                        options.KUBE_WRITE,
                        "ensure PodGroup",
                    )
                case fx.DeletePodGroup():
                    await activity_call.run(
                        podgroups.delete_pod_group,
                        PodGroupInput(namespace=namespace, name=effect.name),
                        options.KUBE_WRITE,
                        f"delete PodGroup {effect.name}",
                    )
                case fx.EnsurePlugins():
                    await activity_call.run(
                        ensure_plugins,
                        PluginsInput(job=effect.job),
                        options.KUBE_WRITE,
                        "ensure plugins " + ",".join(sorted(_plugins(effect.job))),
                    )
                case fx.RemovePlugins():
                    await activity_call.run(
                        remove_plugins,
                        PluginsInput(job=effect.job),
                        options.KUBE_WRITE,
                        "remove plugins " + ",".join(sorted(_plugins(effect.job))),
                    )
                case fx.EnsureVolumes():
                    await activity_call.run(
                        jobs.ensure_volumes,
                        JobInput(job=effect.job),
                        options.KUBE_WRITE,
                        "ensure volumes",
                    )
                case fx.CreatePods():
                    await activity_call.run(
                        pods.create_pods,
                        CreatePodsInput(
                            job=effect.job,
                            version=effect.version,
                            retry_count=effect.retry_count,
                            pods=effect.pods,
                            scheduler_override=effect.scheduler_override,
                        ),
                        options.POD_BATCH,
                        f"create {len(effect.pods)} pods (version {effect.version})",
                    )
                case fx.DeletePods():
                    await activity_call.run(
                        pods.delete_pods,
                        DeletePodsInput(namespace=namespace, names=effect.names),
                        options.POD_BATCH,
                        f"delete {len(effect.names)} pods: {effect.why}",
                    )
                case fx.RecordEvent():
                    await self._record(effect, namespace, name, uid)
                case fx.StartTimer():
                    self._timers.start(effect)
                case fx.CancelTimer():
                    self._timers.cancel(effect.key)
                case fx.PhaseChanged():
                    workflow.upsert_search_attributes(
                        [search_attributes.JOB_PHASE.value_set(effect.phase)]
                    )
                    workflow.set_current_details(f"{effect.phase}: {effect.reason}")
                    # The workflow meter records nothing on replay: one count per transition.
                    metrics.JOB_PHASE_TRANSITIONS.on(workflow.metric_meter()).add(
                        1, {"phase": str(effect.phase)}
                    )
                    workflow.logger.info(
                        "phase changed job=%s/%s from=%s to=%s reason=%s",
                        namespace,
                        name,
                        effect.previous,
                        effect.phase,
                        effect.reason,
                    )
                case fx.DeleteJob():
                    await activity_call.run(
                        jobs.delete_job,
                        DeleteJobInput(
                            namespace=effect.namespace, name=effect.name, uid=effect.uid
                        ),
                        options.KUBE_WRITE,
                        "delete job: ttlSecondsAfterFinished expired",
                    )
                case fx.Finish():
                    self._finished = True
                case fx.StartOver():
                    self._start_over = signals.JobObserved(job=effect.job)
                case fx.BindPlacements():
                    result = await placing.bind(namespace, effect)
                    if result.failed:
                        outcome = controller.BindOutcome(failed=result.failed)
                        self._inbox.internal(outcome, first=True)
                case fx.MarkUnschedulable():
                    await placing.mark_unschedulable(namespace, effect)
                case fx.TellScheduler():
                    await placing.tell_scheduler(effect)
                case _:
                    assert_never(effect)
        except ActivityError as e:
            cause = str(e.cause) if e.cause is not None else str(e)
            # Handled next, before anything else: Volcano's requeue budget is spent.
            self._inbox.internal(
                controller.ActionFailed(effect=effect.kind, error=cause), first=True
            )

    async def _record(self, effect: fx.RecordEvent, namespace: str, name: str, uid: str) -> None:
        try:
            await activity_call.run(
                event_activities.record_event,
                RecordEventInput(
                    namespace=namespace,
                    name=name,
                    uid=uid,
                    type=effect.type,
                    reason=effect.reason,
                    message=effect.message,
                ),
                options.KUBE_EVENT,
                f"event {effect.reason}: {effect.message}",
            )
        except ActivityError:
            workflow.logger.warning(
                "event not recorded job=%s/%s reason=%s", namespace, name, effect.reason
            )

    # -- durable timers -------------------------------------------------------------------------


def _phase(status: object) -> str:
    state = getattr(status, "state", None)
    return str(getattr(state, "phase", "") or "")


def _plugins(job: dict[str, object]) -> list[str]:
    spec = job.get("spec")
    plugins = spec.get("plugins") if isinstance(spec, dict) else None
    return list(plugins) if isinstance(plugins, dict) else []
