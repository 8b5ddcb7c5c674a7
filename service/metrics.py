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

prometheus_client is not needed: the Temporal meter has counters and histograms with labels,
which is all Caldera records. It has no up-down counter, and a gauge set by one worker process
cannot hold a cluster-wide count of jobs in a phase anyway (jobs live on whichever worker runs
their workflow task, and a restarted worker starts from nothing); so jobs by phase is a counter
of transitions (see `JOB_PHASE_TRANSITIONS`) and the current count per phase is the
`CalderaJobPhase` search attribute (`temporal workflow count --query
'CalderaJobPhase="Running"'`).

Counters are exposed without a `_total` suffix and durations in seconds, as the SDK's are.
Labels added by the SDK to every workflow/activity series (`namespace`, `task_queue`,
`workflow_type` or `activity_type`, `service_name`) are not listed below.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, Final, Literal

from temporalio import activity
from temporalio.common import MetricCounter, MetricHistogramFloat, MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

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


Metric = Counter | Histogram

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


def runtime(address: str) -> Runtime | None:
    """A Runtime exporting SDK and Caldera metrics at http://<address>/metrics; None: off.

    An address that cannot be bound (say a second replica on one host with the default port)
    logs an ERROR and runs without metrics: losing the endpoint must not stop the controllers,
    and Prometheus shows the target down.
    """
    address = bind_address(address)
    if not address:
        return None
    buckets = {m.name: list(m.buckets) for m in ALL if isinstance(m, Histogram)}
    prometheus = PrometheusConfig(
        bind_address=address, durations_as_seconds=True, histogram_bucket_overrides=buckets
    )
    try:
        started = Runtime(telemetry=TelemetryConfig(metrics=prometheus))
    except ValueError as e:  # the exporter could not bind
        logger.error("metrics endpoint not started address=%s error=%s", address, e)
        return None
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
    """Count one scheduling session and record its duration, labelled by how it ended."""
    start = time.monotonic()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    finally:
        labels = {"scheduler": scheduler, "outcome": outcome}
        SCHEDULING_SESSIONS.on(meter).add(1, labels)
        SESSION_DURATION.on(meter).record(time.monotonic() - start, labels)


class Forwarder:
    """The forwarder's instruments, created once from its runtime's meter (no-op by default)."""

    def __init__(self, meter: MetricMeter = MetricMeter.noop) -> None:
        self.events = FORWARDER_EVENTS.on(meter)
        self.relists = FORWARDER_RELISTS.on(meter)
        self.sent = FORWARDER_SIGNALS_SENT.on(meter)
        self.dropped = FORWARDER_SIGNALS_DROPPED.on(meter)
        self.lag = FORWARDER_SIGNAL_LAG.on(meter)
