"""A JobWorkflow under test: the real workflow, fake activities that record every call and
answer like a healthy apiserver, and helpers that speak the forwarder's signals."""

from __future__ import annotations

import asyncio
import contextlib
import typing
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.controllers import writes
from activities.controllers.plugins import PluginsInput, PluginsResult
from activities.controllers.volume_claims import missing_claim
from activities.messages import (
    BindPlacementsInput,
    BindPodsResult,
    CheckPodsResult,
    CreatePodsInput,
    CreatePodsResult,
    DeletePodsResult,
    Done,
    JobInput,
    PodsInput,
    VolumesResult,
    WritesInput,
    WritesResult,
    WriteStep,
)
from models.signals import job as job_signals
from models.signals.job import PodSnapshot
from workflows import sandbox
from workflows.job import JobWorkflow, JobWorkflowInput
from workflows.queue import QueueWorkflow

UID = "uid-1"


@dataclass
class Calls:
    """Every fake activity call, in order: (activity name, input)."""

    log: list[tuple[str, Any]] = field(default_factory=list)
    gone: bool = False  # True: every write answers as into a deleted namespace
    # Activity name → the error each of its calls fails with (made afresh for every call).
    failing: dict[str, Callable[[], Exception]] = field(default_factory=dict)
    missing_claims: set[str] = field(default_factory=set)  # named claims that do not exist

    def write(self, name: str, arg: Any) -> None:
        self.log.append((name, arg))
        if self.gone:
            raise ApplicationError(
                f"{name}: namespace is being terminated", type="NamespaceGone", non_retryable=True
            )
        if name in self.failing:
            raise self.failing[name]()

    def named(self, name: str) -> list[Any]:
        return [arg for n, arg in self.log if n == name]


def fakes(calls: Calls) -> list[Callable[..., Any]]:
    @activity.defn(name="create_pods")
    def create_pods(r: CreatePodsInput) -> CreatePodsResult:
        calls.write("create_pods", r)
        name = r.job.metadata.name
        return CreatePodsResult(created=[f"{name}-{t}-{i}" for t, i in r.pods], existing=[])

    @activity.defn(name="check_pods")
    def check_pods(r: PodsInput) -> CheckPodsResult:
        """Every pod asked about is absent (asked after a refused creation)."""
        calls.log.append(("check_pods", r))
        return CheckPodsResult(absent=r.names)

    @activity.defn(name="delete_pods")
    def delete_pods(r: PodsInput) -> DeletePodsResult:
        calls.write("delete_pods", r)
        return DeletePodsResult(deleted=r.names, gone=[])

    def done(name: str) -> Callable[..., Any]:
        """A fake that records its input (as a plain mapping) and succeeds."""

        @activity.defn(name=name)
        def record(r: dict[str, Any]) -> Done:
            calls.write(name, r)
            return Done()

        return record

    @activity.defn(name="bind_placements")
    def bind_placements(r: BindPlacementsInput) -> BindPodsResult:
        """Binds everything but pods placed on a node named `gone`."""
        calls.log.append(("bind_placements", r))
        failed = {
            p.pod: f"failed to bind to node {p.node}: node not found"
            for p in r.placements
            if p.node == "gone"
        }
        return BindPodsResult(
            bound=[p.pod for p in r.placements if p.pod not in failed], failed=failed
        )

    @activity.defn(name="ensure_plugins")
    def ensure_plugins(r: PluginsInput) -> PluginsResult:
        calls.log.append(("ensure_plugins", r))
        names = sorted(r.job.spec.plugins or {})
        return PluginsResult(controlled={f"plugin-{n}": n for n in names if n != "hcclrank"})

    @activity.defn(name="ensure_volumes")
    def ensure_volumes(r: JobInput) -> VolumesResult:
        """Names each unnamed claim `<job>-pvc-fake<i>`, as the real one draws a name; a
        claim in `missing_claims` fails the attempt as the real one does."""
        calls.write("ensure_volumes", r)
        claims = [
            v.volume_claim_name or f"{r.job.metadata.name}-pvc-fake{i}"
            for i, v in enumerate(r.job.spec.volumes or [])
        ]
        for name in claims:
            if name in calls.missing_claims:
                raise ApplicationError(missing_claim(name), type="ClaimNotFound")
        return VolumesResult(claims=claims)

    @activity.defn(name="remove_plugins")
    def remove_plugins(r: PluginsInput) -> PluginsResult:
        calls.log.append(("remove_plugins", r))
        return PluginsResult(controlled={})

    alone: dict[str, Callable[..., Any]] = {
        "create_pods": create_pods,
        "delete_pods": delete_pods,
        "check_pods": check_pods,
        "ensure_plugins": ensure_plugins,
        "remove_plugins": remove_plugins,
        **{
            name: done(name)
            for name in (
                "ensure_pod_group",
                "delete_pod_group",
                "write_job_status",
                "record_event",
                "delete_job",
                "write_queue_status",
                "patch_queue",
                "mark_unschedulable",
            )
        },
        "ensure_volumes": ensure_volumes,
        "bind_placements": bind_placements,
    }
    return [*alone.values(), together(alone)]


