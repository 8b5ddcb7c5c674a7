"""NamespaceQueueWorkflow on the time-skipping server: the status written from what is read
around the queue, again when the cluster Queue revokes the namespace, the close that waits for
running PodGroups, the end with the object and continue-as-new. Activities are recording fakes
under the real names; the read selects from a world the test edits (`hierarchy.select`)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from activities.controllers import namespacequeues
from activities.messages import Done
from controllers.namespacequeue import hierarchy
from models import keys
from models.namespacequeue import NamespaceQueue
from models.scheduling import Queue
from models.signals import namespacequeue as nq_signals
from models.signals import queue as queue_signals
from tests.workflows.harness import fake_worker, last_run, settled
from workflows.namespacequeue import NamespaceQueueWorkflow, NamespaceQueueWorkflowInput


def _nq(name: str, namespace: str, parent: str = "cluster/research") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "NamespaceQueue",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "generation": 1,
            "creationTimestamp": "2026-07-10T00:00:00Z",
        },
        "spec": {"parent": parent},
    }


def _queue(allowed: list[str]) -> Queue:
    return Queue.model_validate(
        {
            "metadata": {"name": "research", "uid": "uid-research"},
            "spec": {"allowedNamespaces": allowed},
        }
    )


@dataclass
class World:
    """What the fake read finds, and every write, in order."""

    namespace_queues: list[dict[str, Any]] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    log: list[tuple[str, Any]] = field(default_factory=list)

    def named(self, name: str) -> list[Any]:
        return [arg for n, arg in self.log if n == name]


def fakes(world: World) -> list[Callable[..., Any]]:
    @activity.defn(name="read_namespace_queue_surroundings")
    def read(r: namespacequeues.SurroundingsInput) -> hierarchy.Surroundings:
        world.log.append(("read_namespace_queue_surroundings", r))
        nqs = [NamespaceQueue.model_validate(o) for o in world.namespace_queues]
        return hierarchy.select(r.namespace, r.name, nqs, world.queues)

    @activity.defn(name="write_namespace_queue_status")
    def write(r: namespacequeues.NamespaceQueueStatusInput) -> Done:
        world.log.append(("write_namespace_queue_status", r))
        return Done()

    @activity.defn(name="record_event")
    def record_event(r: dict[str, Any]) -> Done:
        world.log.append(("record_event", r))
        return Done()

    return [read, write, record_event]


@dataclass
class NqHarness:
    env: WorkflowEnvironment
    task_queue: str
    world: World
    namespace: str

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, env: WorkflowEnvironment) -> AsyncIterator[NqHarness]:
        world = World(queues=[_queue(["*"])])
        async with fake_worker(env, NamespaceQueueWorkflow, fakes(world)) as queue:
            yield cls(env, queue, world, f"team-{uuid.uuid4().hex[:8]}")

    async def start(self, name: str = "training", max_history: int = 0) -> WorkflowHandle[Any, Any]:
        obj = _nq(name, self.namespace)
        self.world.namespace_queues.append(obj)
        return await self.env.client.start_workflow(
            NamespaceQueueWorkflow.run,
            NamespaceQueueWorkflowInput(max_history=max_history),
            id=keys.namespace_queue_workflow_id(self.namespace, name),
            task_queue=self.task_queue,
            start_signal=nq_signals.SIGNAL_NAMESPACE_QUEUE_OBSERVED,
            start_signal_args=[nq_signals.NamespaceQueueObserved(queue=obj)],
        )


@pytest.fixture
async def nqh(env: WorkflowEnvironment) -> AsyncIterator[NqHarness]:
    async with NqHarness.running(env) as h:
        yield h


async def _until(
    handle: WorkflowHandle[Any, Any],
    check: Callable[[nq_signals.NamespaceQueueView], bool],
    what: str,
) -> nq_signals.NamespaceQueueView:
    return await settled(
        lambda: handle.query(NamespaceQueueWorkflow.status), check, what, timeout=30
    )


def _groups(*refs: tuple[str, str]) -> queue_signals.PodGroupsChanged:
    return queue_signals.PodGroupsChanged(
        groups=[queue_signals.PodGroupRef(key=k, phase=p) for k, p in refs]
    )


async def test_ready_written_once_then_unauthorized_when_the_queue_revokes(nqh: NqHarness) -> None:
    h = await nqh.start()
    view = await _until(h, lambda v: v.ready == "True", "ready")
    assert (view.authorized, view.state) == ("True", "Open")
    writes = nqh.world.named("write_namespace_queue_status")
    assert len(writes) == 1 and writes[0].namespace == nqh.namespace

    nqh.world.queues = [_queue(["someone-else"])]
    await h.signal(nq_signals.SIGNAL_HIERARCHY_CHANGED, nq_signals.HierarchyChanged(why="test"))
    view = await _until(h, lambda v: v.ready == "False", "unauthorized")
    assert (view.authorized, view.reason, view.state) == ("False", "NamespaceNotAllowed", "Open")
    assert len(nqh.world.named("read_namespace_queue_surroundings")) == 2

    # Nothing changed: read again, nothing written.
    await h.signal(nq_signals.SIGNAL_HIERARCHY_CHANGED, nq_signals.HierarchyChanged(why="again"))
    await _until(h, lambda v: True, "settled")
    assert len(nqh.world.named("read_namespace_queue_surroundings")) == 3
    assert len(nqh.world.named("write_namespace_queue_status")) == 2


async def test_close_waits_for_running_pod_groups_then_open_again(nqh: NqHarness) -> None:
    h = await nqh.start()
    await _until(h, lambda v: v.ready == "True", "ready")
    await h.signal(
        queue_signals.SIGNAL_POD_GROUPS_CHANGED,
        _groups((f"{nqh.namespace}/a", "Running"), (f"{nqh.namespace}/b", "Pending")),
    )
    await _until(h, lambda v: v.pod_groups["running"] == 1, "counted")
    closed = await h.execute_update(
        NamespaceQueueWorkflow.close, queue_signals.QueueCommand(reason="maintenance")
    )
    assert (closed.state_before, closed.state_after) == ("Open", "Closing")
    view = await _until(h, lambda v: v.state == "Closing", "closing")
    assert (view.ready, view.reason) == ("False", "Closing")
    with pytest.raises(WorkflowUpdateFailedError):
        await h.execute_update(NamespaceQueueWorkflow.close, queue_signals.QueueCommand())
    await h.signal(
        queue_signals.SIGNAL_POD_GROUPS_CHANGED, _groups((f"{nqh.namespace}/a", "Completed"))
    )
    await _until(h, lambda v: v.state == "Closed", "closed once nothing runs")
    opened = await h.execute_update(NamespaceQueueWorkflow.open, queue_signals.QueueCommand())
    assert opened.state_after == "Open"
    await _until(h, lambda v: v.ready == "True", "ready again")
    status = nqh.world.named("write_namespace_queue_status")[-1].status
    assert (status["state"], status["running"], status["completed"]) == ("Open", 0, 1)


async def test_deleted_ends_the_workflow(nqh: NqHarness) -> None:
    h = await nqh.start()
    await _until(h, lambda v: v.ready == "True", "ready")
    await h.signal(
        nq_signals.SIGNAL_NAMESPACE_QUEUE_DELETED,
        nq_signals.NamespaceQueueDeleted(uid="uid-training"),
    )
    await h.result()


async def test_continue_as_new_keeps_counts_and_written_status(nqh: NqHarness) -> None:
    budget = 60
    h = await nqh.start(max_history=budget)
    await _until(h, lambda v: v.ready == "True", "ready")
    for i in range(15):
        await h.signal(
            queue_signals.SIGNAL_POD_GROUPS_CHANGED, _groups((f"{nqh.namespace}/g{i}", "Running"))
        )
    wid = keys.namespace_queue_workflow_id(nqh.namespace, "training")
    latest = await last_run(nqh.env.client, wid, budget)
    view = await _until(latest, lambda v: v.pod_groups["running"] == 15, "all counted")
    assert (view.ready, view.state) == ("True", "Open")
    assert len(nqh.world.named("read_namespace_queue_surroundings")) == 1
