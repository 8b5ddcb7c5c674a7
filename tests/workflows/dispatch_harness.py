"""A DispatchWorkflow under test: the real workflow, and fake worker clusters (a `World`) that
the fake activities read and write under the real activity names, on the real task queues.

A test changes the world (a cluster stops answering, a copy's status moves on) and waits for
the workflow to act on it; the fakes answer as the real ones would: create if absent, fenced
deletes, a long poll that answers when the copy's status differs from the one the manager
holds (or after a short real-time wait, so time can skip between polls).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.dispatch import copies, follow, mirroring
from activities.messages import DeleteJobInput, Done, RecordEventInput
from controllers.dispatch import mirror
from controllers.dispatch.results import (
    CommandSent,
    CopyDeleted,
    CopyMade,
    CopyUpdated,
    Followed,
    Probed,
    RemoteEvent,
)
from models import task_queues
from models.dispatch import ClusterStatus, DispatchSettings, RemoteState, dispatch_workflow_id
from models.keys import QueueName
from models.signals import job as job_signals
from models.signals.dispatch import DispatchObserved
from tests.builders import make_job
from workflows import sandbox
from workflows.dispatch import DispatchInput, DispatchWorkflow

UID = "manager-uid"
ROOM = {"cpu": "16", "memory": "64Gi", "pods": "110"}
POLL_WAIT = 0.3  # real seconds a fake long poll waits for news before it answers unchanged


@dataclass
class Copy:
    origin: str
    generation: int
    uid: str
    status: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)  # as made or last updated


@dataclass
class Cluster:
    name: str
    reachable: bool = True
    copy: Copy | None = None  # the Job train in ns (the only one the tests dispatch)
    made: list[Copy] = field(default_factory=list)  # every copy created here, in order
    deleted: list[Copy] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # their actions
    events: list[RemoteEvent] = field(default_factory=list)
    renewals: int = 0
    refuses: str = ""  # what its admission says to a spec change ("": takes it)


@dataclass
class World:
    clusters: dict[str, Cluster]
    log: list[tuple[str, Any]] = field(default_factory=list)  # the manager-side writes

    def named(self, name: str) -> list[Any]:
        return [arg for n, arg in self.log if n == name]

    def reasons(self) -> list[str]:
        return [e.reason for e in self.named("record_event")]

    def live(self) -> list[tuple[str, int]]:
        """(cluster, generation) of every copy that exists, across the clusters."""
        return sorted(
            (c.name, c.copy.generation) for c in self.clusters.values() if c.copy is not None
        )

    def set_status(self, cluster: str, phase: str, **counts: int) -> None:
        copy = self.clusters[cluster].copy
        assert copy is not None, f"no copy on {cluster}"
        copy.status = {"state": {"phase": phase}, **counts}


def _unreachable(c: Cluster) -> str:
    return f"unreachable: {c.name}: connection refused"


def fakes(world: World) -> tuple[list[Callable[..., Any]], list[Callable[..., Any]]]:
    """(the workflow worker's local activities, the dispatcher's remote ones)."""

    def record(name: str) -> Callable[..., Any]:
        @activity.defn(name=name)
        async def write(r: Any) -> Done:
            world.log.append((name, r))
            return Done()

        return write

    @activity.defn(name="write_dispatch_status")
    async def write_dispatch_status(r: mirroring.ManagerStatusInput) -> Done:
        world.log.append(("write_dispatch_status", r))
        return Done()

    @activity.defn(name="mark_dispatched")
    async def mark_dispatched(r: mirroring.MarkInput) -> Done:
        world.log.append(("mark_dispatched", r))
        return Done()

    @activity.defn(name="mark_left_behind")
    async def mark_left_behind(r: mirroring.LeftBehindInput) -> Done:
        world.log.append(("mark_left_behind", r))
        return Done()

    @activity.defn(name="mirror_events")
    async def mirror_events(r: mirroring.MirrorEventsInput) -> Done:
        world.log.append(("mirror_events", r))
        return Done()

    @activity.defn(name="record_event")
    async def record_event(r: RecordEventInput) -> Done:
        world.log.append(("record_event", r))
        return Done()

    @activity.defn(name="delete_job")
    async def delete_job(r: DeleteJobInput) -> Done:
        world.log.append(("delete_job", r))
        return Done()

    @activity.defn(name="probe_clusters")
    async def probe_clusters(r: copies.ProbeInput) -> Probed:
        statuses = []
        for name in r.clusters:
            c = world.clusters[name]
            if c.reachable:
                statuses.append(
                    ClusterStatus(name=name, reachable=True, allocatable=ROOM, free=ROOM)
                )
            else:
                statuses.append(ClusterStatus(name=name, reachable=False, error=_unreachable(c)))
        return Probed(statuses=statuses)

    @activity.defn(name="create_copy")
    async def create_copy(r: copies.CreateCopyInput) -> CopyMade:
        c = world.clusters[r.target.cluster]
        answer = CopyMade(cluster=c.name, generation=r.target.generation)
        if not c.reachable:
            return answer.model_copy(update={"reachable": False, "error": _unreachable(c)})
        if c.copy is None:
            c.copy = Copy(r.origin, r.target.generation, f"{c.name}-{uuid.uuid4().hex[:6]}")
            c.copy.spec = r.job.spec.dump()
            c.made.append(c.copy)
            return answer.model_copy(update={"uid": c.copy.uid, "created": True})
        if (c.copy.origin, c.copy.generation) == (r.origin, r.target.generation):
            return answer.model_copy(update={"uid": c.copy.uid})
        return answer.model_copy(
            update={
                "found_origin": c.copy.origin,
                "found_generation": c.copy.generation,
                "found_uid": c.copy.uid,
            }
        )

    @activity.defn(name="follow_copy")
    async def follow_copy(r: follow.FollowInput) -> Followed:
        c = world.clusters[r.target.cluster]
        answer = Followed(cluster=c.name, generation=r.target.generation)
        deadline = asyncio.get_running_loop().time() + POLL_WAIT
        while True:
            if not c.reachable:
                return answer.model_copy(update={"reachable": False, "error": _unreachable(c)})
            copy = c.copy
            if copy is None or (copy.origin, copy.generation) != (r.origin, r.target.generation):
                gone = RemoteState(cluster=c.name, generation=r.target.generation, found=False)
                return answer.model_copy(update={"remote": gone})
            if r.renew:
                c.renewals += 1
            remote = RemoteState(
                cluster=c.name,
                generation=r.target.generation,
                found=True,
                phase=mirror.phase_of(copy.status),
                status=dict(copy.status),
            )
            events, mark = mirror.new_events(c.events, r.events)
            late = asyncio.get_running_loop().time() >= deadline
            if late or events or mirror.digest(copy.status) != r.known:
                return answer.model_copy(update={"remote": remote, "events": events, "mark": mark})
            await asyncio.sleep(0.02)

    @activity.defn(name="update_copy")
    async def update_copy(r: copies.UpdateCopyInput) -> CopyUpdated:
        c = world.clusters[r.target.cluster]
        answer = CopyUpdated(cluster=c.name, generation=r.target.generation)
        if not c.reachable:
            return answer.model_copy(update={"reachable": False, "error": _unreachable(c)})
        copy = c.copy
        if copy is None:
            return answer.model_copy(update={"outcome": "absent"})
        if (copy.origin, copy.generation) != (r.origin, r.target.generation):
            return answer.model_copy(update={"outcome": "kept"})
        if c.refuses:
            return answer.model_copy(update={"outcome": "refused", "refused": c.refuses})
        wanted = r.job.spec.dump()
        if copy.spec == wanted:
            return answer.model_copy(update={"outcome": "unchanged"})
        copy.spec = wanted
        return answer

    @activity.defn(name="delete_copy")
    async def delete_copy(r: copies.DeleteCopyInput) -> CopyDeleted:
        c = world.clusters[r.target.cluster]
        answer = CopyDeleted(cluster=c.name, generation=r.target.generation)
        if not c.reachable:
            return answer.model_copy(update={"reachable": False, "error": _unreachable(c)})
        copy = c.copy
        if copy is None:
            return answer.model_copy(update={"outcome": "absent"})
        if (copy.origin, copy.generation) != (r.origin, r.target.generation):
            return answer.model_copy(
                update={"outcome": "kept", "found_generation": copy.generation}
            )
        c.copy = None
        c.deleted.append(copy)
        return answer.model_copy(update={"phase": mirror.phase_of(copy.status)})

    @activity.defn(name="send_command")
    async def send_command(r: copies.SendCommandInput) -> CommandSent:
        c = world.clusters[r.target.cluster]
        answer = CommandSent(cluster=c.name, generation=r.target.generation, command=r.command)
        if not c.reachable:
            return answer.model_copy(update={"reachable": False, "error": _unreachable(c)})
        c.commands.append(r.command.action)
        return answer

    manager = [
        write_dispatch_status,
        mark_dispatched,
        mark_left_behind,
        mirror_events,
        record_event,
        delete_job,
    ]
    remote = [probe_clusters, create_copy, update_copy, follow_copy, delete_copy, send_command]
    return manager, remote


@contextlib.asynccontextmanager
async def serving(
    env: WorkflowEnvironment, queue: str, world: World, cached: int = 100
) -> AsyncIterator[None]:
    """The workflow worker on `queue` and the dispatcher's on its own task queue. `cached` 0:
    no sticky queue, so a worker that goes away leaves no task behind on one (the test server
    does not hand a sticky task to the normal queue when its worker is gone)."""
    manager, remote = fakes(world)
    async with (
        Worker(
            env.client,
            task_queue=queue,
            workflows=[DispatchWorkflow],
            workflow_runner=sandbox.runner(),
            activities=manager,
            max_cached_workflows=cached,
        ),
        Worker(env.client, task_queue=task_queues.DISPATCH, activities=remote),
    ):
        yield


def manifest(replicas: int = 2, **spec: Any) -> dict[str, Any]:
    doc = (
        make_job("train", "ns").task("w", replicas=replicas).spec(queue="multi", **spec).manifest()
    )
    doc["metadata"].update(uid=UID, creationTimestamp="2026-01-01T00:00:00Z")
    return doc


def settings(lost_after: int = 20, stale_deadline: int = 3600, **weights: int) -> DispatchSettings:
    return DispatchSettings(
        queue=QueueName("multi"),
        clusters=weights or {"a": 2, "b": 1},
        lost_after_seconds=lost_after,
        stale_deadline_seconds=stale_deadline,
    )


async def submit(
    env: WorkflowEnvironment,
    queue: str,
    chosen: DispatchSettings | None = None,
    max_history: int = 0,
    **spec: Any,
) -> WorkflowHandle[Any, Any]:
    observed = DispatchObserved(job=manifest(**spec), settings=chosen or settings())
    return await env.client.start_workflow(
        DispatchWorkflow.run,
        DispatchInput(max_history=max_history),
        id=f"{dispatch_workflow_id('ns', 'train')}-{uuid.uuid4().hex[:6]}",
        task_queue=queue,
        start_signal=job_signals.SIGNAL_JOB_OBSERVED,
        start_signal_args=[observed],
    )


async def until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Real time, no skipping: until `check` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {what}")


def event(name: str, reason: str, message: str) -> RemoteEvent:
    return RemoteEvent(name=name, reason=reason, message=message, last_seen=datetime.now(UTC))