def together(alone: dict[str, Callable[..., Any]]) -> Callable[..., Any]:
    """`apply_writes`, the real one's order and error handling (`activities.controllers.writes`)
    over the fakes of the steps' own activities: every step is recorded under its own activity's
    name
    and input, as if it had run alone."""
    convert = pydantic_data_converter.payload_converter

    def run(step: WriteStep) -> CreatePodsResult | DeletePodsResult | None:
        fake = alone[step.activity]
        # The input as the fake would get it from the server: through the payload converter.
        wants = next(iter(typing.get_type_hints(fake).values()))
        (arg,) = convert.from_payloads(convert.to_payloads([step.input]), [wants])
        result = fake(arg)
        return result if isinstance(result, CreatePodsResult | DeletePodsResult) else None

    @activity.defn(name="apply_writes")
    def apply_writes(r: WritesInput) -> WritesResult:
        return writes.carry_out(r, run)

    return apply_writes


@contextlib.asynccontextmanager
async def serving(
    env: WorkflowEnvironment,
    queue: str,
    calls: Calls,
    refused: frozenset[str] = frozenset(),
    cached: bool = True,
) -> AsyncIterator[None]:
    """A worker for the job and queue workflows on `queue`, with fake activities; `refused`:
    patches new runs take the old branch of, as runs of a worker from before them would;
    `cached` False: no workflow stays cached, so the next task goes to any worker at once (a
    cached one waits out its sticky queue's timeout, which the test server never skips)."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[JobWorkflow, QueueWorkflow],
            workflow_runner=sandbox.runner(),
            activities=fakes(calls),
            activity_executor=pool,
            patch_activation_callback=lambda asked: asked.patch_id not in refused,
            max_cached_workflows=1000 if cached else 0,
        ):
            yield


@dataclass
class Harness:
    env: WorkflowEnvironment
    task_queue: str
    calls: Calls

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls, env: WorkflowEnvironment, refused: frozenset[str] = frozenset()
    ) -> AsyncIterator[Harness]:
        calls = Calls()
        queue = f"tq-{uuid.uuid4()}"
        async with serving(env, queue, calls, refused):
            yield cls(env, queue, calls)

    async def submit(
        self,
        manifest: dict[str, Any],
        settings: job_signals.ControllerSettings | None = None,
        max_history: int = 0,
        attributes: TypedSearchAttributes = TypedSearchAttributes.empty,
    ) -> WorkflowHandle[Any, Any]:
        manifest = {**manifest, "metadata": {"uid": UID, "generation": 1, **manifest["metadata"]}}
        return await self.env.client.start_workflow(
            JobWorkflow.run,
            JobWorkflowInput(
                settings=settings
                or job_signals.ControllerSettings(
                    scheduler_override="default-scheduler",
                    local_pod_writes=True,
                    local_writes=True,
                    one_write_per_decision=True,
                ),
                max_history=max_history,
            ),
            id=f"vcjob/test/{uuid.uuid4().hex[:8]}",
            task_queue=self.task_queue,
            start_signal=job_signals.SIGNAL_JOB_OBSERVED,
            start_signal_args=[job_signals.JobObserved(job=manifest)],
            search_attributes=attributes,
        )


def pod(
    job: str, task: str, index: int, phase: str = "Running", version: int = 0, **extra: Any
) -> PodSnapshot:
    name = f"{job}-{task}-{index}"
    return PodSnapshot(
        name=name,
        uid=f"{name}-uid-{version}",
        job_uid=UID,
        task=task,
        index=index,
        job_version=version,
        phase=phase,
        ready=phase == "Running",
        **extra,
    )


async def pods_changed(handle: WorkflowHandle[Any, Any], *pods: PodSnapshot) -> None:
    await handle.signal(job_signals.SIGNAL_PODS_CHANGED, job_signals.PodsChanged(pods=list(pods)))


async def view(handle: WorkflowHandle[Any, Any]) -> job_signals.JobView:
    result: job_signals.JobView = await handle.query(JobWorkflow.status)
    return result


class _Settles(Protocol):
    backlog: int


V = TypeVar("V", bound=_Settles)


@contextlib.asynccontextmanager
async def fake_worker(
    env: WorkflowEnvironment,
    workflow: type,
    activities: list[Callable[..., Any]],
    threads: int = 4,
) -> AsyncIterator[str]:
    """One workflow type, sandboxed, with recording fakes on a fresh task queue (yielded)."""
    queue = f"tq-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=threads) as pool:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[workflow],
            workflow_runner=sandbox.runner(),
            activities=activities,
            activity_executor=pool,
        ):
            yield queue


async def settled(
    read: Callable[[], Awaitable[V]], check: Callable[[V], bool], what: str, timeout: float
) -> V:
    """Poll a workflow's view (real time, no skipping) until `check` holds and every input
    received so far has been carried out; shared by the job and batch-job harnesses."""
    deadline = asyncio.get_running_loop().time() + timeout
    last = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            last = await read()
        except RPCError as e:
            # A loaded machine can time a query out while its workflow task is in flight:
            # poll again, within the same deadline.
            if (
                "deadline exceeded" not in str(e).lower()
                and "timeout expired" not in str(e).lower()
            ):
                raise
            continue
        if last.backlog == 0 and check(last):
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {what}; last status {last}")


async def last_run(
    client: Client, workflow_id: str, max_history: int, timeout: float = 30
) -> WorkflowHandle[Any, Any]:
    """The latest run of a workflow that continues as new, once it is quiet: its history is
    under the budget and its last workflow task completed. Read from the run's history, not
    by query: the time-skipping test server never answers a query that meets the task which
    continues a run as new, so tests query only a run that will not continue again.

    Not from describe either: that server's describe leaves `pending_workflow_task` unset and
    counts no signal it holds while a task is in flight, so a run about to continue as new
    looked quiet (the cause of test_continue_as_new_keeps_the_deadline_timer's failures: its
    query met the continue-as-new and was never answered, with 20-odd inputs seemingly not
    carried out; the next run held all of them). The handle names the run by its id."""
    latest = client.get_workflow_handle(workflow_id)
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        run = (await latest.describe()).run_id
        handle = client.get_workflow_handle(workflow_id, run_id=run)
        seen = await _quiet(handle, max_history)
        # The server appends a task's completion and the run's ContinuedAsNew one after the
        # other: quiet only if the run is still the latest, running (so not closed), and its
        # history unchanged.
        again = await latest.describe()
        running = again.status == WorkflowExecutionStatus.RUNNING and again.run_id == run
        if seen is not None and running and await _quiet(handle, max_history) == seen:
            return handle
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {workflow_id} settled in one run")


_TASK_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}


async def _quiet(handle: WorkflowHandle[Any, Any], max_history: int) -> int | None:
    """The run's history length if it is under the budget and its last workflow task event
    is a completion; None otherwise."""
    events = [e async for e in handle.fetch_history_events()]
    tasks = [e.event_type for e in events if e.event_type in _TASK_EVENTS]
    done = bool(tasks) and tasks[-1] == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    return len(events) if done and len(events) < max_history else None


async def until(
    handle: WorkflowHandle[Any, Any],
    check: Callable[[job_signals.JobView], bool],
    what: str,
    timeout: float = 30,
) -> job_signals.JobView:
    return await settled(lambda: view(handle), check, what, timeout)


def phase_is(phase: str) -> Callable[[job_signals.JobView], bool]:
    return lambda v: v.phase == phase


SKIP_PAST = timedelta(minutes=6)
