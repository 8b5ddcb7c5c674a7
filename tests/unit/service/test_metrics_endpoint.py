"""The metrics endpoint a process serves (`service/metrics_endpoint.py`): its address, the SDK's
series and the worker's registry from one port, and a busy port logged, not fatal."""

from __future__ import annotations

import logging
import re
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Histogram

from cli.devstack import processes
from service import metrics, metrics_endpoint, worker_registry

pytestmark = pytest.mark.unit


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
    assert metrics_endpoint.bind_address(value) == expected


def test_no_address_no_runtime() -> None:
    assert metrics_endpoint.runtime("") is None
    assert metrics_endpoint.url("") == "off"


def test_endpoint_serves_sdk_style_and_caldera_metrics() -> None:
    port = processes.free_port()
    rt = metrics_endpoint.runtime(f"127.0.0.1:{port}")
    assert rt is not None
    metrics.PODS_CREATED.on(rt.metric_meter).add(3)
    metrics.FORWARDER_SIGNAL_LAG.on(rt.metric_meter).record(0.03, {"signal": "pods_changed"})
    url = metrics_endpoint.url(f"127.0.0.1:{port}")
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
        with caplog.at_level(logging.ERROR, logger=metrics_endpoint.__name__):
            assert metrics_endpoint.runtime(address) is None
    assert f"metrics endpoint not started address={address}" in caplog.text


def _scrape(url: str) -> str:
    return str(urllib.request.urlopen(url, timeout=5).read().decode())


def test_one_endpoint_serves_the_sdk_and_the_registry() -> None:
    """The worker's registry comes out of the same address as the Temporal exporter's series."""
    registry = CollectorRegistry()
    series = worker_registry.QueueSeries(metrics.QUEUE_GAUGES)
    registry.register(series)
    series.publish({metrics.QUEUE_WEIGHT: {("q1",): 3.0}}, {"q1"})
    Histogram("t_latency_milliseconds", "a test's", buckets=(1.0,), registry=registry).observe(2)
    port = processes.free_port()
    rt = metrics_endpoint.runtime(f"127.0.0.1:{port}", registry)
    assert rt is not None
    metrics.PODS_CREATED.on(rt.metric_meter).add(2)
    url = metrics_endpoint.url(f"127.0.0.1:{port}")
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
        with caplog.at_level(logging.ERROR, logger=metrics_endpoint.__name__):
            assert metrics_endpoint.runtime(address, CollectorRegistry()) is None
    assert f"metrics endpoint not started address={address}" in caplog.text
