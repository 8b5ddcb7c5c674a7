"""Caldera's Prometheus metrics: every name, type, label and meaning in one place.

One endpoint per process serves both the Temporal SDK's runtime metrics (`temporal_*`: task
latencies, slots, sticky cache, activity failures) and Caldera's own (`caldera_*`), because
Caldera records through the meter of the same `temporalio.runtime.Runtime` whose Prometheus
exporter the process starts (`service/metrics_endpoint.py`):

- workflows through `workflow.metric_meter()`, which records nothing while a workflow replays
  history, so a cache eviction, a worker restart or another worker taking a job over does not
  count the job's past again;
- activities through `activity.metric_meter()` (`activity_meter` here, a no-op outside an
  activity so the functions stay callable from tests and tools);
- the forwarder through `Runtime.metric_meter` (`forwarder.meters.Meters`).

The Temporal meter has counters and histograms but no gauge whose series can be removed, and
Volcano's queue metrics (`volcano_queue_*`, which Volcano's dashboards read) are gauges per
queue that must disappear with their queue. Those (`Gauge`), and the latency histograms in
Volcano's milliseconds and buckets (`Latency`), are declared here too but recorded in a
prometheus_client registry of the worker's (`service/worker_registry.py`), served from the same
address. This module declares and does no I/O, so a workflow imports it without the registry
or the HTTP server.

Jobs by phase is no gauge: jobs live on whichever worker runs their workflow task, and a
restarted worker starts from nothing, so it is a counter of transitions (see
`JOB_PHASE_TRANSITIONS`) and the current count per phase is the `CalderaJobPhase` search
attribute (`temporal workflow count --query 'CalderaJobPhase="Running"'`). The queue gauges
are the figures of the last scheduling session this worker ran (any worker may run the next);
a worker that ran none for `QUEUE_SERIES_STALE_SECONDS` (`service/worker_registry.py`) stops
serving them, so only workers that schedule report a queue (with several, `max by (queue_name)`
reads one value).

Counters are exposed without a `_total` suffix and Caldera's durations in seconds, as the SDK's
are; Volcano's series keep Volcano's names, labels and units (milliseconds). Labels added by
the SDK to every workflow/activity series (`namespace`, `task_queue`, `workflow_type` or
`activity_type`, `service_name`) are not listed below; the registry's series carry none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Literal, NamedTuple

from temporalio import activity
from temporalio.common import MetricCounter, MetricHistogramFloat, MetricMeter

from models.scheduling import PodGroupPhase

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
QUEUE_ESTIMATED_WAIT: Final = Gauge(  # Caldera's own, beside Volcano's queue series
    "caldera_queue_estimated_wait_seconds",
    "How long the first job of the queue's line that has an estimated start is expected to "
    "wait still, from the session's end; no series while none has one.",
    "worker",
    QUEUE_LABELS,
)

# -- worker: the worker clusters (the worker's registry) ---------------------------------------
# Set by the worker's probe of the clusters registered on it (activities/dispatch/clusters.py):
# gauges per cluster, gone with the cluster's Secret, none at all while no cluster is registered.

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

# -- worker: stalls (the worker's registry; service/stalls.py) ---------------------------------

EVENT_LOOP_LAG: Final = Latency(
    "caldera_event_loop_lag_seconds",
    "How late the worker's event loop woke a 0.1 s sleep: all its coroutines waited as long.",
    "worker",
    (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
THREAD_POOL_WAIT: Final = Latency(
    "caldera_thread_pool_wait_seconds",
    "A call's wait for a free thread of a worker's pool, by pool.",
    "worker",
    EVENT_LOOP_LAG.buckets,
    ("pool",),
)
THREAD_POOL_BUSY: Final = Gauge(
    "caldera_thread_pool_busy", "A pool's threads running a call.", "worker", ("pool",)
)
THREAD_POOL_QUEUED: Final = Gauge(
    "caldera_thread_pool_queued", "Calls waiting for a pool's thread.", "worker", ("pool",)
)

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
    QUEUE_ESTIMATED_WAIT,
    *QUEUE_GAUGES,
    *CLUSTER_GAUGES,
    EVENT_LOOP_LAG,
    THREAD_POOL_WAIT,
    THREAD_POOL_BUSY,
    THREAD_POOL_QUEUED,
    E2E_SCHEDULING_LATENCY,
    E2E_JOB_SCHEDULING_LATENCY,
    FORWARDER_EVENTS,
    FORWARDER_RELISTS,
    FORWARDER_SIGNALS_SENT,
    FORWARDER_SIGNALS_DROPPED,
    FORWARDER_SIGNAL_LAG,
)


def activity_meter() -> MetricMeter:
    """The running activity's meter; a no-op when called outside one (tests, tools)."""
    try:
        return activity.metric_meter()
    except RuntimeError:
        return MetricMeter.noop
