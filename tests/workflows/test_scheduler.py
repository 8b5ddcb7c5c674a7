"""SchedulerWorkflow on the time-skipping server: sessions are a fake `schedule_session` that
binds what it is handed (the last session's placements) or waits for work, then places pods;
gangs with volumes go to a fake `bind_session`. Placements are assumed before they are bound,
kept until seen bound, and dropped when binding fails."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest_asyncio
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import PatchActivationInput, Replayer, Worker

from activities.messages import (
    Arrivals,
    BindSessionInput,
    BindSessionResult,
    JobPlacements,
    SessionInput,
    SessionReport,
)
from controllers.scheduler.session import SchedulerState
from models import task_queues
from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from models.signals import scheduler as scheduler_signals
from scheduling.api.backlog import Backlog, JobStanding, PendingJobs, QueueBacklog
from workflows import sandbox
from workflows.scheduler import FOLDS_BINDING, SchedulerWorkflow, SchedulerWorkflowInput


@dataclass
class Cluster:
    """What the fake session reads: pods to place (once) and pods seen bound."""

    # job id → pods
    to_place: dict[str, list[scheduler_signals.PlacedPod]] = field(default_factory=dict)
    bound: list[str] = field(default_factory=list)
    sessions: list[SessionInput] = field(default_factory=list)
    binds: list[BindSessionInput] = field(default_factory=list)  # what bind_session was asked
    refuse: dict[str, str] = field(default_factory=dict)  # "<ns>/<pod>" → why it fails to bind
    binding_broken: bool = False  # every bind_session attempt fails
    binding_sessions_broken: bool = False  # every session handed something to bind fails
    work: threading.Event = field(default_factory=threading.Event)  # an arrival in the cache
    backlogs: list[Backlog] = field(default_factory=list)  # the next sessions' digests, in turn


def _refused(cluster: Cluster, jobs: list[JobPlacements]) -> dict[str, str]:
    pods = [f"{j.namespace}/{p.pod}" for j in jobs for p in j.placements]
    return {pod: why for pod, why in cluster.refuse.items() if pod in pods}


def fake_session(cluster: Cluster) -> Callable[[SessionInput], SessionReport]:
    @activity.defn(name="schedule_session")
    def schedule_session(request: SessionInput) -> SessionReport:
        cluster.sessions.append(request)
        if cluster.binding_sessions_broken and request.bind:
            raise ApplicationError("cluster cache not synced yet", non_retryable=True)
        if not request.bind and request.wait_seconds > 0:
            cluster.work.wait(0.2)  # real time: the cache's wait, cut short for the tests
        cluster.work.clear()
        jobs = [
            JobPlacements(job_workflow_id=job, namespace="ns", placements=pods)
            for job, pods in sorted(cluster.to_place.items())
        ]
        cluster.to_place.clear()
        return SessionReport(
            jobs=jobs,
            bound=list(cluster.bound),
            pending=0,
            bind_failed=_refused(cluster, request.bind),
            arrivals=Arrivals(token="worker", count=len(cluster.sessions)),
            backlog=cluster.backlogs.pop(0) if cluster.backlogs else None,  # None: unchanged
        )

    return schedule_session


def fake_binding(cluster: Cluster) -> Callable[[BindSessionInput], BindSessionResult]:
    @activity.defn(name="bind_session")
    def bind_session(request: BindSessionInput) -> BindSessionResult:
        cluster.binds.append(request)
        if cluster.binding_broken:
            raise ApplicationError("apiserver unreachable", non_retryable=True)
        failed = _refused(cluster, request.jobs)
        pods = sum(len(j.placements) for j in request.jobs)
        return BindSessionResult(bound=pods - len(failed), failed=failed)

    return bind_session


@dataclass
class Scheduler:
    env: WorkflowEnvironment
    queue: str
    cluster: Cluster
    handle: WorkflowHandle[SchedulerWorkflow, None]

    def arrive(self) -> None:
        """Work arrives in the cluster cache: a waiting session goes on at once."""
        self.cluster.work.set()

    async def assumed(self) -> dict[str, str]:
        return await self.handle.query(SchedulerWorkflow.assumed)


@contextlib.asynccontextmanager
async def _running(
    env: WorkflowEnvironment,
    patch_activation_callback: Callable[[PatchActivationInput], bool] | None = None,
    max_history: int = 0,
) -> AsyncIterator[Scheduler]:
    """A SchedulerWorkflow started on its own task queue, with the fake session and binding
    activities on the scheduler's, while the block runs (`max_history`: its history budget)."""
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
                patch_activation_callback=patch_activation_callback,
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
                SchedulerWorkflowInput(
                    state=SchedulerState(name="volcano"), max_history=max_history
                ),
                id=f"scheduler/{uuid.uuid4().hex[:6]}",
                task_queue=queue,
            )
            yield Scheduler(env, queue, cluster, handle)


