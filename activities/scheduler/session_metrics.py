"""A scheduling session's figures as Volcano's series: the queue gauges and the latencies.

The session decides the numbers (`scheduling.framework.queue_report`); this turns them into
the worker's registry series (`service.worker_registry`): each queue's figures into Volcano's
`volcano_queue_*` gauges after every session, and each PodGroup's milestones into the latency
histograms once per PodGroup and stage. Once is kept by a bounded memo in this worker process:
a PodGroup's status write held back to a later session (its pods being bound), or a session
retried, decides the same milestone again, and must not count it twice.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import Final

from models.keys import JobKey
from scheduling.api.backlog import Backlog
from scheduling.api.queue_report import Milestone, QueueFigures, Stage
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import Snapshot
from scheduling.api.vectors import Resources
from scheduling.framework import queue_report
from service import metrics, worker_registry

MEMO_SIZE: Final = 100_000  # (PodGroup, stage) pairs remembered: far more than ever pend

_RESOURCES: Final = (
    ("allocated", metrics.QUEUE_ALLOCATED),
    ("request", metrics.QUEUE_REQUEST),
    ("deserved", metrics.QUEUE_DESERVED),
    ("capability", metrics.QUEUE_CAPACITY),
    ("real_capability", metrics.QUEUE_REAL_CAPACITY),
    ("inqueue", metrics.QUEUE_INQUEUE),
)


def series(figures: Iterable[QueueFigures]) -> dict[metrics.Gauge, dict[tuple[str, ...], float]]:
    """Every queue gauge's value per label set, as Volcano's plugins set them."""
    out: dict[metrics.Gauge, dict[tuple[str, ...], float]] = {g: {} for g in metrics.QUEUE_GAUGES}
    for queue in figures:
        name = str(queue.name)
        for field, gauges in _RESOURCES:
            resources: Resources | None = getattr(queue, field)
            if resources is None:  # no capability: Volcano exports no capacity series
                continue
            out[gauges.milli_cpu][(name,)] = float(resources.milli_cpu)
            out[gauges.memory_bytes][(name,)] = float(resources.memory)
            for resource, value in resources.scalars.items():
                out[gauges.scalar_resources][(name, resource)] = float(value)
        out[metrics.QUEUE_SHARE][(name,)] = queue.share
        out[metrics.QUEUE_WEIGHT][(name,)] = float(queue.weight)
        out[metrics.QUEUE_OVERUSED][(name,)] = 1.0 if queue.overused else 0.0
        for phase, gauge in metrics.QUEUE_POD_GROUPS.items():
            out[gauge][(name,)] = float(queue.pod_groups.get(phase, 0))
    return out


def waits(digest: Backlog, now: datetime) -> dict[tuple[str, ...], float]:
    """Per queue, how long the first job of its line with an estimated start still waits."""
    out: dict[tuple[str, ...], float] = {}
    for queue, line in digest.queues.items():
        first = next((at for i in range(len(line.jobs)) if (at := line.start(i))), None)
        if first is not None:
            out[(str(queue),)] = max(0.0, (first - now).total_seconds())
    return out


def publish(figures: tuple[QueueFigures, ...], digest: Backlog, now: datetime | None) -> None:
    """Set the queue gauges from one session; a queue not in it is deleted: its series go.
    The estimated waits go with them (none without the session's clock)."""
    queues = {str(q.name) for q in figures}
    worker_registry.QUEUES.publish(series(figures), queues)
    estimated = waits(digest, now) if now is not None else {}
    # A line without an estimate has no series, not a wait of 0 (no queue keeps one).
    worker_registry.WAITS.publish({metrics.QUEUE_ESTIMATED_WAIT: estimated}, ())


class Once:
    """Keys seen before, the oldest forgotten past `size`: a worker's memory stays bounded."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._size = size
        self._seen: OrderedDict[tuple[str, Stage], None] = OrderedDict()
        self._lock = threading.Lock()  # one session per scheduler, but several schedulers

    def first(self, key: tuple[str, Stage]) -> bool:
        """True the first time `key` is offered (while remembered)."""
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return False
            self._seen[key] = None
            if len(self._seen) > self._size:
                self._seen.popitem(last=False)
            return True


_ONCE: Final = Once()


def _record(milestone: Milestone, seconds: float) -> None:
    queue = str(milestone.queue)
    if milestone.stage is Stage.INQUEUE:
        worker_registry.observe(metrics.JOB_INQUEUE_LATENCY, seconds, queue)
    elif milestone.stage is Stage.PLACED:
        worker_registry.observe(metrics.E2E_JOB_SCHEDULING_LATENCY, seconds * 1000)
    else:
        worker_registry.observe(metrics.JOB_BOUND_LATENCY, seconds, queue)


def observe(
    snapshot: Snapshot,
    result: SessionResult,
    written: Collection[JobKey],
    now: datetime | None = None,  # None: the wall clock
    once: Once = _ONCE,
) -> None:
    """Time from creation each PodGroup that reached a stage this session, once per stage;
    `written` are the PodGroups whose status the session wrote."""
    at = now or datetime.now(UTC)
    for milestone in queue_report.milestones(snapshot, result, written):
        if once.first((milestone.uid, milestone.stage)):
            _record(milestone, max((at - milestone.created).total_seconds(), 0.0))
