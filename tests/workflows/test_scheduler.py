"""SchedulerWorkflow on the time-skipping server: sessions are a fake `schedule_session` that
places pods; placements are assumed, handed to their JobWorkflows (here a recorder under the
job's workflow id), kept until seen bound, and dropped when a job cannot take them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest_asyncio
from temporalio import activity, workflow
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.messages import JobPlacements, SessionInput, SessionReport
from controllers.scheduler.session import SchedulerState
from models import signals, task_queues
from workflows import sandbox
from workflows.scheduler import SchedulerWorkflow, SchedulerWorkflowInput


@workflow.defn(name="RecordingJob", sandboxed=False)
class RecordingJob:
    """Stands for a JobWorkflow: keeps the placements it is handed."""

    def __init__(self) -> None:
        self.placed: list[str] = []

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.signal(name=signals.SIGNAL_PODS_PLACED)
    def pods_placed(self, placed: signals.PodsPlaced) -> None:
        self.placed += [f"{p.pod}@{p.node}" for p in placed.placements]

    @workflow.query
    def seen(self) -> list[str]:
        return self.placed


@dataclass
class Cluster:
    """What the fake session reads: pods to place (once) and pods seen bound."""

    to_place: dict[str, list[signals.PlacedPod]] = field(default_factory=dict)  # job id → pods
    bound: list[str] = field(default_factory=list)
    sessions: list[SessionInput] = field(default_factory=list)


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


@dataclass
class Scheduler:
    env: WorkflowEnvironment
    queue: str
    cluster: Cluster
    handle: WorkflowHandle[SchedulerWorkflow, None]

    async def job(self, wid: str) -> WorkflowHandle[RecordingJob, None]:
        return await self.env.client.start_workflow(RecordingJob.run, id=wid, task_queue=self.queue)


@pytest_asyncio.fixture
async def scheduler(env: WorkflowEnvironment) -> AsyncIterator[Scheduler]:
    cluster = Cluster()
    queue = f"tq-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=4) as pool:
        async with (
            Worker(
                env.client,
                task_queue=queue,
                workflows=[SchedulerWorkflow, RecordingJob],
                workflow_runner=sandbox.runner(),
                activity_executor=pool,
            ),
            Worker(
                env.client,
                task_queue=task_queues.SCHEDULER,
                activities=[fake_session(cluster)],
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


async def test_placements_are_assumed_handed_over_and_confirmed(scheduler: Scheduler) -> None:
    job = await scheduler.job("vcjob/ns/train")
    scheduler.cluster.to_place["vcjob/ns/train"] = [placed("a", "n1"), placed("b", "n2")]
    await scheduler.handle.signal(SchedulerWorkflow.work_arrived, signals.WorkArrived())

    async def delivered() -> bool:
        return sorted(await job.query(RecordingJob.seen)) == ["a@n1", "b@n2"]

    await until_true(delivered, "placements delivered to the job")
    assumed = await scheduler.handle.query(SchedulerWorkflow.assumed)
    assert assumed == {"ns/a": "n1", "ns/b": "n2"}

    # The next session is told what it must respect, then sees `a` bound: confirmed.
    scheduler.cluster.bound = ["ns/a"]
    await scheduler.handle.signal(SchedulerWorkflow.work_arrived, signals.WorkArrived())

    async def confirmed() -> bool:
        return await scheduler.handle.query(SchedulerWorkflow.assumed) == {"ns/b": "n2"}

    await until_true(confirmed, "bound pod's assumption confirmed")
    later = [s for s in scheduler.cluster.sessions if "ns/a" in s.assumed]
    assert later and later[-1].assumed == {"ns/a": "n1", "ns/b": "n2"}


async def test_a_placement_no_job_can_take_is_dropped(scheduler: Scheduler) -> None:
    scheduler.cluster.to_place["vcjob/ns/gone"] = [placed("x", "n1")]  # no such workflow
    await scheduler.handle.signal(SchedulerWorkflow.work_arrived, signals.WorkArrived())

    async def sessions_ran() -> bool:
        return len(scheduler.cluster.sessions) >= 2

    await until_true(sessions_ran, "a session placed the pod")

    async def dropped() -> bool:
        return await scheduler.handle.query(SchedulerWorkflow.assumed) == {}

    await until_true(dropped, "undeliverable placement dropped, so the pod is placed again")


async def test_a_failed_bind_drops_the_assumption(scheduler: Scheduler) -> None:
    await scheduler.job("vcjob/ns/run")
    scheduler.cluster.to_place["vcjob/ns/run"] = [placed("p", "n3")]
    await scheduler.handle.signal(SchedulerWorkflow.work_arrived, signals.WorkArrived())

    async def assumed() -> bool:
        return await scheduler.handle.query(SchedulerWorkflow.assumed) == {"ns/p": "n3"}

    await until_true(assumed, "placement assumed")
    await scheduler.handle.signal(
        SchedulerWorkflow.bind_failed, signals.BindFailed(pods={"ns/p": "node n3 is gone"})
    )

    async def dropped() -> bool:
        return await scheduler.handle.query(SchedulerWorkflow.assumed) == {}

    await until_true(dropped, "assumption dropped after the bind failed")
