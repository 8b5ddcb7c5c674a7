"""JobWorkflow: one durable workflow per Volcano Job (id `vcjob/<namespace>/<name>`).

The shell only moves data: signal and update handlers append to the inbox, `run` feeds each
input to `controller.decide` and executes the returned effects in order through activities,
durable timers and search-attribute upserts. State is set in `@workflow.init` so signals that
arrive before `run` starts (signal-with-start, continue-as-new) are never lost.

Patches in force: none yet.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
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
    from models import signals
    from models.bus import Action
    from workflows import activity_call, search_attributes
    from workflows.job import controller
    from workflows.job import effects as fx
    from workflows.job.state import JobState


class JobWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.JobStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: signals.ControllerSettings = signals.ControllerSettings()
    state: JobState | None = None  # None: a new job
    observed: signals.JobObserved | None = None  # None: wait for the forwarder's first signal
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=signals.JOB_WORKFLOW)
class JobWorkflow:
    @workflow.init
    def __init__(self, start: JobWorkflowInput) -> None:
        self._state = start.state or JobState(settings=start.settings)
        # (ticket, input): forwarder signals and commands get increasing tickets, internal
        # inputs (timers, failed activities) ticket 0, so an update knows when its turn is done.
        self._inbox: list[tuple[int, controller.Input]] = []
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._accepted = 0
        self._processed = 0  # highest ticket processed
        self._finished = False
        self._start_over: signals.JobObserved | None = None
        self._max_history = start.max_history
        self._busy = False  # an input's effects are being carried out
        self._answers: dict[int, str] = {}  # update ticket → phase right after it was carried out
        if start.observed is not None:
            self._accept(start.observed)

    @workflow.run
    async def run(self, start: JobWorkflowInput) -> None:
        for effect in controller.restored_timers(self._state):
            self._start_timer(effect)
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._continue_due())
            while self._inbox and not self._done():
                ticket, item = self._inbox.pop(0)
                self._busy = True
                await self._process(item)
                self._busy = False
                self._processed = max(self._processed, ticket)
                if ticket in self._answers:
                    self._answers[ticket] = str(self._state.phase or "Pending")
            if self._done() or self._continue_due():
                # Updates wait for their input to be processed: let them answer first.
                await workflow.wait_condition(workflow.all_handlers_finished)
                if self._inbox and not self._done():
                    continue
                for task in self._timers.values():
                    task.cancel()
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

    def _continue_due(self) -> bool:
        info = workflow.info()
        if self._max_history and info.get_current_history_length() >= self._max_history:
            return True
        return info.is_continue_as_new_suggested()

    # -- inputs -------------------------------------------------------------------------------

    def _accept(self, item: controller.Input) -> int:
        self._accepted += 1
        self._inbox.append((self._accepted, item))
        return self._accepted

    @workflow.signal(name=signals.SIGNAL_JOB_OBSERVED)
    def job_observed(self, observed: signals.JobObserved) -> None:
        self._accept(observed)

    @workflow.signal(name=signals.SIGNAL_JOB_DELETED)
    def job_deleted(self, deleted: signals.JobDeleted) -> None:
        self._accept(deleted)

    @workflow.signal(name=signals.SIGNAL_PODS_CHANGED)
    def pods_changed(self, changed: signals.PodsChanged) -> None:
        self._accept(changed)

    @workflow.signal(name=signals.SIGNAL_POD_GROUP_OBSERVED)
    def pod_group_observed(self, observed: signals.PodGroupObserved) -> None:
        self._accept(observed)

    @workflow.signal(name=signals.SIGNAL_COMMAND_ISSUED)
    def command_issued(self, command: signals.CommandIssued) -> None:
        self._accept(command)

    # -- commands as updates (validated, answered once carried out) -----------------------------

    def _refuse(self, action: Action) -> None:
        why = controller.refusal(self._state, action)
        if why is not None:
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)

    async def _command(self, action: Action, cmd: signals.JobCommand) -> signals.JobCommandResult:
        before = str(self._state.phase or "Pending")
        ticket = self._accept(
            signals.CommandIssued(action=action, reason=cmd.reason, message=cmd.message)
        )
        self._answers[ticket] = ""
        # The run loop executes commands in arrival order with every other input.
        await workflow.wait_condition(lambda: self._processed >= ticket)
        return signals.JobCommandResult(
            action=action, phase_before=before, phase_after=self._answers.pop(ticket)
        )

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
        backlog = len(self._inbox) + (1 if self._busy else 0)
        return controller.view(self._state).model_copy(update={"backlog": backlog})

    @workflow.query
    def delayed_actions(self) -> list[signals.DelayedActionView]:
        return controller.view(self._state).delayed

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
                    self._start_timer(effect)
                case fx.CancelTimer():
                    task = self._timers.pop(effect.key, None)
                    if task is not None:
                        task.cancel()
                case fx.PhaseChanged():
                    workflow.upsert_search_attributes(
                        [search_attributes.JOB_PHASE.value_set(effect.phase)]
                    )
                    workflow.set_current_details(f"{effect.phase}: {effect.reason}")
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
                case _:
                    assert_never(effect)
        except ActivityError as e:
            cause = str(e.cause) if e.cause is not None else str(e)
            # Handled next, before anything else: Volcano's requeue budget is spent.
            self._inbox.insert(0, (0, controller.ActionFailed(effect=effect.kind, error=cause)))

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

    def _start_timer(self, effect: fx.StartTimer) -> None:
        old = self._timers.pop(effect.key, None)
        if old is not None:
            old.cancel()
        self._timers[effect.key] = asyncio.create_task(self._sleep(effect))

    async def _sleep(self, effect: fx.StartTimer) -> None:
        delay = effect.fires_at - workflow.now()
        if delay > timedelta(0):
            await workflow.sleep(delay, summary=effect.summary)
        self._timers.pop(effect.key, None)
        self._inbox.append((0, controller.TimerFired(key=effect.key, timer=effect.timer)))


def _phase(status: object) -> str:
    state = getattr(status, "state", None)
    return str(getattr(state, "phase", "") or "")


def _plugins(job: dict[str, object]) -> list[str]:
    spec = job.get("spec")
    plugins = spec.get("plugins") if isinstance(spec, dict) else None
    return list(plugins) if isinstance(plugins, dict) else []