@pytest_asyncio.fixture
async def scheduler(env: WorkflowEnvironment) -> AsyncIterator[Scheduler]:
    async with _running(env) as running:
        yield running
        await running.handle.terminate()


def placed(pod: str, node: str) -> scheduler_signals.PlacedPod:
    return scheduler_signals.PlacedPod(pod=pod, uid=f"uid-{pod}", node=node)


async def until_true(probe: Callable[[], Awaitable[bool]], what: str, tries: int = 100) -> None:
    for _ in range(tries):
        if await probe():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


def bound_by_sessions(cluster: Cluster) -> list[tuple[str, list[str]]]:
    """(job, pods) in the order sessions were handed them to bind."""
    return [
        (j.job_workflow_id, [p.pod for p in j.placements]) for s in cluster.sessions for j in s.bind
    ]


async def test_placements_are_assumed_then_bound_by_the_next_session_and_confirmed(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.to_place["vcjob/ns/train"] = [placed("a", "n1"), placed("b", "n2")]
    cluster.to_place["vcjob/ns/eval"] = [placed("c", "n1")]
    scheduler.arrive()

    async def handed() -> bool:
        return bool(bound_by_sessions(cluster))

    await until_true(handed, "the next session given the placements to bind")
    assert bound_by_sessions(cluster) == [("vcjob/ns/eval", ["c"]), ("vcjob/ns/train", ["a", "b"])]
    binding = next(i for i, s in enumerate(cluster.sessions) if s.bind)

    async def settled() -> bool:
        return len(cluster.sessions) > binding + 1

    await until_true(settled, "a session after the binding one")
    # It binds at once (no waiting), and the one after it looks at once too (it writes the
    # bound gangs' status); no second activity binds.
    after = cluster.sessions[binding + 1]
    assert cluster.sessions[binding].wait_seconds == 0 and after.wait_seconds == 0
    assert after.bind == []
    binding = cluster.sessions[binding]
    assert binding.assumed == {"ns/a": "n1", "ns/b": "n2", "ns/c": "n1"}
    assert cluster.binds == []
    assert await scheduler.assumed() == {"ns/a": "n1", "ns/b": "n2", "ns/c": "n1"}

    # A later session sees `a` bound: confirmed; the rest stay assumed until seen bound.
    cluster.bound = ["ns/a"]
    scheduler.arrive()

    async def confirmed() -> bool:
        return await scheduler.assumed() == {"ns/b": "n2", "ns/c": "n1"}

    await until_true(confirmed, "bound pod's assumption confirmed")
    assert len(bound_by_sessions(cluster)) == 2  # handed over once, never again


async def test_an_idle_session_waits_for_work_from_where_the_last_one_read(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster

    async def waited() -> bool:
        return len(cluster.sessions) >= 3

    await until_true(waited, "sessions ran")
    first, second = cluster.sessions[1], cluster.sessions[2]
    assert first.wait_seconds > 0 and first.bind == []
    assert second.since == Arrivals(token="worker", count=2)  # the mark the one before returned
    # Idle sessions back off: a longer wait each time, up to 8 periods.
    assert second.wait_seconds > first.wait_seconds


async def test_a_pod_that_could_not_be_bound_is_placed_again(scheduler: Scheduler) -> None:
    cluster = scheduler.cluster
    cluster.refuse = {"ns/x": "failed to bind to node n1: node not found"}
    cluster.to_place["vcjob/ns/run"] = [placed("x", "n1"), placed("y", "n2")]
    scheduler.arrive()

    async def dropped() -> bool:
        return bool(bound_by_sessions(cluster)) and await scheduler.assumed() == {"ns/y": "n2"}

    await until_true(dropped, "the refused pod's assumption dropped, the other kept")


async def test_a_session_that_fails_drops_the_assumptions_it_was_binding(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.binding_sessions_broken = True
    cluster.to_place["vcjob/ns/run"] = [placed("x", "n1"), placed("y", "n2")]
    scheduler.arrive()

    async def dropped() -> bool:
        tried = any(s.bind for s in cluster.sessions)
        return tried and await scheduler.assumed() == {}

    await until_true(dropped, "nothing assumed once the session binding it failed")


async def test_gangs_with_volumes_to_bind_are_bound_by_their_own_activity(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    with_claim = placed("v", "n1").model_copy(
        update={"volumes": scheduler_signals.VolumePlan(provision=["data"])}
    )
    cluster.to_place["vcjob/ns/vol"] = [with_claim]
    cluster.to_place["vcjob/ns/plain"] = [placed("p", "n2")]
    scheduler.arrive()

    async def both() -> bool:
        return bool(cluster.binds) and bool(bound_by_sessions(cluster))

    await until_true(both, "each gang handed to its binder")
    [request] = cluster.binds
    assert [j.job_workflow_id for j in request.jobs] == ["vcjob/ns/vol"]
    assert bound_by_sessions(cluster) == [("vcjob/ns/plain", ["p"])]


async def test_binding_volumes_that_fails_drops_every_assumption_it_had(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.binding_broken = True
    claims = scheduler_signals.VolumePlan(provision=["data"])
    cluster.to_place["vcjob/ns/run"] = [
        placed("x", "n1").model_copy(update={"volumes": claims}),
        placed("y", "n2"),
    ]
    scheduler.arrive()

    async def dropped() -> bool:
        return bool(cluster.binds) and await scheduler.assumed() == {}

    await until_true(dropped, "nothing assumed once its binding failed")


async def test_a_failed_bind_reported_by_a_job_drops_the_assumption(scheduler: Scheduler) -> None:
    """A BatchJobWorkflow or an older JobWorkflow that bound a gang itself reports back."""
    scheduler.cluster.to_place["vcjob/ns/run"] = [placed("p", "n3")]
    scheduler.cluster.bound = []
    scheduler.arrive()

    async def assumed() -> bool:
        return await scheduler.assumed() == {"ns/p": "n3"}

    await until_true(assumed, "placement assumed")
    await scheduler.handle.signal(
        SchedulerWorkflow.bind_failed,
        scheduler_signals.BindFailed(pods={"ns/p": "node n3 is gone"}),
    )

    async def dropped() -> bool:
        return await scheduler.assumed() == {}

    await until_true(dropped, "assumption dropped after the bind failed")


async def test_a_run_from_before_folded_sessions_records_only_the_caldera_patch_ids(
    env: WorkflowEnvironment,
) -> None:
    """`binds-in-session` and `handoffs-in-background` took the `caldera-` prefix: a new run
    records the new ids alone (the old ones are asked only when replaying a history that holds
    them, `histories/scheduler_binds_in_session.json`), and its history replays."""
    before_folding = _running(env, lambda asked: asked.patch_id != FOLDS_BINDING)
    async with before_folding as running:
        running.cluster.to_place["vcjob/ns/train"] = [placed("a", "n1")]
        running.arrive()

        async def bound() -> bool:
            return bool(running.cluster.binds)

        await until_true(bound, "the placement bound by bind_session")
        await running.handle.terminate()
        history = await running.handle.fetch_history()
    markers = [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
    ]
    ids = [json.loads(m)["id"] for m in markers]
    assert ids == ["caldera-binds-in-session", "caldera-handoffs-in-background"]
    await Replayer(
        workflows=[SchedulerWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox.runner(),
    ).replay_workflow(history)


def _digest(*jobs: str, total: int = 0) -> Backlog:
    """Queue `research`'s line: `jobs` ("<ns>/<pod group>") waiting, Pending, for its quota."""
    reason = "queue resource quota insufficient: queue research"
    rows = [(JobKey(j), PodGroupPhase.PENDING, reason) for j in jobs]
    return Backlog(queues={QueueName("research"): QueueBacklog.of(rows, total or len(jobs))})


async def test_the_queries_answer_from_the_last_digest_a_session_reported(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.backlogs = [_digest("team-a/train", "team-b/eval", "team-a/sweep", total=5)]
    scheduler.arrive()

    async def pending() -> PendingJobs:
        return await scheduler.handle.query(SchedulerWorkflow.pending_jobs, "research")

    async def reported() -> bool:
        return (await pending()).total == 5

    await until_true(reported, "the digest of a session answered")
    answer = await pending()
    assert [(j.position, j.namespace, j.name) for j in answer.jobs] == [
        (1, "team-a", "train"),
        (2, "team-b", "eval"),
        (3, "team-a", "sweep"),
    ]
    assert {j.reason for j in answer.jobs} == {"queue resource quota insufficient: queue research"}
    standing = await scheduler.handle.query(SchedulerWorkflow.job_standing, "team-b/eval")
    assert standing == JobStanding(
        namespace="team-b",
        name="eval",
        queue="research",
        position=2,
        total=5,
        phase=PodGroupPhase.PENDING,
        reason="queue resource quota insufficient: queue research",
    )
    assert await scheduler.handle.query(SchedulerWorkflow.job_standing, "team-c/eval") is None
    empty = await scheduler.handle.query(SchedulerWorkflow.pending_jobs, "other")
    assert (empty.total, empty.jobs) == (0, ())

    # Later sessions report nothing (unchanged): the same answer; then a new digest replaces it.
    seen = len(cluster.sessions)

    async def more() -> bool:
        return len(cluster.sessions) > seen + 2

    await until_true(more, "sessions that reported no digest")
    assert await pending() == answer
    cluster.backlogs = [Backlog()]
    scheduler.arrive()

    async def emptied() -> bool:
        return (await pending()).total == 0

    await until_true(emptied, "the empty digest answered")


async def test_the_digest_is_carried_through_continue_as_new(env: WorkflowEnvironment) -> None:
    # The next run continues on the scheduler's own task queue: a workflow worker there too.
    next_runs = Worker(
        env.client,
        task_queue=task_queues.SCHEDULER,
        workflows=[SchedulerWorkflow],
        workflow_runner=sandbox.runner(),
    )
    async with _running(env, max_history=40) as running, next_runs:
        running.cluster.backlogs = [_digest("team-a/train")]
        running.arrive()
        first_run = running.handle.result_run_id
        first = env.client.get_workflow_handle_for(
            SchedulerWorkflow.run, running.handle.id, run_id=first_run
        )

        async def reported() -> bool:
            answer = await first.query(SchedulerWorkflow.pending_jobs, "research")
            return answer.total == 1

        await until_true(reported, "the first run holds the digest")
        latest = env.client.get_workflow_handle_for(SchedulerWorkflow.run, running.handle.id)

        async def continued() -> bool:
            return (await latest.describe()).run_id != first_run

        await until_true(continued, "a new run")
        standing = await latest.query(SchedulerWorkflow.job_standing, "team-a/train")
        assert standing is not None and standing.position == 1
        await latest.terminate()
