"""The session's working copy of a snapshot: what the actions change as they decide.

Volcano mutates deep-cloned cache objects in place; here the snapshot stays frozen and this
object holds the per-session maps (nodes, task statuses, queue usage, PodGroup phases, fit
errors) that the actions update through a handful of methods, so the node, queue and job
books always move together and a `Statement` can undo exactly what it did. It lives for one
`run_session` call and is never returned: the result is built from it at the end.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from fractions import Fraction

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling import jobs, proportion
from scheduling.resources import EMPTY, Resources
from scheduling.result import Eviction
from scheduling.snapshot import (
    PREEMPTABLE,
    JobInfo,
    NodeInfo,
    NodeName,
    PodKey,
    QueueInfo,
    Snapshot,
    TaskInfo,
    TaskStatus,
)


class SessionState:
    """Mutable books for one session; every collection is keyed and read in sorted order."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.nodes: dict[NodeName, NodeInfo] = {n.name: n for n in snapshot.nodes}
        self.tasks: dict[PodKey, TaskInfo] = {t.key: t for t in snapshot.tasks}
        self.jobs: dict[JobKey, JobInfo] = {j.key: j for j in snapshot.jobs}
        self.queues: dict[QueueName, QueueInfo] = {q.name: q for q in snapshot.queues}
        self.job_tasks: dict[JobKey, list[PodKey]] = {
            key: [t.key for t in snapshot.tasks_of(key)] for key in self.jobs
        }
        queue_demands = proportion.demands(snapshot)
        self.demands = {d.name: d for d in queue_demands}
        guaranteed = proportion.total_guarantee(snapshot.queues)
        cluster = self.cluster = snapshot.total_resource
        self.deserved = dict(proportion.water_fill(cluster, queue_demands, guaranteed))
        self.real_capability = {
            d.name: proportion.real_capability(cluster, guaranteed, d) for d in queue_demands
        }
        self.queue_inqueue = {d.name: d.inqueue for d in queue_demands}
        self.job_allocated = {key: jobs.allocated(self.tasks_of(key)) for key in self.jobs}
        self.queue_allocated: dict[QueueName, Resources] = {d.name: EMPTY for d in queue_demands}
        for key, held in self.job_allocated.items():
            queue = self.jobs[key].queue
            self.queue_allocated[queue] = self.allocated_of(queue).add(held)
        # Per job, the node-fit failures of its tasks, in the order they were found.
        self.fit_errors: dict[JobKey, dict[PodKey, str]] = {}
        # Tasks skipped without a node-fit failure of their own (queue share), and why.
        self.notes: dict[PodKey, str] = {}
        # Per job, why it was not even tried (enqueue refused, queue used up).
        self.job_errors: dict[JobKey, str] = {}
        # Tasks whose allocation a discarded statement undid: the node they would have had.
        self.discarded: dict[PodKey, NodeName] = {}
        self.dispatched: list[PodKey] = []
        # Running pods to delete for starving gangs, in the order they were committed.
        self.evictions: list[Eviction] = []
        # Gangs that can never be ready with the tasks they have (JobValid at session open).
        self.invalid: dict[JobKey, tuple[str, str]] = {}
        for key, job in self.jobs.items():
            verdict = jobs.validity(job, self.tasks_of(key))
            if verdict is not None:
                self.invalid[key] = verdict

    def tasks_of(self, key: JobKey) -> list[TaskInfo]:
        return [self.tasks[k] for k in self.job_tasks.get(key, [])]

    def allocated_of(self, queue: QueueName) -> Resources:
        return self.queue_allocated.get(queue, EMPTY)

    def deserved_of(self, queue: QueueName) -> Resources:
        return self.deserved.get(queue, EMPTY)

    def queue_share(self, queue: QueueName) -> Fraction:
        return proportion.queue_share(self.allocated_of(queue), self.deserved_of(queue))

    def set_phase(self, key: JobKey, phase: PodGroupPhase) -> None:
        self.jobs[key] = self.jobs[key].model_copy(update={"phase": phase})

    def _book(self, task: TaskInfo, node: NodeName, bucket: str, sign: int) -> None:
        """Move a task's request on or off its node's `bucket` and its queue and job books.

        `used` is an allocation (it takes idle room), `pipelined` a task waiting for room
        being released, `releasing` an evicted task whose room frees up once it is gone. A
        task pipelined onto a node counts for its queue and job as if allocated; an evicted
        one stops counting: these are the proportion and drf plugins' event handlers.
        """
        move = Resources.add if sign > 0 else Resources.sub
        current = self.nodes[node]
        update: dict[str, Resources] = {bucket: move(getattr(current, bucket), task.request)}
        if bucket == "used":
            update["nonzero_used"] = move(current.nonzero_used, task.nonzero_request)
        self.nodes[node] = current.model_copy(update=update)
        held = -sign if bucket == "releasing" else sign
        holds = Resources.add if held > 0 else Resources.sub
        queue = self.jobs[task.job].queue
        self.queue_allocated[queue] = holds(self.allocated_of(queue), task.request)
        self.job_allocated[task.job] = holds(self.job_allocated[task.job], task.request)

    def _set(self, key: PodKey, status: TaskStatus, node: NodeName | None) -> None:
        self.tasks[key] = self.tasks[key].model_copy(update={"status": status, "node_name": node})

    def allocate(self, key: PodKey, node: NodeName) -> None:
        """Pending -> Allocated on `node`, in the session only (Statement.Allocate)."""
        task = self.tasks[key]
        if task.status is not TaskStatus.PENDING or node not in self.nodes:
            raise ValueError(f"task {key}: cannot allocate from status {task.status} to {node}")
        self._set(key, TaskStatus.ALLOCATED, node)
        self._book(task, node, "used", +1)

    def deallocate(self, key: PodKey) -> None:
        """Allocated -> Pending, remembering the node for the pod's "could go to" message."""
        task = self.tasks[key]
        if task.status is not TaskStatus.ALLOCATED or task.node_name is None:
            raise ValueError(f"task {key}: cannot deallocate from status {task.status}")
        self._book(task, task.node_name, "used", -1)
        self.discarded[key] = task.node_name
        self._set(key, TaskStatus.PENDING, None)

    def pipeline(self, key: PodKey, node: NodeName) -> None:
        """Pending -> Pipelined on `node`: it waits there for room being released."""
        task = self.tasks[key]
        if task.status is not TaskStatus.PENDING or node not in self.nodes:
            raise ValueError(f"task {key}: cannot pipeline from status {task.status} to {node}")
        self._set(key, TaskStatus.PIPELINED, node)
        self._book(task, node, "pipelined", +1)

    def unpipeline(self, key: PodKey) -> None:
        """Pipelined -> Pending (a discarded statement)."""
        task = self.tasks[key]
        if task.status is not TaskStatus.PIPELINED or task.node_name is None:
            raise ValueError(f"task {key}: cannot unpipeline from status {task.status}")
        self._book(task, task.node_name, "pipelined", -1)
        self._set(key, TaskStatus.PENDING, None)

    def evict(self, key: PodKey) -> TaskStatus:
        """Running/Bound -> Releasing; returns the status to restore should it be undone."""
        task = self.tasks[key]
        if task.status not in PREEMPTABLE or task.node_name is None:
            raise ValueError(f"task {key}: cannot evict from status {task.status}")
        self._set(key, TaskStatus.RELEASING, task.node_name)
        self._book(task, task.node_name, "releasing", +1)
        return task.status

    def unevict(self, key: PodKey, status: TaskStatus) -> None:
        """Releasing -> `status` (a discarded statement: the victim keeps running)."""
        task = self.tasks[key]
        if task.status is not TaskStatus.RELEASING or task.node_name is None:
            raise ValueError(f"task {key}: cannot unevict from status {task.status}")
        self._book(task, task.node_name, "releasing", -1)
        self._set(key, status, task.node_name)

    def dispatch(self, key: PodKey) -> None:
        """Allocated -> Binding: the placement leaves the session as a result."""
        self.tasks[key] = self.tasks[key].model_copy(update={"status": TaskStatus.BINDING})
        self.discarded.pop(key, None)
        self.dispatched.append(key)

    def record_fit_error(self, job: JobKey, task: PodKey, message: str) -> None:
        self.fit_errors.setdefault(job, {})[task] = message
