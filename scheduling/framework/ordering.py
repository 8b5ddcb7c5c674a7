"""Who goes first: queues, jobs within a queue, tasks within a job.

Sort keys rather than comparators, each ending in a unique name, so every order is total and
the same on every worker. The keys are the default configuration's, in tier order: queues by
priority then lowest share (proportion; with capacity, its `QueueRank`); jobs by priority,
not-ready first (gang), lowest dominant share (drf), then age; tasks by priority, then the
index in their pod name.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from fractions import Fraction

from models.keys import JobKey, QueueName
from scheduling.api import jobs
from scheduling.api.snapshot import TaskInfo
from scheduling.api.vectors import dominant_share
from scheduling.framework.state import SessionState
from scheduling.plugins.queuerank import QueueRank

ZERO = Fraction(0)
QueueOrder = tuple[int, Fraction | QueueRank, datetime, str]
JobOrder = tuple[int, bool, Fraction, datetime, str]
TaskOrder = tuple[int, bool, int, datetime, str]


def queue_order(state: SessionState, name: QueueName) -> QueueOrder:
    queue = state.queues[name]
    return (-queue.priority, state.queue_rank(name), queue.creation, name)


def job_order(state: SessionState, key: JobKey) -> JobOrder:
    """Each plugin's key only when the configuration has it order jobs."""
    job, config = state.jobs[key], state.config
    ready = jobs.is_ready(job, state.tasks_of(key))
    share = dominant_share(state.job_allocated[key], state.cluster) if config.drf_order else ZERO
    return (-job.priority if config.job_priority else 0, ready, share, job.creation, key)


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
