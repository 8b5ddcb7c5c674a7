"""BatchJobWorkflow: one durable workflow per batch/v1 Job whose `spec.managedBy` is
Caldera's (id `job/<namespace>/<name>`).

It runs on the entity shell (`workflows.entity`) with the batch/v1 job core
(`controllers.batchjob`). What is its own: the status query and the effects only a batch/v1
Job has (pods with tracking finalizers, the status subresource, the gang's PodGroup). Activity
outcomes the core needs (pods created, finalizers removed) go back into the inbox ahead of
everything else.

Patches in force: `unique-pod-names` (pod names one to one in the Job's sequence; before it,
hashed names, which could repeat within a large Job); `caldera-workload-with-job` (a Job with
`spec.scheduling` gets a Kubernetes Workload and PodGroup, `controllers.batchjob.workload`;
asked only when such a Job is observed, so no other Job's history gains a marker).
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import batchjobs, batchpods
    from activities.messages import (
        BatchJobInput,
        BatchJobStatusInput,
        CreateJobPodsInput,
        DeleteJobInput,
        DeleteJobPodsInput,
        GangMinCountInput,
        RemoveFinalizersInput,
    )
    from controllers import effects as fx
    from controllers.batchjob import controller, tracking, workload
    from controllers.batchjob import effects as batch_fx
    from controllers.batchjob.state import BatchJobRecord
    from controllers.outcomes import AnyOutcome
    from controllers.parsed import ParsedJob
    from models import batchv1
    from models.signals import batchjob as batchjob_signals
    from models.signals import job as job_signals
    from workflows import activity_call
    from workflows.entity import Entity
    from workflows.jobshell import JobShell


UNIQUE_POD_NAMES = "unique-pod-names"
WORKLOAD_WITH_JOB = "caldera-workload-with-job"


class BatchJobWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.batchjob.BatchJobStart`, which must stay a subset of these fields
    (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: BatchJobRecord | None = None  # None: a new job
    observed: job_signals.JobObserved | None = None  # None: wait for the forwarder's first signal
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=batchjob_signals.BATCH_JOB_WORKFLOW)
class BatchJobWorkflow(JobShell[BatchJobRecord]):
    API_VERSION = batchv1.API_VERSION
    KIND = batchv1.KIND
    MODEL = batchv1.BatchJob
    _entity: Entity[BatchJobRecord, controller.AnyInput, batch_fx.Own]

    @workflow.init
    def __init__(self, start: BatchJobWorkflowInput) -> None:
        # Jobs started since this patch name their pods one to one in the sequence; a history
        # from before it replays with the hashed names it was recorded with.
        state = start.state or BatchJobRecord(unique_names=workflow.patched(UNIQUE_POD_NAMES))
        self._entity = Entity[BatchJobRecord, controller.AnyInput, batch_fx.Own](
            self, state, start.max_history, progress=BatchJobRecord.pod_counts
        )
        if start.observed is not None:
            self._observe(start.observed)

    @workflow.run
    async def run(self, start: BatchJobWorkflowInput) -> None:
        await self._entity.run(controller.restored_timers(self._entity.state))

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self, state: BatchJobRecord, item: controller.AnyInput | AnyOutcome, now: datetime
    ) -> controller.Decision:
        if (
            isinstance(item, ParsedJob)
            and not state.follow_scheduling
            and workload.wanted(item.job)
            and workflow.patched(WORKLOAD_WITH_JOB)
        ):
            # A history recorded before this change made no Workload for a Job with
            # spec.scheduling: it replays without the marker, and the Job keeps its path.
            state = state.model_copy(update={"follow_scheduling": True})
        return controller.decide(state, item, now)

    def carry(
        self, state: BatchJobRecord, start_over: job_signals.JobObserved | None, max_history: int
    ) -> BatchJobWorkflowInput:
        return BatchJobWorkflowInput(
            state=None if start_over else state, observed=start_over, max_history=max_history
        )

    def answer(self, state: BatchJobRecord) -> str:
        return tracking.phase(state.status)

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=job_signals.SIGNAL_PODS_CHANGED)
    def pods_changed(self, changed: batchjob_signals.BatchPodsChanged) -> None:
        self._entity.accept(changed)

    @workflow.query
    def status(self) -> batchjob_signals.BatchJobView:
        state = self._entity.state
        who = state.identity
        return batchjob_signals.BatchJobView(
            namespace=who.namespace,
            name=who.name,
            uid=who.uid,
            phase=tracking.phase(state.status),
            status=state.status.dump(),
            pods={
                n: p.phase + (" terminating" if p.deleting else "")
                for n, p in sorted(state.pods.items())
            },
            timers={k: at.isoformat() for k, at in sorted(state.timers.items())},
            backlog=self._entity.inbox.backlog,
        )

    # -- the effects only a batch/v1 Job has -----------------------------------------------------

    async def apply(self, effect: batch_fx.Own) -> None:
        who = self._entity.state.identity
        match effect:
            case batch_fx.CreatePods():
                await self._create(effect)
            case batch_fx.DeletePods():
                await activity_call.run(
                    batchpods.delete_job_pods,
                    DeleteJobPodsInput(
                        namespace=who.namespace,
                        job_name=who.name,
                        job_uid=who.uid,
                        names=effect.names,
                        keep_finalizers=effect.keep_finalizers,
                    ),
                    options.POD_BATCH,
                    f"delete {len(effect.names)} pods: {effect.why}",
                )
            case batch_fx.RemoveFinalizers():
                await activity_call.run(
                    batchpods.remove_pod_finalizers,
                    RemoveFinalizersInput(namespace=who.namespace, pods=effect.pods),
                    options.POD_BATCH,
                    f"remove the tracking finalizer of {len(effect.pods)} pods: {effect.why}",
                )
                removed = controller.FinalizersRemoved(pods=effect.pods)
                self._entity.inbox.internal(removed, first=True)
            case batch_fx.WriteStatus():
                await activity_call.run(
                    batchjobs.write_batch_job_status,
                    BatchJobStatusInput(
                        namespace=who.namespace, name=who.name, uid=who.uid, status=effect.status
                    ),
                    options.KUBE_WRITE,
                    f"write status {effect.summary}",
                )
            case fx.DeleteJob():
                await activity_call.run(
                    batchjobs.delete_batch_job,
                    DeleteJobInput(namespace=effect.namespace, name=effect.name, uid=effect.uid),
                    options.KUBE_WRITE,
                    "delete job: ttlSecondsAfterFinished expired",
                )
            case batch_fx.EnsureWorkload():
                await self._ensure_workload(effect.job)
            case batch_fx.PatchGangMinCount():
                patch = batchjobs.patch_job_gang_min_count
                count = GangMinCountInput(job=effect.job, min_count=effect.min_count)
                summary = f"gang minCount {effect.min_count} onto the Workload and PodGroup"
                await activity_call.run(patch, count, options.KUBE_WRITE, summary)
            case batch_fx.EnsurePodGroup():
                await activity_call.run(
                    batchjobs.ensure_batch_pod_group,
                    BatchJobInput(job=effect.job),
                    options.KUBE_WRITE,
                    f"ensure PodGroup {effect.job.pod_group_name}",
                )
            case _:
                assert_never(effect)

    async def _create(self, effect: batch_fx.CreatePods) -> None:
        result = await activity_call.run(
            batchpods.create_job_pods,
            CreateJobPodsInput(job=effect.job, pods=effect.pods, group=effect.group),
            options.POD_BATCH,
            f"create {len(effect.pods)} pods",
        )
        outcome = controller.PodsCreated(created=result.created, failed=result.failed)
        self._entity.inbox.internal(outcome, first=True)

    async def _ensure_workload(self, job: batchv1.BatchJob) -> None:
        """The PodGroup's uid goes back to the core first: its pods are made after it."""
        summary = f"ensure Workload {workload.workload_name(job)} and its PodGroup"
        ensure = batchjobs.ensure_job_workload
        made = await activity_call.run(ensure, BatchJobInput(job=job), options.KUBE_WRITE, summary)
        ensured = workload.WorkloadEnsured(uid=made.pod_group_uid)
        self._entity.inbox.internal(ensured, first=True)
