"""Worker clusters from their Secrets: a Secret read as a registration, the client built once per
Secret version, and every way a cluster can be unusable turned into one sentence of
`ClusterStatus.error` (never an exception), against a fake apiserver on loopback."""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from kubernetes import client

from activities.dispatch import cluster_secrets, clusters
from activities.dispatch.cluster_secrets import ClusterUnusable, Registration
from cli.devstack import processes
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE, DRAIN_ANNOTATION, ClusterStatus
from service import worker_registry

pytestmark = pytest.mark.unit

VERSION = {
    "major": "1",
    "minor": "34",
    "gitVersion": "v1.34.0",
    "gitCommit": "x",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.24",
    "compiler": "gc",
    "platform": "linux/amd64",
}
NODES = [{"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}]
PODS = [
    {
        "spec": {
            "nodeName": "n0",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }
]


class FakeApiserver(ThreadingHTTPServer):
    """Answers /version, nodes, pods and the manager's Secrets list; `status` refuses all."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.status = 200
        self.secrets: list[dict[str, Any]] = []
        self.selectors: list[str] = []
        self.field_selectors: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeApiserver

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        params = urllib.parse.parse_qs(query)
        if self.server.status != 200:
            self._send(self.server.status, {"kind": "Status", "code": self.server.status})
            return
        if path.rstrip("/") == "/version":  # the client asks /version/
            self._send(200, VERSION)
        elif path == "/api/v1/nodes":
            self._send(200, {"items": NODES, "metadata": {}})
        elif path == "/api/v1/pods":
            self.server.field_selectors += params.get("fieldSelector", [])
            self._send(200, {"items": PODS, "metadata": {}})
        elif path == f"/api/v1/namespaces/{DEFAULT_NAMESPACE}/secrets":
            selector = params.get("labelSelector", [""])[0]
            self.server.selectors.append(selector)
            wanted = selector.partition("=")[2]
            items = [
                s
                for s in self.server.secrets
                if not wanted or s["metadata"]["labels"][CLUSTER_LABEL] == wanted
            ]
            self._send(200, {"items": items, "metadata": {}})
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


@pytest.fixture
def server() -> Iterator[FakeApiserver]:
    s = FakeApiserver()
    threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield s
    finally:
        s.shutdown()
        s.server_close()


@pytest.fixture(autouse=True)
def no_cached_clients() -> Iterator[None]:
    cluster_secrets._clients.clear()
    yield
    cluster_secrets._clients.clear()


def kubeconfig(server: str, **user: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "w", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": user or {"token": "t"}}],
            "contexts": [{"name": "w", "context": {"cluster": "w", "user": "u"}}],
            "current-context": "w",
        }
    )


def secret(cluster: str, name: str = "", text: str | None = None, rv: str = "1") -> dict[str, Any]:
    data = {} if text is None else {"kubeconfig": base64.b64encode(text.encode()).decode()}
    return {
        "metadata": {
            "name": name or f"cluster-{cluster}",
            "namespace": DEFAULT_NAMESPACE,
            "uid": f"uid-{name or cluster}",
            "resourceVersion": rv,
            "labels": {CLUSTER_LABEL: cluster},
        },
        "data": data,
    }


def manager(server: FakeApiserver) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = server.url
    return client.ApiClient(configuration)


def test_a_secret_reads_as_a_registration() -> None:
    reg = cluster_secrets.registration(secret("w0", text="x: 1", rv="7"))
    assert reg == Registration(
        cluster="w0",
        namespace=DEFAULT_NAMESPACE,
        secret="cluster-w0",
        version="uid-w0/7",
        kubeconfig=b"x: 1",
    )
    assert reg.ref == f"Secret {DEFAULT_NAMESPACE}/cluster-w0"
    assert cluster_secrets.registration(secret("w0")).kubeconfig is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "has no `kubeconfig` key"),
        ("  \n", "`kubeconfig` is empty"),
        ("clusters: [", "kubeconfig is not YAML"),
        (kubeconfig("https://x", tokenFile="/t"), "`tokenFile` is not allowed"),
    ],
)
def test_an_unusable_secret_says_why(text: str | None, says: str) -> None:
    reg = cluster_secrets.registration(secret("w0", text=text))
    with pytest.raises(ClusterUnusable, match=says):
        cluster_secrets.build(reg)
    status = clusters.probe_registered("w0", [reg])
    assert not status.reachable and says in status.error
    assert status.error.startswith(f"Secret {DEFAULT_NAMESPACE}/cluster-w0")


def test_one_client_per_secret_version(server: FakeApiserver) -> None:
    reg = cluster_secrets.registration(secret("w0", text=kubeconfig(server.url)))
    first, url = cluster_secrets.client_for(reg)
    assert url == server.url and first.configuration.host == server.url
    assert cluster_secrets.client_for(reg)[0] is first
    edited = cluster_secrets.registration(secret("w0", text=kubeconfig(server.url), rv="2"))
    assert cluster_secrets.client_for(edited)[0] is not first


def test_a_reachable_cluster_reports_its_nodes_and_room(server: FakeApiserver) -> None:
    reg = cluster_secrets.registration(secret("w0", text=kubeconfig(server.url)))
    status = clusters.probe_registered("w0", [reg])
    assert status.reachable and status.error == ""
    assert status.nodes == 1
    assert status.allocatable == {"cpu": "4", "memory": str(8 * 2**30)}
    assert status.free["cpu"] == "3"
    assert server.field_selectors == [clusters.UNFINISHED]
    assert clusters.free_figures(status)["cpu"] == 3.0


@pytest.mark.parametrize(("drain", "drained"), [(None, False), ("false", False), ("True", True)])
def test_a_drained_cluster_is_probed_and_said_drained(
    server: FakeApiserver, drain: str | None, drained: bool
) -> None:
    doc = secret("w0", text=kubeconfig(server.url))
    if drain is not None:
        doc["metadata"]["annotations"] = {DRAIN_ANNOTATION: drain}
    status = clusters.probe_registered("w0", [cluster_secrets.registration(doc)])
    assert status.reachable and status.nodes == 1 and status.drained == drained


def test_a_drain_annotation_that_is_no_boolean_makes_the_cluster_unusable(
    server: FakeApiserver,
) -> None:
    doc = secret("w0", text=kubeconfig(server.url))
    doc["metadata"]["annotations"] = {DRAIN_ANNOTATION: "yes"}
    status = clusters.probe_registered("w0", [cluster_secrets.registration(doc)])
    assert not status.reachable and not status.drained
    assert status.error == (
        f"Secret {DEFAULT_NAMESPACE}/cluster-w0: annotation {DRAIN_ANNOTATION} must be true or "
        "false, not 'yes'"
    )


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "unauthorised: {url} refused the kubeconfig's credentials (401)"),
        (403, "forbidden: the kubeconfig's user may not GET /version on {url} (403)"),
        (500, "{url} answered 500"),
    ],
)
def test_refusals_are_named(server: FakeApiserver, status: int, says: str) -> None:
    server.status = status
    reg = cluster_secrets.registration(secret("w0", text=kubeconfig(server.url)))
    got = clusters.probe_registered("w0", [reg])
    assert not got.reachable
    assert says.format(url=server.url) in got.error


def test_a_closed_port_is_unreachable() -> None:
    url = f"http://127.0.0.1:{processes.free_port()}"
    reg = cluster_secrets.registration(secret("w0", text=kubeconfig(url)))
    got = clusters.probe_registered("w0", [reg])
    assert (got.reachable, got.error) == (False, f"unreachable: {url}: connection refused")


def test_probe_finds_the_secret_by_its_label(server: FakeApiserver) -> None:
    server.secrets = [
        secret("w0", text=kubeconfig(server.url)),
        secret("w1", text=kubeconfig(server.url)),
    ]
    got = clusters.probe("w1", manager(server))
    assert got.name == "w1" and got.reachable
    assert server.selectors == [f"{CLUSTER_LABEL}=w1"]
    missing = clusters.probe("w9", manager(server))
    assert missing.error == f"no Secret labelled {CLUSTER_LABEL}=w9 in {DEFAULT_NAMESPACE}"
    assert cluster_secrets.list_clusters(manager(server)) == ["w0", "w1"]


def test_two_secrets_for_one_cluster_use_neither(server: FakeApiserver) -> None:
    server.secrets = [
        secret("w0", name="a", text=kubeconfig(server.url)),
        secret("w0", name="b", text=kubeconfig(server.url)),
    ]
    got = clusters.probe_all(manager(server))
    assert [s.error for s in got] == ["registered by 2 Secrets (a, b); keep one"]
    with pytest.raises(ClusterUnusable, match="registered by 2 Secrets"):
        cluster_secrets.api_for("w0", manager(server))


def test_probe_all_probes_each_and_api_for_gives_the_client(server: FakeApiserver) -> None:
    server.secrets = [secret("w0", text=kubeconfig(server.url)), secret("w1")]
    got = clusters.probe_all(manager(server))
    assert [(s.name, s.reachable) for s in got] == [("w0", True), ("w1", False)]
    assert cluster_secrets.api_for("w0", manager(server)).configuration.host == server.url
    with pytest.raises(ClusterUnusable, match="has no `kubeconfig` key"):
        cluster_secrets.api_for("w1", manager(server))


def test_the_managers_refusal_is_the_status_not_an_exception(server: FakeApiserver) -> None:
    server.status = 403
    got = clusters.probe("w0", manager(server))
    assert got.error == f"cannot list the cluster Secrets in {DEFAULT_NAMESPACE}: 403 Forbidden"


def _status(name: str, reachable: bool, **free: str) -> ClusterStatus:
    return ClusterStatus(name=name, reachable=reachable, free=free)


def test_the_loop_publishes_each_round_and_keeps_the_last_when_listing_fails() -> None:
    rounds: list[list[ClusterStatus] | Exception] = [
        [_status("w0", True, cpu="3", memory="1Ki"), _status("w1", False)],
        client.ApiException(status=403, reason="Forbidden"),
        [],
    ]
    published: list[list[ClusterStatus]] = []

    def next_round() -> list[ClusterStatus]:
        got = rounds.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    loop = clusters.ProbeLoop(probe_round=next_round, published=lambda s: published.append(list(s)))
    assert [s.name for s in loop.round()] == ["w0", "w1"]
    assert loop.round() == [] and len(published) == 1  # nothing new to say
    loop.round()
    assert published[-1] == []


def _scrape() -> str:
    import prometheus_client

    return prometheus_client.generate_latest(worker_registry.WORKER_REGISTRY).decode()


def test_the_gauges_follow_the_rounds_and_vanish_with_the_clusters() -> None:
    assert "caldera_cluster_" not in _scrape()
    clusters.publish([_status("w0", True, cpu="1500m", memory="1Ki"), _status("w1", False)])
    text = _scrape()
    assert 'caldera_cluster_reachable{cluster="w0"} 1.0' in text
    assert 'caldera_cluster_reachable{cluster="w1"} 0.0' in text
    assert 'caldera_cluster_free{cluster="w0",resource="cpu"} 1.5' in text
    assert 'caldera_cluster_free{cluster="w0",resource="memory"} 1024.0' in text
    assert 'cluster="w1",resource' not in text
    clusters.publish([])
    assert "caldera_cluster_" not in _scrape()
