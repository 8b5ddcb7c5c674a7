"""Who goes first: queues, jobs within a queue, tasks within a job.

Sort keys rather than comparators, each ending in a unique name, so every order is total and
the same on every worker. Queues by priority then lowest share (proportion; with capacity, its
`QueueRank`; drf with enableHierarchy adds its `HdrfRank` where it stands in the tiers, so it is
no longer strictly a total order, as in Volcano: `plugins.hdrf`); jobs by the key of each
plugin the configuration has order jobs, in tier order (Volcano's JobOrderFn takes the first
plugin that tells two jobs apart, which is what comparing the keys in turn does), then age;
tasks by priority, then the index in their pod name.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any, Final

from models.keys import JobKey, QueueName
from scheduling.api.snapshot import JobInfo, TaskInfo
from scheduling.api.vectors import dominant_share
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point
from scheduling.plugins import sla, tasktopology
from scheduling.plugins.queuerank import QueueRank

# Priority and the queue plugin's rank, then creation and name; with drf's hierarchy, its
# `HdrfRank` where drf stands among the QueueOrder plugins, so one configuration, one shape.
QueueOrder = tuple[Any, ...]
# The JobOrder plugins' keys, then creation and name; one configuration, one shape.
JobOrder = tuple[Any, ...]
TaskOrder = tuple[int, bool, int, datetime, str]


def queue_order(state: SessionState, name: QueueName) -> QueueOrder:
    """proportion's or capacity's QueueOrderFn (priority, then share), and with drf's
    hierarchy its QueueOrderFn too, in the tiers' order (the first to tell apart decides)."""
    queue = state.queues[name]
    share: tuple[int, Fraction | QueueRank] = (-queue.priority, state.queue_rank(name))
    if state.hdrf is None:
        return (*share, queue.creation, name)
    keys: list[Any] = []
    for plugin in state.config.speakers(Point.QUEUE_ORDER):
        if plugin == "drf":
            keys.append(state.hdrf.rank(name))
        elif plugin in ("proportion", "capacity"):
            keys.extend(share)
    return (*keys, queue.creation, name)


def _priority(state: SessionState, job: JobInfo) -> int:
    return -job.priority


def _gang(state: SessionState, job: JobInfo) -> bool:
    """Not-ready jobs first."""
    return state.is_ready(job)


def _drf(state: SessionState, job: JobInfo) -> Fraction:
    """Lowest dominant share first."""
    return dominant_share(state.job_allocated[job.key], state.cluster)


def _sla(state: SessionState, job: JobInfo) -> sla.SlaOrder:
    return sla.order(job, state.config.sla_waiting)


# Each JobOrder plugin Caldera runs, as a sort key (`conf` refuses the others).
JOB_KEYS: Final[Mapping[str, Callable[[SessionState, JobInfo], Any]]] = {
    "priority": _priority,
    "gang": _gang,
    "drf": _drf,
    "sla": _sla,
}


@functools.cache
def _job_keys(speakers: tuple[str, ...]) -> tuple[Callable[[SessionState, JobInfo], Any], ...]:
    return tuple(JOB_KEYS[name] for name in speakers if name in JOB_KEYS)


def job_order(state: SessionState, key: JobKey) -> JobOrder:
    job = state.jobs[key]
    keys = _job_keys(state.config.speakers(Point.JOB_ORDER))
    return (*[order(state, job) for order in keys], job.creation, key)


def task_order(task: TaskInfo) -> TaskOrder:
    return (-task.priority, task.index is None, task.index or 0, task.creation, task.key)


def job_task_order(
    state: SessionState,
    task: TaskInfo,
    buckets: tasktopology.JobBuckets | None,  # None: task-topology leaves the job alone
) -> tuple[Any, ...]:
    """One job's tasks as allocate takes them: the key of each TaskOrder plugin in tier order
    (priority, task-topology; the first that tells two tasks apart decides, as Volcano's
    TaskOrderFn), then `task_order`. Without task-topology the same order as `task_order`."""
    keys: list[Any] = []
    for name in state.config.speakers(Point.TASK_ORDER):
        if name == "priority":
            keys.append(-task.priority)
        elif name == "task-topology" and buckets is not None:
            keys.append(buckets.order(task))
    return (*keys, *task_order(task))


class JobQueue:
    """A queue's jobs, first by `job_order`, without recomputing every job's order for every
    pick: a job's order depends only on the job itself (its priority, readiness, allocation),
    so it changes only while that job is being placed, after it was taken out. A job put back
    is ordered afresh. The same picks as `min` over the list each time, in O(log n)."""

    def __init__(self, keys: Iterable[JobKey], order: Callable[[JobKey], JobOrder]) -> None:
        self._order = order
        self._heap = [(order(k), k) for k in keys]
        heapq.heapify(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def __iter__(self) -> Iterator[JobKey]:
        return (k for _, k in self._heap)

    def pop(self) -> JobKey:
        return heapq.heappop(self._heap)[1]

    def push(self, key: JobKey) -> None:
        heapq.heappush(self._heap, (self._order(key), key))


def job_queues(
    state: SessionState, by_queue: Mapping[QueueName, Iterable[JobKey]]
) -> dict[QueueName, JobQueue]:
    """Each queue's jobs as a `JobQueue` ordered by `job_order` in this session's state."""
    return {
        queue: JobQueue(keys, lambda k: job_order(state, k)) for queue, keys in by_queue.items()
    }
