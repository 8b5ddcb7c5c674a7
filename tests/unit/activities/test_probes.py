"""The dispatcher's probe against a fake apiserver on loopback: the job's queue there (its own,
else `default`, else none), its figures from the cluster's pods, a refused queue read said in
`QueueThere.error` (never raised), and one read of a cluster shared by the probes that follow
within MAX_AGE."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml

from activities.dispatch import cluster_secrets, clusters, probes
from activities.dispatch.shared_reads import SharedReads
from cli.devstack import processes
from models.dispatch import QueueThere
from tests.unit.activities.test_clusters import VERSION

pytestmark = pytest.mark.unit

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues/"
NODES = [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}}}]


def _pod(cpu: str, queue: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    labels = {"volcano.sh/queue-name": queue}
    return {"metadata": {"labels": labels}, "spec": spec, "status": {"phase": "Running"}}


PODS = [_pod("2", "q1", "n0"), _pod("1", "q1", None), _pod("3", "default", "n0")]


class Worker(ThreadingHTTPServer):
    """A worker cluster's apiserver: nodes, pods and the queues in `queues`; counts requests."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.queues: dict[str, dict[str, Any]] = {}
        self.queue_status = 200  # another status refuses every queue read
        self.asked: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def count(self, path: str) -> None:
        with self._lock:
            self.asked[path] += 1


class _Handler(BaseHTTPRequestHandler):
    server: Worker

    def do_GET(self) -> None:
        path = self.path.partition("?")[0].rstrip("/")
        self.server.count(path)
        if path == "/version":
            self._send(200, VERSION)
        elif path == "/api/v1/nodes":
            self._send(200, {"items": NODES, "metadata": {}})
        elif path == "/api/v1/pods":
            self._send(200, {"items": PODS, "metadata": {}})
        elif path.startswith(QUEUES) and self.server.queue_status != 200:
            self._send(self.server.queue_status, {"kind": "Status"})
        elif path.startswith(QUEUES) and path[len(QUEUES) :] in self.server.queues:
            self._send(200, self.server.queues[path[len(QUEUES) :]])
        else:
            self._send(404, {"kind": "Status", "code": 404})

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def _queue(name: str, state: str = "Open", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec, "status": {"state": state}}


def _registration(url: str) -> cluster_secrets.Registration:
    text = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "w", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "w", "context": {"cluster": "w", "user": "u"}}],
            "current-context": "w",
        }
    ).encode()
    return cluster_secrets.Registration("w0", "caldera-system", "cluster-w0", "uid/1", text)


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    """The fake worker, registered as `w0`, with fresh caches (clients and readings)."""
    s = Worker()
    threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True).start()
    registered = _registration(s.url)
    monkeypatch.setattr(clusters, "read", lambda c: clusters.read_registered(c, [registered]))
    # A clock that stands still: a slow machine does not age the shared read between probes.
    monkeypatch.setattr(probes, "_readings", SharedReads(probes.MAX_AGE, lambda: 0.0))
    monkeypatch.setattr(probes, "_queues", SharedReads(probes.MAX_AGE, lambda: 0.0))
    cluster_secrets._clients.clear()
    try:
        yield s
    finally:
        cluster_secrets._clients.clear()
        s.shutdown()
        s.server_close()


def test_probe_reports_the_queue_there_and_shares_the_read(worker: Worker) -> None:
    worker.queues["q1"] = _queue("q1", capability={"cpu": "4"})
    first = probes.probe("w0", "q1")
    assert first.reachable and first.free["cpu"] == "3"
    assert first.queue == QueueThere(
        asked="q1",
        name="q1",
        state="Open",
        capability={"cpu": "4"},
        allocated={"cpu": "2", "memory": "0", "pods": "1"},
        used={"cpu": "3", "memory": "0", "pods": "2"},
    )
    assert probes.probe("w0", "q1") == first
    assert (worker.asked["/api/v1/pods"], worker.asked[QUEUES + "q1"]) == (1, 1)


def test_a_queue_missing_there_lands_in_default(worker: Worker) -> None:
    worker.queues["default"] = _queue("default", state="Closed")
    got = probes.probe("w0", "q9").queue
    assert got is not None and (got.asked, got.name, got.state) == ("q9", "default", "Closed")
    assert got.allocated["cpu"] == "3"
    assert (worker.asked[QUEUES + "q9"], worker.asked[QUEUES + "default"]) == (1, 1)


def test_neither_queue_there_is_said_by_an_empty_name(worker: Worker) -> None:
    assert probes.probe("w0", "q9").queue == QueueThere(asked="q9")


def test_a_refused_queue_read_is_an_error_not_an_exception(worker: Worker) -> None:
    worker.queue_status = 403
    got = probes.probe("w0", "q1")
    assert got.reachable and got.queue is not None
    assert got.queue.error == (
        f"forbidden: the kubeconfig's user may not get queue q1 on {worker.url} (403)"
    )


def test_no_queue_asked_reads_none(worker: Worker) -> None:
    assert probes.probe("w0").queue is None
    assert not [p for p in worker.asked if p.startswith(QUEUES)]


def test_an_unreachable_cluster_has_no_queue_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{processes.free_port()}"
    registered = _registration(url)
    monkeypatch.setattr(clusters, "read", lambda c: clusters.read_registered(c, [registered]))
    monkeypatch.setattr(probes, "_readings", SharedReads(probes.MAX_AGE))
    cluster_secrets._clients.clear()
    got = probes.probe("w0", "q1")
    assert (got.reachable, got.error, got.queue) == (
        False,
        f"unreachable: {url}: connection refused",
        None,
    )
    cluster_secrets._clients.clear()
