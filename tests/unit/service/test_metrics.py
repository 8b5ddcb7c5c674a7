"""The metrics module: the endpoint a process serves, the session timer, and the docs table
that documents every metric (stale docs fail here)."""

from __future__ import annotations

import logging
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Histogram
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig

from cli.devstack import processes
from service import metrics

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
# The table of metrics: searched in README.md and docs/, wherever the text has moved.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.fixture(scope="module")
def runtime() -> tuple[Runtime, MetricBuffer]:
    buffer = MetricBuffer(100_000)
    return Runtime(telemetry=TelemetryConfig(metrics=buffer)), buffer


@pytest.fixture
def buffer(runtime: tuple[Runtime, MetricBuffer]) -> Iterator[MetricBuffer]:
    runtime[1].retrieve_updates()  # drop what earlier tests left
    yield runtime[1]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("127.0.0.1:9464", "127.0.0.1:9464", id="host-port"),
        pytest.param(":9465", "0.0.0.0:9465", id="port-only-all-interfaces"),
        pytest.param("", "", id="empty-off"),
        pytest.param(None, "", id="unset-off"),
        pytest.param("  ", "", id="blank-off"),
    ],
)
def test_bind_address(value: str | None, expected: str) -> None:
    assert metrics.bind_address(value) == expected


def test_no_address_no_runtime() -> None:
    assert metrics.runtime("") is None
    assert metrics.url("") == "off"


def test_endpoint_serves_sdk_style_and_caldera_metrics() -> None:
    port = processes.free_port()
    rt = metrics.runtime(f"127.0.0.1:{port}")
    assert rt is not None
    metrics.PODS_CREATED.on(rt.metric_meter).add(3)
    metrics.FORWARDER_SIGNAL_LAG.on(rt.metric_meter).record(0.03, {"signal": "pods_changed"})
    url = metrics.url(f"127.0.0.1:{port}")
    body = urllib.request.urlopen(url, timeout=5).read().decode()
    assert re.search(r"^caldera_pods_created\{[^}]*\} 3$", body, re.M), body
    # Caldera's own buckets (seconds), not the exporter's defaults.
    assert re.search(
        r'^caldera_forwarder_signal_lag_seconds_bucket\{[^}]*le="0.025"\} 0$', body, re.M
    )
    assert re.search(
        r'^caldera_forwarder_signal_lag_seconds_bucket\{[^}]*le="0.05"\} 1$', body, re.M
    )


def test_a_busy_port_logs_an_error_and_runs_without_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        address = f"127.0.0.1:{busy.getsockname()[1]}"
        with caplog.at_level(logging.ERROR, logger=metrics.__name__):
            assert metrics.runtime(address) is None
    assert f"metrics endpoint not started address={address}" in caplog.text


def test_session_timer_counts_and_times_by_outcome(
    runtime: tuple[Runtime, MetricBuffer], buffer: MetricBuffer
) -> None:
    meter = runtime[0].metric_meter
    with metrics.session_timer(meter, "volcano"):
        pass
    with pytest.raises(RuntimeError), metrics.session_timer(meter, "volcano"):
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


def test_activity_meter_outside_an_activity_is_a_noop() -> None:
    metrics.PODS_BOUND.on(metrics.activity_meter()).add(1)  # must not raise


@pytest.mark.parametrize("metric", metrics.ALL, ids=lambda m: m.name)
def test_docs_document_every_metric(metric: metrics.Metric) -> None:
    rows = [
        line
        for page in PAGES
        for line in page.read_text().splitlines()
        if line.startswith(f"| `{metric.name}`")
    ]
    assert rows, f"docs: no table row for {metric.name}"
    row = rows[0]
    assert metric.kind in row
    for label in metric.labels:
        assert f"`{label}`" in row, f"docs: {metric.name} row lacks label {label}"


def test_every_metric_is_prefixed_and_unique() -> None:
    names = [m.name for m in metrics.ALL]
    assert len(names) == len(set(names))
    # Volcano's own series keep Volcano's names; they live in the worker's registry.
    volcano = [m for m in metrics.ALL if m.name.startswith("volcano_")]
    assert all(isinstance(m, metrics.Gauge | metrics.Latency) for m in volcano)
    assert all(n.startswith(("caldera_", "volcano_")) for n in names)


def test_volcano_buckets_are_volcanos() -> None:
    """prometheus.ExponentialBucketsRange(1, 5000, 20) and (100, 120000, 30)."""
    session = metrics.E2E_SCHEDULING_LATENCY.buckets
    assert len(session) == 20 and session[0] == 1 and session[-1] == pytest.approx(5000)
    assert session[1] == pytest.approx(5000 ** (1 / 19))
    job = metrics.E2E_JOB_SCHEDULING_LATENCY.buckets
    assert len(job) == 30 and job[0] == 100 and job[-1] == pytest.approx(120000)


def test_volcano_queue_series_names_and_labels() -> None:
    names = {g.name: g.labels for g in metrics.QUEUE_GAUGES}
    for figure in ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue"):
        assert names[f"volcano_queue_{figure}_milli_cpu"] == ("queue_name",)
        assert names[f"volcano_queue_{figure}_memory_bytes"] == ("queue_name",)
        assert names[f"volcano_queue_{figure}_scalar_resources"] == ("queue_name", "resource")
    for phase in ("inqueue", "pending", "running", "unknown", "completed"):
        assert names[f"volcano_queue_pod_group_{phase}_count"] == ("queue_name",)
    for gauge in ("share", "weight", "overused"):
        assert names[f"volcano_queue_{gauge}"] == ("queue_name",)
    assert len(names) == 26


def _scrape(url: str) -> str:
    return str(urllib.request.urlopen(url, timeout=5).read().decode())


def test_one_endpoint_serves_the_sdk_and_the_registry() -> None:
    """The worker's registry comes out of the same address as the Temporal exporter's series."""
    registry = CollectorRegistry()
    series = metrics.QueueSeries(metrics.QUEUE_GAUGES)
    registry.register(series)
    series.publish({metrics.QUEUE_WEIGHT: {("q1",): 3.0}}, {"q1"})
    Histogram("t_latency_milliseconds", "a test's", buckets=(1.0,), registry=registry).observe(2)
    port = processes.free_port()
    rt = metrics.runtime(f"127.0.0.1:{port}", registry)
    assert rt is not None
    metrics.PODS_CREATED.on(rt.metric_meter).add(2)
    url = metrics.url(f"127.0.0.1:{port}")
    body = _scrape(url)
    assert re.search(r"^caldera_pods_created\{[^}]*\} 2$", body, re.M), body
    assert re.search(r'^volcano_queue_weight\{queue_name="q1"\} 3.0$', body, re.M), body
    assert re.search(r'^t_latency_milliseconds_bucket\{le="\+Inf"\} 1.0$', body, re.M), body
    assert "t_latency_milliseconds_created" not in body  # as Volcano's (Go) and the SDK's
    with pytest.raises(urllib.error.HTTPError) as missing:
        _scrape(url.replace("/metrics", "/other"))
    assert missing.value.code == 404


def test_a_busy_port_with_a_registry_logs_an_error_too(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        address = f"127.0.0.1:{busy.getsockname()[1]}"
        with caplog.at_level(logging.ERROR, logger=metrics.__name__):
            assert metrics.runtime(address, CollectorRegistry()) is None
    assert f"metrics endpoint not started address={address}" in caplog.text


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
    series = metrics.QueueSeries(metrics.QUEUE_ALLOCATED, stale_after=60, clock=clock)
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
