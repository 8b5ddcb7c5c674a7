"""A BatchJobWorkflow under test: the real workflow, fake activities that record every call and
answer like a healthy apiserver, and helpers that speak the forwarder's signals."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.messages import (
    BatchJobInput,
    BatchJobStatusInput,
    CreateJobPodsInput,
    CreateJobPodsResult,
    DeleteJobPodsInput,
    Done,
    GangMinCountInput,
    JobWorkloadResult,
    RemoveFinalizersInput,
)
from models import batchv1
from models.signals import batchjob as batchjob_signals
from models.signals import job as job_signals
from tests.builders import make_batch_job
from tests.workflows.harness import fake_worker, settled
from workflows.batchjob import BatchJobWorkflow, BatchJobWorkflowInput


@dataclass
class Calls:
    """Every fake activity call, in order: (activity name, input)."""

    log: list[tuple[str, Any]] = field(default_factory=list)

    def named(self, name: str) -> list[Any]:
        return [arg for n, arg in self.log if n == name]

    def created(self) -> list[str]:
        return [p.name for r in self.named("create_job_pods") for p in r.pods]

    def statuses(self) -> list[dict[str, Any]]:
        return [r.status.dump() for r in self.named("write_batch_job_status")]


def fakes(calls: Calls) -> list[Callable[..., Any]]:
    @activity.defn(name="create_job_pods")
    def create_job_pods(r: CreateJobPodsInput) -> CreateJobPodsResult:
        calls.log.append(("create_job_pods", r))
        return CreateJobPodsResult(
            created={p.name: batchv1.CreatedPod(uid=f"uid-{p.name}") for p in r.pods}, failed={}
        )

    @activity.defn(name="delete_job_pods")
    def delete_job_pods(r: DeleteJobPodsInput) -> Done:
        calls.log.append(("delete_job_pods", r))
        return Done()

    @activity.defn(name="remove_pod_finalizers")
    def remove_pod_finalizers(r: RemoveFinalizersInput) -> Done:
        calls.log.append(("remove_pod_finalizers", r))
        return Done()

    @activity.defn(name="write_batch_job_status")
    def write_batch_job_status(r: BatchJobStatusInput) -> Done:
        calls.log.append(("write_batch_job_status", r))
        return Done()

    @activity.defn(name="ensure_job_workload")
    def ensure_job_workload(r: BatchJobInput) -> JobWorkloadResult:
        calls.log.append(("ensure_job_workload", r))
        return JobWorkloadResult(pod_group_uid="pg-uid")

    @activity.defn(name="patch_job_gang_min_count")
    def patch_job_gang_min_count(r: GangMinCountInput) -> Done:
        calls.log.append(("patch_job_gang_min_count", r))
        return Done()

    def done(name: str) -> Callable[..., Any]:
        @activity.defn(name=name)
        def record(r: dict[str, Any]) -> Done:
            calls.log.append((name, r))
            return Done()

        return record

    return [
        create_job_pods,
        delete_job_pods,
        remove_pod_finalizers,
        write_batch_job_status,
        ensure_job_workload,
        patch_job_gang_min_count,
        done("record_event"),
        done("delete_batch_job"),
    ]


@dataclass
class BatchHarness:
    env: WorkflowEnvironment
    task_queue: str
    calls: Calls

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, env: WorkflowEnvironment) -> AsyncIterator[BatchHarness]:
        calls = Calls()
        async with fake_worker(env, BatchJobWorkflow, fakes(calls), threads=8) as queue:
            yield cls(env, queue, calls)

    async def submit(self, max_history: int = 0, **spec: Any) -> WorkflowHandle[Any, Any]:
        manifest = manifest_of(**spec)
        return await self.env.client.start_workflow(
            BatchJobWorkflow.run,
            BatchJobWorkflowInput(max_history=max_history),
            id=f"job/test/{uuid.uuid4().hex[:8]}",
            task_queue=self.task_queue,
            start_signal=job_signals.SIGNAL_JOB_OBSERVED,
            start_signal_args=[job_signals.JobObserved(job=manifest)],
        )


def manifest_of(**spec: Any) -> dict[str, Any]:
    """The Job `train` in namespace `test` as the forwarder sends it."""
    return make_batch_job("train", namespace="test").spec(**spec).manifest()


async def observed(handle: WorkflowHandle[Any, Any], **spec: Any) -> None:
    """The Job seen again, with this spec."""
    manifest = manifest_of(**spec)
    await handle.signal(job_signals.SIGNAL_JOB_OBSERVED, job_signals.JobObserved(job=manifest))


def pod(name: str, phase: str = "Running", **extra: Any) -> batchjob_signals.BatchPodSnapshot:
    """A pod as the forwarder reports it (with the tracking finalizer unless told)."""
    fields: dict[str, Any] = {"finalizer": True, "ready": phase == "Running", **extra}
    if phase == "Failed" and "exits" not in fields:
        fields["exits"] = [batchjob_signals.ContainerExitSnapshot(name="main", exit_code=1)]
    return batchjob_signals.BatchPodSnapshot(name=name, uid=f"uid-{name}", phase=phase, **fields)


async def pods_changed(
    handle: WorkflowHandle[Any, Any], *pods: batchjob_signals.BatchPodSnapshot
) -> None:
    await handle.signal(
        job_signals.SIGNAL_PODS_CHANGED, batchjob_signals.BatchPodsChanged(pods=list(pods))
    )


async def view(handle: WorkflowHandle[Any, Any]) -> batchjob_signals.BatchJobView:
    result: batchjob_signals.BatchJobView = await handle.query(BatchJobWorkflow.status)
    return result


async def until(
    handle: WorkflowHandle[Any, Any],
    check: Callable[[batchjob_signals.BatchJobView], bool],
    what: str,
    timeout: float = 30,
) -> batchjob_signals.BatchJobView:
    return await settled(lambda: view(handle), check, what, timeout)
