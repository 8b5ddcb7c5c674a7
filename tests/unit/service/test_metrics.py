"""The metrics module: the endpoint a process serves, the session timer, and the docs table
that documents every metric (stale docs fail here)."""

from __future__ import annotations

import logging
import re
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
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
    assert all(n.startswith("caldera_") for n in names)
