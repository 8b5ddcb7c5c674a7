"""The worker's prometheus_client registry: the series the Temporal meter cannot carry.

Volcano's queue gauges must be set and removed label set by label set (a queue's series go with
the queue), and Volcano's latencies are histograms in milliseconds with Volcano's buckets; the
Temporal meter has neither. They live in `WORKER_REGISTRY`, which `service/metrics_endpoint.py`
serves after the SDK's series from the worker's one address. Declared (names, help, labels) in
`service/metrics.py`; held and recorded here, apart from the declarations, because this is
process state with locks and a clock that a workflow must never import.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Final

import prometheus_client
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector
from temporalio.common import MetricMeter

from service import metrics

# Histograms and counters of the registry get no `<name>_created` series: Volcano's (Go) have
# none, nor do the SDK's, and a dashboard summing `_count` would not expect them.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

QUEUE_SERIES_STALE_SECONDS: Final = 60.0  # no session for this long: serve no queue series

Series = Mapping[metrics.Gauge, Mapping[tuple[str, ...], float]]  # gauge -> label values -> value


class QueueSeries(Collector):
    """The per-queue gauges, set as a whole from each session's figures.

    A series the session no longer reports is set to 0 while its queue exists (Volcano keeps a
    scalar resource it has seen at 0) and removed with its queue (Volcano's DeleteQueueMetrics
    on a queue's deletion). Nothing is served once no session was published here for
    `stale_after` seconds: another worker runs the sessions, or none does.
    """

    def __init__(
        self,
        gauges: Iterable[metrics.Gauge],
        stale_after: float = QUEUE_SERIES_STALE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gauges = {
            g: prometheus_client.Gauge(g.name, g.help, g.labels, registry=None) for g in gauges
        }
        self._known: dict[metrics.Gauge, set[tuple[str, ...]]] = {g: set() for g in self._gauges}
        self._stale_after = stale_after
        self._clock = clock
        self._published: float | None = None
        self._lock = threading.Lock()

    def publish(self, series: Series, queues: Collection[str]) -> None:
        """One session's series; `queues` are the queues that exist (the first label)."""
        with self._lock:
            for gauge, instrument in self._gauges.items():
                values = series.get(gauge, {})
                for labels, value in values.items():
                    instrument.labels(*labels).set(value)
                for labels in self._known[gauge] - set(values):
                    if labels[0] in queues:
                        instrument.labels(*labels).set(0)
                    else:
                        instrument.remove(*labels)
                        self._known[gauge].discard(labels)
                self._known[gauge] |= set(values)
            self._published = self._clock()

    def describe(self) -> Iterable[Family]:
        for instrument in self._gauges.values():
            yield from instrument.describe()

    def collect(self) -> Iterable[Family]:
        with self._lock:
            published = self._published
            fresh = published is not None and self._clock() - published <= self._stale_after
            families = [f for i in self._gauges.values() for f in i.collect()] if fresh else []
        yield from families


class ClusterSeries(Collector):
    """The worker clusters' gauges, replaced as a whole by each probe round: a cluster whose
    Secret is gone loses its series, and a worker with no cluster registered serves none."""

    def __init__(self) -> None:
        self._reachable = prometheus_client.Gauge(
            metrics.CLUSTER_REACHABLE.name,
            metrics.CLUSTER_REACHABLE.help,
            metrics.CLUSTER_REACHABLE.labels,
            registry=None,
        )
        self._free = prometheus_client.Gauge(
            metrics.CLUSTER_FREE.name,
            metrics.CLUSTER_FREE.help,
            metrics.CLUSTER_FREE.labels,
            registry=None,
        )
        self._any = False  # no cluster published: not even the families' HELP lines
        self._lock = threading.Lock()

    def publish(
        self, reachable: Mapping[str, bool], free: Mapping[str, Mapping[str, float]]
    ) -> None:
        """One round: each cluster's reachability and, for those probed, its free figures."""
        with self._lock:
            self._reachable.clear()
            self._free.clear()
            for cluster, up in reachable.items():
                self._reachable.labels(cluster).set(1 if up else 0)
            for cluster, figures in free.items():
                for resource, value in figures.items():
                    self._free.labels(cluster, resource).set(value)
            self._any = bool(reachable)

    def describe(self) -> Iterable[Family]:
        yield from self._reachable.describe()
        yield from self._free.describe()

    def collect(self) -> Iterable[Family]:
        with self._lock:
            shown = (self._reachable, self._free) if self._any else ()
            families = [f for gauge in shown for f in gauge.collect()]
        yield from families


WORKER_REGISTRY: Final = CollectorRegistry()
QUEUES: Final = QueueSeries(metrics.QUEUE_GAUGES)
WORKER_REGISTRY.register(QUEUES)
WAITS: Final = QueueSeries((metrics.QUEUE_ESTIMATED_WAIT,))  # the lines' estimated waits
WORKER_REGISTRY.register(WAITS)
CLUSTERS: Final = ClusterSeries()
WORKER_REGISTRY.register(CLUSTERS)
LATENCIES: Final = {
    m: prometheus_client.Histogram(
        m.name, m.help, m.labels, buckets=m.buckets, registry=WORKER_REGISTRY
    )
    for m in (
        metrics.E2E_SCHEDULING_LATENCY,
        metrics.E2E_JOB_SCHEDULING_LATENCY,
        metrics.JOB_INQUEUE_LATENCY,
        metrics.JOB_BOUND_LATENCY,
        metrics.EVENT_LOOP_LAG,
        metrics.THREAD_POOL_WAIT,
    )
}


def observe(metric: metrics.Latency, value: float, *labels: str) -> None:
    """One observation of a registry histogram, in its unit, with its label values."""
    instrument = LATENCIES[metric]
    (instrument.labels(*labels) if labels else instrument).observe(value)


@contextmanager
def session_timer(meter: MetricMeter, scheduler: str) -> Iterator[None]:
    """Count one scheduling session and record its duration, labelled by how it ended (and
    unlabelled in Volcano's volcano_e2e_scheduling_latency_milliseconds)."""
    start = time.monotonic()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    finally:
        took = time.monotonic() - start
        labels = {"scheduler": scheduler, "outcome": outcome}
        metrics.SCHEDULING_SESSIONS.on(meter).add(1, labels)
        metrics.SESSION_DURATION.on(meter).record(took, labels)
        observe(metrics.E2E_SCHEDULING_LATENCY, took * 1000)  # Volcano's, in ms, every session
