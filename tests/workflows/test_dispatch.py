"""DispatchWorkflow on the time-skipping server with fake worker clusters: dispatch, mirror,
commands, deletion, failover on a lost cluster, the stale copy deleted on its return or left
behind past the queue's deadline, a finished job never moved, a worker restarted mid-failover,
continue-as-new."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals.dispatch import DispatchObserved
from tests.workflows.dispatch_harness import (
    UID,
    Cluster,
    World,
    event,
    manifest,
    serving,
    settings,
    submit,
    until,
)
from workflows import sandbox
from workflows.dispatch import DispatchWorkflow


def _world() -> World:
    return World(clusters={"a": Cluster("a"), "b": Cluster("b")})


def _queue() -> str:
    return f"tq-{uuid.uuid4()}"


async def test_dispatch_mirrors_status_and_events(env: WorkflowEnvironment) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        handle = await submit(env, queue)
        a = world.clusters["a"]
        await until(lambda: a.copy is not None, "a copy on a (weight 2)")
        assert a.copy is not None and (a.copy.origin, a.copy.generation) == (UID, 1)
        await until(lambda: bool(world.named("mark_dispatched")), "the job marked")
        assert world.named("mark_dispatched")[0].cluster == "a"
        world.set_status("a", "Running", running=2)
        a.events.append(event("e1", "Started", "pods are running"))
        await until(lambda: bool(world.named("mirror_events")), "the Event mirrored")
        await until(lambda: bool(world.named("write_dispatch_status")), "the status mirrored")
        (written,) = world.named("write_dispatch_status")
        assert written.status == {"state": {"phase": "Running"}, "running": 2}
        (mirrored,) = world.named("mirror_events")
        assert mirrored.cluster == "a" and [e.reason for e in mirrored.events] == ["Started"]
        await until(lambda: a.renewals > 2, "the lease renewed while it runs")
        assert len(world.named("write_dispatch_status")) == 1  # nothing new: nothing written
        assert world.clusters["b"].made == [] and "Dispatched" in world.reasons()
        view = await handle.query(DispatchWorkflow.view)
        assert (view.phase, view.cluster, view.generation, view.stale) == ("Running", "a", 1, [])


async def test_commands_reach_the_copy_and_deletion_removes_it(env: WorkflowEnvironment) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        handle = await submit(env, queue)
        a = world.clusters["a"]
        await until(lambda: bool(world.named("mark_dispatched")), "dispatched")
        world.set_status("a", "Running")
        result = await handle.execute_update(
            DispatchWorkflow.abort, job_signals.JobCommand(reason="test")
        )
        assert result.action == "AbortJob"
        await handle.signal(
            common_signals.SIGNAL_COMMAND_ISSUED,
            common_signals.CommandIssued(action="ResumeJob", command="train-resume"),
        )
        await until(lambda: a.commands == ["AbortJob", "ResumeJob"], "both Commands on a")
        await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid=UID))
        await handle.result()
        assert a.copy is None and [c.generation for c in a.deleted] == [1]


async def test_lost_cluster_moves_the_job_and_its_stale_copy_goes_on_return(
    env: WorkflowEnvironment,
) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        await submit(env, queue)
        a, b = world.clusters["a"], world.clusters["b"]
        await until(lambda: a.copy is not None, "a copy on a")
        world.set_status("a", "Running")
        await until(lambda: bool(world.named("write_dispatch_status")), "Running mirrored")
        a.reachable = False
        await until(lambda: "ClusterUnreachable" in world.reasons(), "a said unreachable")
        assert b.made == []  # not before lost-after
        await env.sleep(timedelta(seconds=25))
        await until(lambda: b.copy is not None, "the job moved to b")
        assert b.copy is not None and b.copy.generation == 2
        assert "ClusterLost" in world.reasons()
        assert world.live() == [("a", 1), ("b", 2)]  # a's copy is out of reach, not running
        a.reachable = True
        await until(lambda: "StaleCopyDeleted" in world.reasons(), "stale copy deleted", 60)
        assert world.live() == [("b", 2)] and a.copy is None
        assert [c.generation for c in a.made] == [1]  # a got nothing new


async def test_a_deleted_job_whose_cluster_never_returns_ends_at_the_stale_copy_deadline(
    env: WorkflowEnvironment,
) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        handle = await submit(env, queue, settings(stale_deadline=600))
        a, b = world.clusters["a"], world.clusters["b"]
        await until(lambda: a.copy is not None, "a copy on a")
        world.set_status("a", "Running")
        a.reachable = False
        await env.sleep(timedelta(seconds=25))
        await until(lambda: b.copy is not None, "the job moved to b")
        started = await env.get_current_time()
        await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid=UID))
        await handle.result()  # time skips over a's failed deletes until the deadline
        assert await env.get_current_time() - started >= timedelta(seconds=600)
        assert b.copy is None and [c.generation for c in b.deleted] == [2]
        assert a.copy is not None and a.deleted == []  # out of reach: left behind there
        assert "StaleCopyLeftBehind" not in world.reasons()  # no Event on a Job that is gone


async def test_stale_copy_found_completed_is_recorded_and_the_newer_kept(
    env: WorkflowEnvironment,
) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        await submit(env, queue)
        a, b = world.clusters["a"], world.clusters["b"]
        await until(lambda: a.copy is not None, "a copy on a")
        world.set_status("a", "Running")
        await until(lambda: bool(world.named("write_dispatch_status")), "Running mirrored")
        a.reachable = False
        await until(lambda: "ClusterUnreachable" in world.reasons(), "a said unreachable")
        await env.sleep(timedelta(seconds=25))
        await until(lambda: b.copy is not None, "the job moved to b")
        world.set_status("a", "Completed")
        a.reachable = True
        await until(lambda: "StaleCopyCompleted" in world.reasons(), "recorded", timeout=60)
        assert a.copy is None and b.copy is not None and b.copy.generation == 2
        phases = [w.status["state"]["phase"] for w in world.named("write_dispatch_status")]
        assert "Completed" not in phases  # the job's end is the newer copy's to say


async def test_finished_job_is_never_moved(env: WorkflowEnvironment) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        await submit(env, queue)
        a, b = world.clusters["a"], world.clusters["b"]
        await until(lambda: a.copy is not None, "a copy on a")
        world.set_status("a", "Completed", succeeded=2)
        await until(lambda: bool(world.named("write_dispatch_status")), "Completed mirrored")
        a.reachable = False
        await until(lambda: "ClusterUnreachable" in world.reasons(), "a said unreachable")
        await env.sleep(timedelta(seconds=120))
        assert b.made == [] and "ClusterLost" not in world.reasons()


async def test_worker_restart_mid_failover_neither_duplicates_nor_loses(
    env: WorkflowEnvironment,
) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world, cached=0):
        handle = await submit(env, queue)
        a, b = world.clusters["a"], world.clusters["b"]
        await until(lambda: a.copy is not None, "a copy on a")
        world.set_status("a", "Running")
        await until(lambda: bool(world.named("write_dispatch_status")), "Running mirrored")
        a.reachable = False
        await until(lambda: "ClusterUnreachable" in world.reasons(), "a said unreachable")
    # The worker is gone with the lost timer armed; a new one takes over from the history.
    async with serving(env, queue, world):
        await env.sleep(timedelta(seconds=25))
        await until(lambda: b.copy is not None, "the job moved to b")
        a.reachable = True
        await until(lambda: a.copy is None, "the stale copy deleted", timeout=60)
        assert [c.generation for c in b.made] == [2] and [c.generation for c in a.made] == [1]
        assert world.live() == [("b", 2)]
        history = await handle.fetch_history()
    replayer = Replayer(
        workflows=[DispatchWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox.runner(),
    )
    await replayer.replay_workflow(WorkflowHistory.from_json(handle.id, history.to_json()))


async def test_continue_as_new_follows_on_without_a_second_copy(
    env: WorkflowEnvironment,
) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        handle = await submit(env, queue, chosen=settings(lost_after=60), max_history=80)
        a = world.clusters["a"]
        await until(lambda: a.copy is not None, "a copy on a")
        for phase in ("Pending", "Running", "Running", "Completed"):
            world.set_status("a", phase, running=len(world.named("write_dispatch_status")))
            count = len(world.named("write_dispatch_status"))
            await until(
                lambda c=count: len(world.named("write_dispatch_status")) > c, f"{phase} mirrored"
            )
        latest = await env.client.get_workflow_handle(handle.id).describe()
        assert latest.run_id != handle.first_execution_run_id, "the run continued as new"
        assert [c.generation for c in a.made] == [1] and world.clusters["b"].made == []


def _replicas(spec: dict[str, object]) -> list[object]:
    return [t["replicas"] for t in spec["tasks"]]  # type: ignore[attr-defined, index]


async def test_spec_change_reaches_the_copy_held_while_its_cluster_is_silent(
    env: WorkflowEnvironment,
) -> None:
    world, queue = _world(), _queue()
    async with serving(env, queue, world):
        slow = settings(lost_after=3600)  # the silence never moves the job here
        handle = await submit(env, queue, slow)
        a = world.clusters["a"]
        await until(lambda: bool(world.named("mark_dispatched")), "dispatched")
        assert a.copy is not None and _replicas(a.copy.spec) == [2]
        a.reachable = False  # the change waits for the cluster, then reaches it
        scaled = DispatchObserved(job=manifest(replicas=3), settings=slow)
        await handle.signal(job_signals.SIGNAL_JOB_OBSERVED, scaled)
        await until(lambda: "ClusterUnreachable" in world.reasons(), "a silent")
        assert _replicas(a.copy.spec) == [2]
        a.reachable = True
        await until(lambda: _replicas(a.copy.spec) == [3], "the copy scaled to 3")  # type: ignore[union-attr]
        await until(lambda: "SpecPassed" in world.reasons(), "said on the Job")
        a.refuses = "admission webhook denied the request: minAvailable too large"
        again = DispatchObserved(job=manifest(replicas=1), settings=slow)
        await handle.signal(job_signals.SIGNAL_JOB_OBSERVED, again)
        await until(lambda: "SpecRefused" in world.reasons(), "the refusal said")
        refusal = next(e for e in world.named("record_event") if e.reason == "SpecRefused")
        assert "minAvailable too large" in refusal.message and refusal.type == "Warning"
        assert _replicas(a.copy.spec) == [3] and world.clusters["b"].made == []
        assert world.reasons().count("SpecPassed") == 1  # one change, passed once
