"""The metrics endpoint a process serves: where, and how one address carries two sources.

Caldera records through the meter of the `temporalio.runtime.Runtime` whose Prometheus
exporter the process starts (`runtime`). When the process has a prometheus_client registry too
(the worker's, `service/worker_registry.py`), `runtime` starts the Temporal exporter on a
loopback port of its own and serves the address itself, each scrape answering with the
exporter's text (fetched from that port) followed by the registry's (one text format, version
0.0.4, and no name in both), so a scrape config, the chart's ports and `caldera dev up` stay as
they are. The Temporal exporter cannot serve a second registry, nor can its port be shared with
another listener; parsing its text back into prometheus_client families would re-type its
counters (adding `_total`), so it is passed through as it is. The forwarder has no registry and
serves the exporter directly. Kept apart from the declarations (`service/metrics.py`) because
this is the process's HTTP I/O.
"""

from __future__ import annotations

import http.client
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

import prometheus_client
from prometheus_client import CollectorRegistry
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from service import metrics

logger = logging.getLogger(__name__)

ENV_ADDRESS: Final = "CALDERA_METRICS_ADDRESS"
WORKER_PORT: Final = 9464
FORWARDER_PORT: Final = 9465
WORKER_ADDRESS: Final = f"127.0.0.1:{WORKER_PORT}"
FORWARDER_ADDRESS: Final = f"127.0.0.1:{FORWARDER_PORT}"


def bind_address(value: str | None) -> str:
    """`host:port` to bind; `:port` means every interface (as Go's); "" means metrics off."""
    value = (value or "").strip()
    return f"0.0.0.0{value}" if value.startswith(":") else value


def url(address: str) -> str:
    """Where to scrape, for logs and summaries: http://<address>/metrics, or "off"."""
    address = bind_address(address)
    return f"http://{address}/metrics" if address else "off"


def _free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _exporter(address: str) -> Runtime:
    """A Runtime whose Temporal exporter serves at `address`; ValueError: it could not bind."""
    buckets = {m.name: list(m.buckets) for m in metrics.ALL if isinstance(m, metrics.Histogram)}
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
