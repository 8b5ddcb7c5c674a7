"""Who goes first: queues, jobs within a queue, tasks within a job.

Sort keys rather than comparators, each ending in a unique name, so every order is total and
the same on every worker. Queues by priority then lowest share (proportion; with capacity, its
`QueueRank`); jobs by the key of each plugin the configuration has order jobs, in tier order
(Volcano's JobOrderFn takes the first plugin that tells two jobs apart, which is what comparing
the keys in turn does), then age; tasks by priority, then the index in their pod name.

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
from scheduling.api import jobs
from scheduling.api.snapshot import JobInfo, TaskInfo
from scheduling.api.vectors import dominant_share
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point
from scheduling.plugins import sla
from scheduling.plugins.queuerank import QueueRank

QueueOrder = tuple[int, Fraction | QueueRank, datetime, str]
# The JobOrder plugins' keys, then creation and name; one configuration, one shape.
JobOrder = tuple[Any, ...]
TaskOrder = tuple[int, bool, int, datetime, str]


def queue_order(state: SessionState, name: QueueName) -> QueueOrder:
    queue = state.queues[name]
    return (-queue.priority, state.queue_rank(name), queue.creation, name)


def _priority(state: SessionState, job: JobInfo) -> int:
    return -job.priority


def _gang(state: SessionState, job: JobInfo) -> bool:
    """Not-ready jobs first."""
    return jobs.is_ready(job, state.tasks_of(job.key))


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
