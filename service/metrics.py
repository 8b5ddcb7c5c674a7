"""Caldera's Prometheus metrics: every name, type, label and meaning in one place.

One endpoint per process serves both the Temporal SDK's runtime metrics (`temporal_*`: task
latencies, slots, sticky cache, activity failures) and Caldera's own (`caldera_*`), because
Caldera records through the meter of the same `temporalio.runtime.Runtime` whose Prometheus
exporter the process starts (`runtime`):

- workflows through `workflow.metric_meter()`, which records nothing while a workflow replays
  history, so a cache eviction, a worker restart or another worker taking a job over does not
  count the job's past again;
- activities through `activity.metric_meter()` (`activity_meter` here, a no-op outside an
  activity so the functions stay callable from tests and tools);
- the forwarder through `Runtime.metric_meter` (`Forwarder`).

The Temporal meter has counters and histograms but no gauge whose series can be removed, and
Volcano's queue metrics (`volcano_queue_*`, which Volcano's dashboards read) are gauges per
queue that must disappear with their queue. Those, and the latency histograms in Volcano's
milliseconds and buckets, live in a prometheus_client registry of the worker's
(`WORKER_REGISTRY`). Both kinds are served from the one address, so a scrape config, the
chart's ports and `caldera dev up` stay as they are: when the process has such a registry,
`runtime` starts the Temporal exporter on a loopback port of its own and serves the address
itself, each scrape answering with the exporter's text (fetched from that port) followed by
the registry's (one text format, version 0.0.4, and no name in both). The Temporal exporter
cannot serve a second registry, nor can its port be shared with another listener; parsing its
text back into prometheus_client families would re-type its counters (adding `_total`), so it
is passed through as it is. The forwarder has no registry and serves the exporter directly.

Jobs by phase is no gauge: jobs live on whichever worker runs their workflow task, and a
restarted worker starts from nothing, so it is a counter of transitions (see
`JOB_PHASE_TRANSITIONS`) and the current count per phase is the `CalderaJobPhase` search
attribute (`temporal workflow count --query 'CalderaJobPhase="Running"'`). The queue gauges
are the figures of the last scheduling session this worker ran (any worker may run the next);
a worker that ran none for `QUEUE_SERIES_STALE_SECONDS` stops serving them, so only workers
that schedule report a queue (with several, `max by (queue_name)` reads one value).

Counters are exposed without a `_total` suffix and Caldera's durations in seconds, as the SDK's
are; Volcano's series keep Volcano's names, labels and units (milliseconds). Labels added by
the SDK to every workflow/activity series (`namespace`, `task_queue`, `workflow_type` or
`activity_type`, `service_name`) are not listed below; the registry's series carry none.
"""

from __future__ import annotations

import http.client
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Final, Literal, NamedTuple

import prometheus_client
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector
from temporalio import activity
from temporalio.common import MetricCounter, MetricHistogramFloat, MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from models.scheduling import PodGroupPhase

logger = logging.getLogger(__name__)

ENV_ADDRESS: Final = "CALDERA_METRICS_ADDRESS"
WORKER_PORT: Final = 9464
FORWARDER_PORT: Final = 9465
WORKER_ADDRESS: Final = f"127.0.0.1:{WORKER_PORT}"
FORWARDER_ADDRESS: Final = f"127.0.0.1:{FORWARDER_PORT}"

Process = Literal["worker", "forwarder"]


@dataclass(frozen=True)
class Counter:
    name: str
    help: str
    process: Process
    labels: tuple[str, ...] = ()

    kind: ClassVar[str] = "counter"

    def on(self, meter: MetricMeter) -> MetricCounter:
        return meter.create_counter(self.name, self.help)


@dataclass(frozen=True)
class Histogram:
    name: str
    help: str
    process: Process
    buckets: tuple[float, ...]  # upper bounds, seconds
    labels: tuple[str, ...] = ()

    kind: ClassVar[str] = "histogram"

    def on(self, meter: MetricMeter) -> MetricHistogramFloat:
        return meter.create_histogram_float(self.name, self.help, "s")


@dataclass(frozen=True)
class Gauge:
    """A gauge of the worker's registry: its series are set and removed label set by label
    set (a queue's go with the queue), which the Temporal meter cannot do."""

    name: str
    help: str
    process: Process
    labels: tuple[str, ...] = ()

    kind: ClassVar[str] = "gauge"


