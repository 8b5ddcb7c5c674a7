"""JobWorkflow: one durable workflow per Volcano Job (id `vcjob/<namespace>/<name>`).

It runs on the entity shell (`workflows.entity`) with Volcano's job core
(`controllers.job`). What is its own: the Volcano commands as validated updates, the status
queries, and the effects only a Volcano Job has (status, PodGroup, plugins, volumes, pods).
A copy dispatched here from a manager also has its lease's timer (`controllers.job.lease`),
restored with the others after continue-as-new; a Job without a lease never arms it, so no
history from before it changes.

Patches in force:
- `caldera-job-io` (asked at a run's first sight of a job with volumes or plugins, kept in
  `JobRecord.job_io`): the volumes step runs before the PodGroup and its claim names, and the
  plugins step's markers, come back to the core as inputs (`controllers.job.results`), which
  keeps them in `status.controlledResources`. A history from before replays without them.
- `caldera-one-write-per-decision` (`workflows.writes`; asked at a run's first decision with
  two short writes in a row, unless its settings say so, and a yes kept in them): the
  consecutive status, PodGroup and pod writes of one decision go by one local activity.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.common import SearchAttributeUpdate
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import jobs, volume_claims
    from activities.controllers.plugins import PluginsInput, ensure_plugins, remove_plugins
    from activities.messages import DeleteJobInput, JobInput
    from controllers import effects as fx
    from controllers.job import clock, controller, lease, markers, naming, results, views
    from controllers.job import effects as job_fx
    from controllers.job.state import JobRecord
    from controllers.outcomes import AnyOutcome
    from models import vcjob
    from models.bus import Action
    from models.signals import job as job_signals
    from service import search_attributes
    from workflows import activity_call, jobwrites, writes
    from workflows.commands import VolcanoCommands
    from workflows.entity import Entity
    from workflows.jobshell import JobShell

JOB_IO = "caldera-job-io"
LEGACY = "caldera-legacy-pod-group"


class JobWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.job.JobStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: job_signals.ControllerSettings = job_signals.ControllerSettings()
    state: JobRecord | None = None  # None: a new job
    observed: job_signals.JobObserved | None = None  # None: wait for the forwarder's first signal
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=job_signals.JOB_WORKFLOW)
class JobWorkflow(JobShell[JobRecord], VolcanoCommands):
    API_VERSION = vcjob.API_VERSION
    KIND = vcjob.KIND
    MODEL = vcjob.Job
    _entity: Entity[JobRecord, controller.Input, job_fx.Own]

    @workflow.init
    def __init__(self, start: JobWorkflowInput) -> None:
        self._one_write: bool | None = None  # this run's answer to ONE_WRITE; None: not asked
        state = start.state or JobRecord(settings=start.settings)
        self._entity = Entity[JobRecord, controller.Input, job_fx.Own](
            self, state, start.max_history, progress=JobRecord.pod_counts
        )
        if start.observed is not None:
            self._observe(start.observed)

    @workflow.run
    async def run(self, start: JobWorkflowInput) -> None:
        state = self._entity.state
        await self._entity.run([*clock.restored_timers(state), *lease.restored(state)])

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self, state: JobRecord, item: controller.Input | AnyOutcome, now: datetime
    ) -> controller.Decision:
        if markers.asks_io(state, item):
            # Asked once per run, at the same input on every replay: a run from before the
            # patch replays without it, and a job with neither volumes nor plugins never asks.
            state = state.model_copy(update={"job_io": workflow.patched(JOB_IO)})
        if naming.asks_legacy(state, item):
            state = state.model_copy(update={"legacy_pod_groups": workflow.patched(LEGACY)})
        return self._writes_together(controller.decide(state, item, now))

    def _writes_together(self, decision: controller.Decision) -> controller.Decision:
        """Ask the patch once, at the run's first decision with writes to batch, the same
        input on every replay; a yes is kept in the settings the run carries on, so neither
        a later decision nor the next run asks again."""
        settings = decision.state.settings
        if settings.one_write_per_decision or self._one_write is not None:
            return decision
        if not jobwrites.pair(decision.effects, settings):
            return decision
        self._one_write = workflow.patched(writes.ONE_WRITE)
        if not self._one_write:
            return decision
        settings = settings.model_copy(update={"one_write_per_decision": True})
        state = decision.state.model_copy(update={"settings": settings})
        return decision.model_copy(update={"state": state})

    def batch_writes(self, effects: Sequence[object]) -> list[writes.Write]:
        """The status, PodGroup and pod writes at the head of `effects`, where they go
        together: the patch in force and the run's writes local."""
        state = self._entity.state
        if not state.settings.one_write_per_decision:
            return []
        batch = jobwrites.leading(effects, state.identity, state.settings)
        return batch if len(batch) > 1 and activity_call.local() else []

    def carry(
        self, state: JobRecord, start_over: job_signals.JobObserved | None, max_history: int
    ) -> JobWorkflowInput:
        return JobWorkflowInput(
            settings=state.settings,
            state=None if start_over else state,
            observed=start_over,
            max_history=max_history,
        )

    def local_writes(self) -> bool:
        return self._entity.state.settings.local_writes

    def answer(self, state: JobRecord) -> str:
        return str(state.phase or "Pending")

    def attributes(self, state: JobRecord) -> list[SearchAttributeUpdate[Any]]:
        return [search_attributes.QUEUE.value_set(state.job.spec.queue or "" if state.job else "")]

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=job_signals.SIGNAL_PODS_CHANGED)
    def pods_changed(self, changed: job_signals.PodsChanged) -> None:
        self._entity.accept(changed)

    @workflow.signal(name=job_signals.SIGNAL_POD_GROUP_OBSERVED)
    def pod_group_observed(self, observed: job_signals.PodGroupObserved) -> None:
        self._entity.accept(observed)

    # -- commands as updates (`workflows.commands`: validated, answered once carried out) --------

    def _refuse(self, action: Action) -> None:
        why = views.refusal(self._entity.state, action)
        if why is not None:
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)

    @workflow.query
    def status(self) -> job_signals.JobView:
        view = views.view(self._entity.state)
        return view.model_copy(update={"backlog": self._entity.inbox.backlog})

    @workflow.query
    def delayed_actions(self) -> list[job_signals.DelayedActionView]:
        return views.view(self._entity.state).delayed

    # -- the effects only a Volcano Job has ------------------------------------------------------

    def _report(self, result: results.AnyResult) -> None:
        """An activity's answer that the core decides on: handled next, before anything else."""
        self._entity.inbox.internal(result, first=True)

    async def apply(self, effect: job_fx.Own) -> None:
        who = self._entity.state.identity
        match effect:
            case (
                job_fx.WriteStatus()
                | job_fx.EnsurePodGroup()
                | job_fx.DeletePodGroup()
                | job_fx.CreatePods()
                | job_fx.DeletePods()
            ):
                await jobwrites.write(effect, who, self._entity.state.settings).alone()
            case job_fx.EnsurePlugins():
                applied = await activity_call.run(
                    ensure_plugins,
                    PluginsInput(job=effect.job),
                    options.KUBE_WRITE,
                    "ensure plugins " + ",".join(sorted(effect.job.spec.plugins or {})),
                )
                if self._entity.state.job_io:
                    self._report(results.PluginsApplied(controlled=applied.controlled))
            case job_fx.RemovePlugins():
                await activity_call.run(
                    remove_plugins,
                    PluginsInput(job=effect.job),
                    options.KUBE_WRITE,
                    "remove plugins " + ",".join(sorted(effect.job.spec.plugins or {})),
                )
            case job_fx.EnsureVolumes():
                ensured = await activity_call.run(
                    volume_claims.ensure_volumes,
                    JobInput(job=effect.job),
                    options.KUBE_WRITE,
                    "ensure volumes",
                )
                if self._entity.state.job_io:
                    self._report(results.VolumesEnsured(claims=ensured.claims))
            case fx.DeleteJob():
                await activity_call.run(
                    jobs.delete_job,
                    DeleteJobInput(namespace=effect.namespace, name=effect.name, uid=effect.uid),
                    options.KUBE_WRITE,
                    "delete job: ttlSecondsAfterFinished expired",
                )
            case _:
                assert_never(effect)
