"""SchedulerWorkflow on the time-skipping server: sessions are a fake `schedule_session` that
places pods, binding a fake `bind_session` that records what it was asked to bind; placements
are assumed before they are bound, kept until seen bound, and dropped when binding fails."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest_asyncio
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.messages import (
    BindSessionInput,
    BindSessionResult,
    JobPlacements,
    SessionInput,
    SessionReport,
)
from controllers.scheduler.session import SchedulerState
from models import signals, task_queues
from workflows import sandbox
from workflows.scheduler import SchedulerWorkflow, SchedulerWorkflowInput


@dataclass
class Cluster:
    """What the fake session reads: pods to place (once) and pods seen bound."""

    to_place: dict[str, list[signals.PlacedPod]] = field(default_factory=dict)  # job id → pods
    bound: list[str] = field(default_factory=list)
    sessions: list[SessionInput] = field(default_factory=list)
    binds: list[BindSessionInput] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)  # "<ns>/<pod>" → why it fails to bind
    binding_broken: bool = False  # every bind_session attempt fails


def fake_session(cluster: Cluster) -> Callable[[SessionInput], SessionReport]:
    @activity.defn(name="schedule_session")
    def schedule_session(request: SessionInput) -> SessionReport:
        cluster.sessions.append(request)
        jobs = [
            JobPlacements(job_workflow_id=job, namespace="ns", placements=pods)
            for job, pods in sorted(cluster.to_place.items())
        ]
        cluster.to_place.clear()
        return SessionReport(jobs=jobs, bound=list(cluster.bound), pending=0)

    return schedule_session


def fake_binding(cluster: Cluster) -> Callable[[BindSessionInput], BindSessionResult]:
    @activity.defn(name="bind_session")
    def bind_session(request: BindSessionInput) -> BindSessionResult:
        cluster.binds.append(request)
        if cluster.binding_broken:
            raise ApplicationError("apiserver unreachable", non_retryable=True)
        pods = [f"{j.namespace}/{p.pod}" for j in request.jobs for p in j.placements]
        failed = {pod: why for pod, why in cluster.refuse.items() if pod in pods}
        return BindSessionResult(bound=len(pods) - len(failed), failed=failed)

    return bind_session


@dataclass
class Scheduler:
    env: WorkflowEnvironment
    queue: str
    cluster: Cluster
    handle: WorkflowHandle[SchedulerWorkflow, None]

    async def session(self) -> None:
        await self.handle.signal(SchedulerWorkflow.work_arrived, signals.WorkArrived())

    async def assumed(self) -> dict[str, str]:
        return await self.handle.query(SchedulerWorkflow.assumed)


@pytest_asyncio.fixture
async def scheduler(env: WorkflowEnvironment) -> AsyncIterator[Scheduler]:
    cluster = Cluster()
    queue = f"tq-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=4) as pool:
        async with (
            Worker(
                env.client,
                task_queue=queue,
                workflows=[SchedulerWorkflow],
                workflow_runner=sandbox.runner(),
                activity_executor=pool,
            ),
            Worker(
                env.client,
                task_queue=task_queues.SCHEDULER,
                activities=[fake_session(cluster), fake_binding(cluster)],
                activity_executor=pool,
            ),
        ):
            handle = await env.client.start_workflow(
                SchedulerWorkflow.run,
                SchedulerWorkflowInput(state=SchedulerState(name="volcano")),
                id=f"scheduler/{uuid.uuid4().hex[:6]}",
                task_queue=queue,
            )
            yield Scheduler(env, queue, cluster, handle)
            await handle.terminate()


def placed(pod: str, node: str) -> signals.PlacedPod:
    return signals.PlacedPod(pod=pod, uid=f"uid-{pod}", node=node)


async def until_true(probe: Callable[[], Awaitable[bool]], what: str, tries: int = 100) -> None:
    for _ in range(tries):
        if await probe():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


async def test_placements_are_assumed_then_bound_in_one_activity_and_confirmed(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.to_place["vcjob/ns/train"] = [placed("a", "n1"), placed("b", "n2")]
    cluster.to_place["vcjob/ns/eval"] = [placed("c", "n1")]
    await scheduler.session()

    async def bound() -> bool:
        return len(cluster.binds) == 1

    await until_true(bound, "the session's placements bound")
    [request] = cluster.binds
    assert [(j.job_workflow_id, [p.pod for p in j.placements]) for j in request.jobs] == [
        ("vcjob/ns/eval", ["c"]),
        ("vcjob/ns/train", ["a", "b"]),
    ]
    assert await scheduler.assumed() == {"ns/a": "n1", "ns/b": "n2", "ns/c": "n1"}

    # The next session is told what it must respect, then sees `a` bound: confirmed.
    cluster.bound = ["ns/a"]
    await scheduler.session()

    async def confirmed() -> bool:
        return await scheduler.assumed() == {"ns/b": "n2", "ns/c": "n1"}

    await until_true(confirmed, "bound pod's assumption confirmed")
    later = [s for s in cluster.sessions if "ns/a" in s.assumed]
    assert later and later[-1].assumed == {"ns/a": "n1", "ns/b": "n2", "ns/c": "n1"}
    assert len(cluster.binds) == 1  # a session that placed nothing binds nothing


async def test_a_pod_that_could_not_be_bound_is_placed_again(scheduler: Scheduler) -> None:
    cluster = scheduler.cluster
    cluster.refuse = {"ns/x": "failed to bind to node n1: node not found"}
    cluster.to_place["vcjob/ns/run"] = [placed("x", "n1"), placed("y", "n2")]
    await scheduler.session()

    async def dropped() -> bool:
        return bool(cluster.binds) and await scheduler.assumed() == {"ns/y": "n2"}

    await until_true(dropped, "the refused pod's assumption dropped, the other kept")


async def test_binding_that_fails_drops_every_assumption_of_its_session(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.binding_broken = True
    cluster.to_place["vcjob/ns/run"] = [placed("x", "n1"), placed("y", "n2")]
    await scheduler.session()

    async def dropped() -> bool:
        return bool(cluster.binds) and await scheduler.assumed() == {}

    await until_true(dropped, "nothing assumed once its binding failed")


async def test_a_failed_bind_reported_by_a_job_drops_the_assumption(scheduler: Scheduler) -> None:
    """A BatchJobWorkflow or an older JobWorkflow that bound a gang itself reports back."""
    scheduler.cluster.to_place["vcjob/ns/run"] = [placed("p", "n3")]
    await scheduler.session()

    async def assumed() -> bool:
        return await scheduler.assumed() == {"ns/p": "n3"}

    await until_true(assumed, "placement assumed")
    await scheduler.handle.signal(
        SchedulerWorkflow.bind_failed, signals.BindFailed(pods={"ns/p": "node n3 is gone"})
    )

    async def dropped() -> bool:
        return await scheduler.assumed() == {}

    await until_true(dropped, "assumption dropped after the bind failed")