@dataclass(frozen=True)
class Latency:
    """A histogram of the worker's registry, in the unit its name says: Volcano's are in
    milliseconds with Volcano's buckets, which the Temporal meter (seconds) cannot give."""

    name: str
    help: str
    process: Process
    buckets: tuple[float, ...]  # upper bounds, in the name's unit
    labels: tuple[str, ...] = ()

    kind: ClassVar[str] = "histogram"


Metric = Counter | Histogram | Gauge | Latency


def exponential_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBucketsRange (Go), with which Volcano sets its buckets."""
    factor = (high / low) ** (1 / (count - 1))
    return tuple(low * factor**i for i in range(count))


# -- worker: job workflows ---------------------------------------------------------------------

JOB_PHASE_TRANSITIONS: Final = Counter(
    "caldera_job_phase_transitions",
    "Jobs entering a phase (a job's workflow, counted once per transition: not on replay). "
    "Rate of jobs entering a phase; current counts come from the CalderaJobPhase search attribute.",
    "worker",
    ("phase",),
)

# -- worker: activities --------------------------------------------------------------------------

PODS_CREATED: Final = Counter(
    "caldera_pods_created",
    "Pods created by create_pods (counted per batch as created; pods that already existed, "
    "e.g. on a retry, are not counted again).",
    "worker",
)
PODS_BOUND: Final = Counter(
    "caldera_pods_bound",
    "Pods bound to their node: by a scheduling session, bind_session or bind_placements "
    "(counted when the attempt completes; a pod already bound where it was placed counts).",
    "worker",
)
BIND_FAILURES: Final = Counter(
    "caldera_bind_failures",
    "Pods whose binding failed and went back to the scheduler, by reason.",
    "worker",
    ("reason",),
)
SCHEDULING_SESSIONS: Final = Counter(
    "caldera_scheduling_sessions",
    "Scheduling sessions run (schedule_session attempts), by outcome ok|error.",
    "worker",
    ("scheduler", "outcome"),
)
SESSION_DURATION: Final = Histogram(
    "caldera_scheduling_session_duration_seconds",
    "Wall time of one scheduling session: snapshot, decide, PodGroup status writes.",
    "worker",
    (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    ("scheduler", "outcome"),
)

# -- worker: Volcano's series (the worker's registry) -----------------------------------------
# Volcano's names, help, labels, units and buckets (pkg/scheduler/metrics/queue.go and
# metrics.go, pkg/controllers/metrics/queue.go), so a Volcano dashboard reads them unchanged.

QUEUE_LABELS: Final = ("queue_name",)
SCALAR_LABELS: Final = ("queue_name", "resource")


class QueueResource(NamedTuple):
    """One resource figure of a queue, as Volcano exports it: three gauges."""

    milli_cpu: Gauge
    memory_bytes: Gauge
    scalar_resources: Gauge  # extended resources in milli-units, one series per resource


def _queue_resource(figure: str, cpu: str, memory: str, scalar: str) -> QueueResource:
    name = f"volcano_queue_{figure}"
    return QueueResource(
        Gauge(f"{name}_milli_cpu", cpu, "worker", QUEUE_LABELS),
        Gauge(f"{name}_memory_bytes", memory, "worker", QUEUE_LABELS),
        Gauge(f"{name}_scalar_resources", scalar, "worker", SCALAR_LABELS),
    )


QUEUE_ALLOCATED: Final = _queue_resource(
    "allocated",
    "Allocated CPU count for one queue",
    "Allocated memory for one queue",
    "Allocated scalar resources for one queue",
)
QUEUE_REQUEST: Final = _queue_resource(
    "request",
    "Request CPU count for one queue",
    "Request memory for one queue",
    "Request scalar resources for one queue",
)
QUEUE_DESERVED: Final = _queue_resource(
    "deserved",
    "Deserved CPU count for one queue",
    "Deserved memory for one queue",
    "Deserved scalar resources for one queue",
)
QUEUE_CAPACITY: Final = _queue_resource(
    "capacity",
    "Capacity CPU count for one queue",
    "Capacity memory for one queue",
    "Capacity scalar resources for one queue",
)
QUEUE_REAL_CAPACITY: Final = _queue_resource(
    "real_capacity",
    "Capacity CPU count for one queue",
    "Capacity memory for one queue",
    "Capacity scalar resources for one queue",
)
QUEUE_INQUEUE: Final = _queue_resource(
    "inqueue",
    "Inqueue CPU for admitted but not yet running jobs in one queue",
    "Inqueue memory for admitted but not yet running jobs in one queue",
    "Inqueue scalar resources for admitted but not yet running jobs in one queue",
)
QUEUE_SHARE: Final = Gauge("volcano_queue_share", "Share for one queue", "worker", QUEUE_LABELS)
QUEUE_WEIGHT: Final = Gauge("volcano_queue_weight", "Weight for one queue", "worker", QUEUE_LABELS)
QUEUE_OVERUSED: Final = Gauge(
    "volcano_queue_overused", "If one queue is overused", "worker", QUEUE_LABELS
)
QUEUE_POD_GROUPS: Final = {  # by PodGroup phase, as Volcano's queue controller counts them
    phase: Gauge(
        f"volcano_queue_pod_group_{phase.lower()}_count",
        f"The number of {phase} PodGroup in this queue",
        "worker",
        QUEUE_LABELS,
    )
    for phase in PodGroupPhase
}
QUEUE_GAUGES: Final[tuple[Gauge, ...]] = (
    *QUEUE_ALLOCATED,
    *QUEUE_REQUEST,
    *QUEUE_DESERVED,
    *QUEUE_CAPACITY,
    *QUEUE_REAL_CAPACITY,
    *QUEUE_INQUEUE,
    QUEUE_SHARE,
    QUEUE_WEIGHT,
    QUEUE_OVERUSED,
    *QUEUE_POD_GROUPS.values(),
)

E2E_SCHEDULING_LATENCY: Final = Latency(
    "volcano_e2e_scheduling_latency_milliseconds",
    "Duration of a single scheduling session execution in milliseconds. It covers the entire "
    "cycle from session open, action executions to session close.",
    "worker",
    exponential_range(1, 5000, 20),
)
E2E_JOB_SCHEDULING_LATENCY: Final = Latency(
    "volcano_e2e_job_scheduling_latency_milliseconds",
    "End-to-end job scheduling latency in milliseconds (histogram of per-job duration from "
    "creation to last task assumed)",
    "worker",
    exponential_range(100, 120000, 30),
)
_JOB_BUCKETS: Final = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
JOB_INQUEUE_LATENCY: Final = Latency(
    "caldera_job_inqueue_latency_seconds",
    "From a PodGroup's creation to the session that admits it (Pending -> Inqueue), once per "
    "PodGroup, by queue.",
    "worker",
    _JOB_BUCKETS,
    QUEUE_LABELS,
)
JOB_BOUND_LATENCY: Final = Latency(
    "caldera_job_bound_latency_seconds",
    "From a PodGroup's creation to the session that writes it Running (its minMember pods "
    "bound), once per PodGroup, by queue.",
    "worker",
    _JOB_BUCKETS,
    QUEUE_LABELS,
)

# -- worker: the worker clusters (the worker's registry) ---------------------------------------
# Set by the worker's probe of the clusters registered on it (activities/clusters.py): gauges
# per cluster, gone with the cluster's Secret, none at all while no cluster is registered.

CLUSTER_REACHABLE: Final = Gauge(
    "caldera_cluster_reachable",
    "1 when the worker cluster's last probe (GET /version, then its nodes and pods, with the "
    "kubeconfig of its Secret) succeeded, else 0.",
    "worker",
    ("cluster",),
)
CLUSTER_FREE: Final = Gauge(
    "caldera_cluster_free",
    "A worker cluster's free resources at its last successful probe: its nodes' allocatable "
    "less the requests of the unfinished pods on them (cpu in cores, memory in bytes, pods, "
    "extended resources in their units).",
    "worker",
    ("cluster", "resource"),
)
CLUSTER_GAUGES: Final = (CLUSTER_REACHABLE, CLUSTER_FREE)

# -- forwarder -------------------------------------------------------------------------------------

FORWARDER_EVENTS: Final = Counter(
    "caldera_forwarder_events",
    "Watch events received, by resource kind and type (ADDED|MODIFIED|DELETED; LISTED for "
    "each object of a full list). rate() is events per second.",
    "forwarder",
    ("kind", "type"),
)
FORWARDER_RELISTS: Final = Counter(
    "caldera_forwarder_relists",
    "Full lists of a resource, by kind and reason: initial (a leadership term starts) or "
    "expired (410 Gone: the watch's resourceVersion was too old).",
    "forwarder",
    ("kind", "reason"),
)
FORWARDER_SIGNALS_SENT: Final = Counter(
    "caldera_forwarder_signals_sent",
    "Signals (and signal-with-starts) the Temporal server accepted, by signal name.",
    "forwarder",
    ("signal",),
)
FORWARDER_SIGNALS_DROPPED: Final = Counter(
    "caldera_forwarder_signals_dropped",
    "Signals not delivered, by signal name and reason: closed (no open workflow) or lost "
    "(error after retries).",
    "forwarder",
    ("signal", "reason"),
)
FORWARDER_SIGNAL_LAG: Final = Histogram(
    "caldera_forwarder_signal_lag_seconds",
    "From receipt of the (oldest) watch event behind a signal to the server accepting the "
    "signal: coalescing delay, lane queueing and the RPC.",
    "forwarder",
    (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    ("signal",),
)

ALL: Final[tuple[Metric, ...]] = (
    JOB_PHASE_TRANSITIONS,
    PODS_CREATED,
    PODS_BOUND,
    BIND_FAILURES,
    SCHEDULING_SESSIONS,
    SESSION_DURATION,
    JOB_INQUEUE_LATENCY,
    JOB_BOUND_LATENCY,
    *QUEUE_GAUGES,
    *CLUSTER_GAUGES,
    E2E_SCHEDULING_LATENCY,
    E2E_JOB_SCHEDULING_LATENCY,
    FORWARDER_EVENTS,
    FORWARDER_RELISTS,
    FORWARDER_SIGNALS_SENT,
    FORWARDER_SIGNALS_DROPPED,
    FORWARDER_SIGNAL_LAG,
)


def bind_address(value: str | None) -> str:
    """`host:port` to bind; `:port` means every interface (as Go's); "" means metrics off."""
    value = (value or "").strip()
    return f"0.0.0.0{value}" if value.startswith(":") else value


def url(address: str) -> str:
    """Where to scrape, for logs and summaries: http://<address>/metrics, or "off"."""
    address = bind_address(address)
    return f"http://{address}/metrics" if address else "off"


# -- the worker's registry -----------------------------------------------------------------------

# Histograms and counters of the registry get no `<name>_created` series: Volcano's (Go) have
# none, nor do the SDK's, and a dashboard summing `_count` would not expect them.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

QUEUE_SERIES_STALE_SECONDS: Final = 60.0  # no session for this long: serve no queue series

Series = Mapping[Gauge, Mapping[tuple[str, ...], float]]  # gauge -> label values -> value


class QueueSeries(Collector):
    """The per-queue gauges, set as a whole from each session's figures.

    A series the session no longer reports is set to 0 while its queue exists (Volcano keeps a
    scalar resource it has seen at 0) and removed with its queue (Volcano's DeleteQueueMetrics
    on a queue's deletion). Nothing is served once no session was published here for
    `stale_after` seconds: another worker runs the sessions, or none does.
    """

    def __init__(
        self,
        gauges: Iterable[Gauge],
        stale_after: float = QUEUE_SERIES_STALE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._gauges = {
            g: prometheus_client.Gauge(g.name, g.help, g.labels, registry=None) for g in gauges
        }
        self._known: dict[Gauge, set[tuple[str, ...]]] = {g: set() for g in self._gauges}
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
            CLUSTER_REACHABLE.name, CLUSTER_REACHABLE.help, CLUSTER_REACHABLE.labels, registry=None
        )
        self._free = prometheus_client.Gauge(
            CLUSTER_FREE.name, CLUSTER_FREE.help, CLUSTER_FREE.labels, registry=None
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
QUEUES: Final = QueueSeries(QUEUE_GAUGES)
WORKER_REGISTRY.register(QUEUES)
CLUSTERS: Final = ClusterSeries()
WORKER_REGISTRY.register(CLUSTERS)
LATENCIES: Final = {
    m: prometheus_client.Histogram(
        m.name, m.help, m.labels, buckets=m.buckets, registry=WORKER_REGISTRY
    )
    for m in (
        E2E_SCHEDULING_LATENCY,
        E2E_JOB_SCHEDULING_LATENCY,
        JOB_INQUEUE_LATENCY,
        JOB_BOUND_LATENCY,
    )
}


def observe(metric: Latency, value: float, *labels: str) -> None:
    """One observation of a registry histogram, in its unit, with its label values."""
    instrument = LATENCIES[metric]
    (instrument.labels(*labels) if labels else instrument).observe(value)


# -- serving -------------------------------------------------------------------------------------


def _free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exporter(address: str) -> Runtime:
    """A Runtime whose Temporal exporter serves at `address`; ValueError: it could not bind."""
    buckets = {m.name: list(m.buckets) for m in ALL if isinstance(m, Histogram)}
    prometheus = PrometheusConfig(
        bind_address=address, durations_as_seconds=True, histogram_bucket_overrides=buckets
    )
    return Runtime(telemetry=TelemetryConfig(metrics=prometheus))


class _Endpoint(ThreadingHTTPServer):
    """GET /metrics: the Temporal exporter's text (from its loopback port), then the registry's."""

    daemon_threads = True

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)
        self.registry = registry
        self.exporter_port = 0  # set once the exporter runs

    def scrape(self) -> bytes:
        sdk = b""
        connection = http.client.HTTPConnection("127.0.0.1", self.exporter_port, timeout=10)
        try:
            connection.request("GET", "/metrics")
            response = connection.getresponse()
            sdk = response.read() if response.status == 200 else b""
        except OSError as e:  # serve Caldera's own all the same; the log says what is missing
            logger.warning("temporal metrics not read port=%d error=%s", self.exporter_port, e)
        finally:
            connection.close()
        return sdk + prometheus_client.generate_latest(self.registry)


class _Handler(BaseHTTPRequestHandler):
    server: _Endpoint

    def do_GET(self) -> None:
        if self.path.partition("?")[0] != "/metrics":
            self.send_error(404)
            return
        body = self.server.scrape()
        self.send_response(200)
        self.send_header("Content-Type", prometheus_client.CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Scrapes are not logged: one every few seconds says nothing."""


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _served(address: str, registry: CollectorRegistry) -> Runtime | None:
    """Serve `address` ourselves; the Temporal exporter on a free loopback port behind it."""
    try:
        endpoint = _Endpoint(*_split(address), registry)
    except (OSError, ValueError) as e:
        logger.error("metrics endpoint not started address=%s error=%s", address, e)
        return None
    error: ValueError | None = None
    for _ in range(3):  # the free port may be taken before the exporter binds it
        port = _free_loopback_port()
        try:
            started = _exporter(f"127.0.0.1:{port}")
        except ValueError as e:
            error = e
            continue
        endpoint.exporter_port = port
        threading.Thread(target=endpoint.serve_forever, name="metrics", daemon=True).start()
        return started
    endpoint.server_close()
    logger.error("metrics endpoint not started address=%s error=%s", address, error)
    return None


def runtime(address: str, registry: CollectorRegistry | None = None) -> Runtime | None:
    """A Runtime exporting SDK and Caldera metrics at http://<address>/metrics; None: off.

    With `registry` (the worker's) its series are served from the same address, after the
    SDK's. An address that cannot be bound (say a second replica on one host with the default
    port) logs an ERROR and runs without metrics: losing the endpoint must not stop the
    controllers, and Prometheus shows the target down.
    """
    address = bind_address(address)
    if not address:
        return None
    if registry is not None:
        started = _served(address, registry)
    else:
        try:
            started = _exporter(address)
        except ValueError as e:  # the exporter could not bind
            logger.error("metrics endpoint not started address=%s error=%s", address, e)
            return None
    if started is not None:
        logger.info("metrics endpoint serving url=%s", url(address))
    return started


def activity_meter() -> MetricMeter:
    """The running activity's meter; a no-op when called outside one (tests, tools)."""
    try:
        return activity.metric_meter()
    except RuntimeError:
        return MetricMeter.noop


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
        SCHEDULING_SESSIONS.on(meter).add(1, labels)
        SESSION_DURATION.on(meter).record(took, labels)
        observe(E2E_SCHEDULING_LATENCY, took * 1000)  # Volcano's, in ms, every session


class Forwarder:
    """The forwarder's instruments, created once from its runtime's meter (no-op by default)."""

    def __init__(self, meter: MetricMeter = MetricMeter.noop) -> None:
        self.events = FORWARDER_EVENTS.on(meter)
        self.relists = FORWARDER_RELISTS.on(meter)
        self.sent = FORWARDER_SIGNALS_SENT.on(meter)
        self.dropped = FORWARDER_SIGNALS_DROPPED.on(meter)
        self.lag = FORWARDER_SIGNAL_LAG.on(meter)
