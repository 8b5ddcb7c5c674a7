"""HyperNodeDiscoveryWorkflow on the time-skipping server, with a recording fake under the real
`discover_hypernodes` name: rounds every period (or the configuration's interval), at once on
`nodes_changed`, a failed round never fails the workflow, a retried attempt draws the same
seed, and the round count survives continue-as-new."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest_asyncio
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from activities.controllers.hypernodes import DiscoverHyperNodesInput, DiscoverHyperNodesResult
from workflows import sandbox
from workflows.hypernode_discovery import (
    HyperNodeDiscoveryInput,
    HyperNodeDiscoveryWorkflow,
    NodesChanged,
)


@dataclass
class Calls:
    """What the fake saw, and how it should answer."""

    attempts: list[tuple[int, int, datetime]] = field(default_factory=list)  # seed, attempt, when
    interval_ms: int = 0
    fail_rounds: set[int] = field(default_factory=set)  # rounds (1-based) whose attempts fail
    fail_first_attempt: bool = False  # every round's first attempt fails, retryably

    @property
    def rounds(self) -> int:
        return len({seed for seed, _, _ in self.attempts})


def fake_discovery(calls: Calls) -> Callable[[DiscoverHyperNodesInput], DiscoverHyperNodesResult]:
    @activity.defn(name="discover_hypernodes")
    def discover_hypernodes(request: DiscoverHyperNodesInput) -> DiscoverHyperNodesResult:
        info = activity.info()
        calls.attempts.append((request.seed, info.attempt, info.current_attempt_scheduled_time))
        if calls.rounds in calls.fail_rounds:
            raise ApplicationError(
                "networkTopologyDiscovery[0].source: bad", type="Invalid", non_retryable=True
            )
        if calls.fail_first_attempt and info.attempt == 1:
            raise ApplicationError("apiserver away", type="KubernetesError")
        return DiscoverHyperNodesResult(
            enabled=True, discovered=2, created=1, interval_ms=calls.interval_ms
        )

    return discover_hypernodes


@dataclass
class Discovery:
    env: WorkflowEnvironment
    calls: Calls
    start: Callable[
        [HyperNodeDiscoveryInput], Awaitable[WorkflowHandle[HyperNodeDiscoveryWorkflow, None]]
    ]


@pytest_asyncio.fixture
async def discovery(env: WorkflowEnvironment) -> AsyncIterator[Discovery]:
    calls = Calls()
    queue = f"tq-{uuid.uuid4()}"
    handles: list[WorkflowHandle[HyperNodeDiscoveryWorkflow, None]] = []

    async def start(
        start: HyperNodeDiscoveryInput,
    ) -> WorkflowHandle[HyperNodeDiscoveryWorkflow, None]:
        handle = await env.client.start_workflow(
            HyperNodeDiscoveryWorkflow.run,
            start,
            id=f"hypernode-discovery-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
        )
        handles.append(handle)
        return handle

    with ThreadPoolExecutor(max_workers=4) as pool:
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[HyperNodeDiscoveryWorkflow],
            activities=[fake_discovery(calls)],
            workflow_runner=sandbox.runner(),
            activity_executor=pool,
        ):
            yield Discovery(env, calls, start)
            for handle in handles:
                await handle.terminate()


async def until(probe: Callable[[], bool], what: str, tries: int = 200) -> None:
    for _ in range(tries):
        if probe():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


def gaps(calls: Calls) -> list[float]:
    times = [when for _, attempt, when in calls.attempts if attempt == 1]
    return [(b - a).total_seconds() for a, b in itertools.pairwise(times)]


async def test_rounds_repeat_every_period(discovery: Discovery) -> None:
    handle = await discovery.start(HyperNodeDiscoveryInput(period_ms=10_000))
    await until(lambda: discovery.calls.rounds == 1, "first round")
    await discovery.env.sleep(timedelta(seconds=25))
    await until(lambda: discovery.calls.rounds >= 3, "two more rounds")
    assert all(9 <= g <= 11 for g in gaps(discovery.calls)), gaps(discovery.calls)
    last = await handle.query(HyperNodeDiscoveryWorkflow.last_round)
    assert last is not None and last.created == 1


async def test_configured_interval_sets_the_wait(discovery: Discovery) -> None:
    discovery.calls.interval_ms = 60_000
    await discovery.start(HyperNodeDiscoveryInput(period_ms=10_000))
    await until(lambda: discovery.calls.rounds == 1, "first round")
    await discovery.env.sleep(timedelta(seconds=30))
    assert discovery.calls.rounds == 1  # not after the 10 s period
    await discovery.env.sleep(timedelta(seconds=35))
    await until(lambda: discovery.calls.rounds == 2, "the round after the interval")
    assert 59 <= gaps(discovery.calls)[0] <= 61


async def test_nodes_changed_runs_a_round_at_once(discovery: Discovery) -> None:
    handle = await discovery.start(HyperNodeDiscoveryInput(period_ms=3_600_000))
    await until(lambda: discovery.calls.rounds == 1, "first round")
    await handle.signal(HyperNodeDiscoveryWorkflow.nodes_changed, NodesChanged(why="relabelled"))
    await until(lambda: discovery.calls.rounds == 2, "a round on the signal")
    assert gaps(discovery.calls)[0] < 60


async def test_a_failed_round_is_logged_and_the_next_one_runs(discovery: Discovery) -> None:
    discovery.calls.fail_rounds = {1}
    handle = await discovery.start(HyperNodeDiscoveryInput(period_ms=10_000))
    await until(lambda: discovery.calls.rounds == 1, "first round")
    assert await handle.query(HyperNodeDiscoveryWorkflow.last_round) is None
    await discovery.env.sleep(timedelta(seconds=12))
    await until(lambda: discovery.calls.rounds == 2, "the next round")

    async def answered() -> bool:
        return await handle.query(HyperNodeDiscoveryWorkflow.last_round) is not None

    for _ in range(100):
        if await answered():
            break
        await asyncio.sleep(0.05)
    assert await answered()
    assert [attempt for _, attempt, _ in discovery.calls.attempts][:1] == [1]  # not retried


async def test_a_retried_attempt_draws_the_same_seed(discovery: Discovery) -> None:
    discovery.calls.fail_first_attempt = True
    await discovery.start(HyperNodeDiscoveryInput(period_ms=10_000))
    await until(lambda: len(discovery.calls.attempts) == 1, "first attempt")
    await discovery.env.sleep(timedelta(seconds=2))
    await until(lambda: len(discovery.calls.attempts) == 2, "the retry")
    await discovery.env.sleep(timedelta(seconds=12))
    await until(lambda: discovery.calls.rounds == 2, "the next round")
    (s1, a1, _), (s2, a2, _), (s3, _, _) = discovery.calls.attempts[:3]
    assert (a1, a2) == (1, 2) and s1 == s2 and s3 != s1


async def test_continues_as_new_and_keeps_counting_rounds(discovery: Discovery) -> None:
    handle = await discovery.start(HyperNodeDiscoveryInput(period_ms=1_000, max_history=15))
    first_run = (await handle.describe()).run_id
    await until(lambda: discovery.calls.rounds == 1, "first round")
    for _ in range(6):
        await discovery.env.sleep(timedelta(seconds=1))
    await until(lambda: discovery.calls.rounds >= 5, "five rounds")
    latest = discovery.env.client.get_workflow_handle(handle.id)
    assert (await latest.describe()).run_id != first_run
    assert await latest.query(HyperNodeDiscoveryWorkflow.rounds) >= 5


async def test_its_history_replays(discovery: Discovery) -> None:
    """Rounds, a failed one and a signal, replayed in the sandbox: the seeds and waits are
    deterministic."""
    discovery.calls.fail_rounds = {2}
    handle = await discovery.start(HyperNodeDiscoveryInput(period_ms=5_000))
    await until(lambda: discovery.calls.rounds == 1, "first round")
    await discovery.env.sleep(timedelta(seconds=11))
    await until(lambda: discovery.calls.rounds == 3, "two more rounds")
    await handle.signal(HyperNodeDiscoveryWorkflow.nodes_changed, NodesChanged())
    await until(lambda: discovery.calls.rounds == 4, "a round on the signal")
    await handle.query(HyperNodeDiscoveryWorkflow.rounds)  # the signal's task is in the history
    history = await handle.fetch_history()
    replayer = Replayer(
        workflows=[HyperNodeDiscoveryWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox.runner(),
    )
    await replayer.replay_workflow(history)
