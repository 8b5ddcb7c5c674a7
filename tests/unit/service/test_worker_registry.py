"""The worker's registry (`service/worker_registry.py`): the session timer, and the queue series
zeroed and dropped with their queues."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig

from service import metrics, worker_registry

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def runtime() -> tuple[Runtime, MetricBuffer]:
    buffer = MetricBuffer(100_000)
    return Runtime(telemetry=TelemetryConfig(metrics=buffer)), buffer


@pytest.fixture
def buffer(runtime: tuple[Runtime, MetricBuffer]) -> Iterator[MetricBuffer]:
    runtime[1].retrieve_updates()  # drop what earlier tests left
    yield runtime[1]


def test_session_timer_counts_and_times_by_outcome(
    runtime: tuple[Runtime, MetricBuffer], buffer: MetricBuffer
) -> None:
    meter = runtime[0].metric_meter
    with worker_registry.session_timer(meter, "volcano"):
        pass
    with pytest.raises(RuntimeError), worker_registry.session_timer(meter, "volcano"):
        raise RuntimeError("snapshot failed")
    seen = [
        (u.metric.name, u.attributes["outcome"], u.value)
        for u in buffer.retrieve_updates()
        if u.metric.name.startswith("caldera_scheduling")
    ]
    counts = [(n, o, v) for n, o, v in seen if n == metrics.SCHEDULING_SESSIONS.name]
    assert counts == [
        (metrics.SCHEDULING_SESSIONS.name, "ok", 1),
        (metrics.SCHEDULING_SESSIONS.name, "error", 1),
    ]
    durations = [v for n, _, v in seen if n == metrics.SESSION_DURATION.name]
    assert len(durations) == 2 and all(0 <= float(v) < 5 for v in durations)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _values(registry: CollectorRegistry) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (s.name, tuple(s.labels.values())): s.value
        for family in registry.collect()
        for s in family.samples
    }


def test_queue_series_zero_what_a_live_queue_lost_and_drop_a_deleted_queue() -> None:
    clock = _Clock()
    series = worker_registry.QueueSeries(metrics.QUEUE_ALLOCATED, stale_after=60, clock=clock)
    registry = CollectorRegistry()
    registry.register(series)
    cpu, scalar = metrics.QUEUE_ALLOCATED.milli_cpu, metrics.QUEUE_ALLOCATED.scalar_resources
    gpu = "nvidia.com/gpu"
    series.publish(
        {cpu: {("a",): 1000.0, ("b",): 2000.0}, scalar: {("a", gpu): 1000.0}}, {"a", "b"}
    )
    assert _values(registry) == {
        (cpu.name, ("a",)): 1000.0,
        (cpu.name, ("b",)): 2000.0,
        (scalar.name, ("a", gpu)): 1000.0,
    }
    # a no longer holds a GPU: Volcano keeps the resource's series at 0; b was deleted.
    series.publish({cpu: {("a",): 500.0}}, {"a"})
    assert _values(registry) == {(cpu.name, ("a",)): 500.0, (scalar.name, ("a", gpu)): 0.0}
    clock.now = 61  # no session here since: another worker schedules
    assert _values(registry) == {}
    series.publish({cpu: {("a",): 1.0}}, {"a"})
    assert _values(registry)[(cpu.name, ("a",))] == 1.0
