"""Worker clusters registered on the manager by their Secrets, probed for real: two worker
control planes (`tests/e2e/multicluster.py`) beside the session's stack, `caldera cluster list`
as an operator runs it, Secrets that cannot work, a worker's apiserver killed and brought back,
and the manager worker's `caldera_cluster_*` gauges."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client

from activities import clusters
from cli.devstack import clusters as dev_clusters
from cli.devstack import processes
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE
from tests.e2e import multicluster
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.multicluster import TEMPLATE, WorkerClusters

worker_clusters = multicluster.worker_clusters  # the module's fixture


def _caldera(stack: E2EStack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env={**os.environ, "KUBECONFIG": stack.kubeconfig},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _listed(stack: E2EStack) -> dict[str, dict[str, object]]:
    done = _caldera(stack, "cluster", "list", "-o", "json")
    assert done.returncode == 0, done.stderr
    return {s["name"]: s for s in json.loads(done.stdout)}


def test_cluster_list_shows_both_workers_reachable_with_their_nodes(
    e2e_stack: E2EStack, worker_clusters: WorkerClusters
) -> None:
    listed = _listed(e2e_stack)
    for name in worker_clusters.names:
        status = listed[name]
        assert (status["reachable"], status["error"], status["nodes"]) == (True, "", 2), status
        allocatable = status["allocatable"]
        assert isinstance(allocatable, dict) and allocatable["cpu"] == "16"
    done = _caldera(e2e_stack, "cluster", "list")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["NAME", "REACHABLE", "NODES", "CPU", "MEMORY", "ERROR"]
    for name in worker_clusters.names:
        row = next(r.split() for r in rows if r.split()[0] == name)
        assert row[1:3] == ["yes", "2"] and row[3].endswith("/16") and row[4].endswith("/64Gi")


def _secret(cluster: str, data: dict[str, str]) -> dict[str, object]:
    return {
        "metadata": {
            "name": f"cluster-{cluster}",
            "namespace": DEFAULT_NAMESPACE,
            "labels": {CLUSTER_LABEL: cluster},
        },
        "stringData": data,
    }


def _kubeconfig(server: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
            ],
            "users": [{"name": "u", "user": {"token": "nobody"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )


@pytest.fixture
def bad_secrets(api: client.ApiClient, worker_clusters: WorkerClusters) -> Iterator[dict[str, str]]:
    """Three clusters registered wrongly: no kubeconfig, a closed port, a refused token."""
    token = uuid.uuid4().hex[:4]
    closed = f"https://127.0.0.1:{processes.free_port()}"
    worker = worker_clusters.get(worker_clusters.names[0])
    secrets = {
        f"nokey-{token}": {"other": "x"},
        f"closed-{token}": {"kubeconfig": _kubeconfig(closed)},
        f"badtoken-{token}": {"kubeconfig": _kubeconfig(worker.server)},
    }
    core = client.CoreV1Api(api)
    for name, data in secrets.items():
        core.create_namespaced_secret(DEFAULT_NAMESPACE, _secret(name, data))  # type: ignore[arg-type]
    try:
        yield {
            "nokey": f"nokey-{token}",
            "closed": f"closed-{token}",
            "badtoken": f"badtoken-{token}",
        }
    finally:
        for name in secrets:
            dev_clusters.unregister(api, name)


def test_unusable_secrets_read_as_clear_errors(
    e2e_stack: E2EStack, api: client.ApiClient, bad_secrets: dict[str, str]
) -> None:
    listed = _listed(e2e_stack)
    for cluster in bad_secrets.values():
        assert listed[cluster]["reachable"] is False, listed[cluster]
    nokey = listed[bad_secrets["nokey"]]["error"]
    assert (
        nokey
        == f"Secret {DEFAULT_NAMESPACE}/cluster-{bad_secrets['nokey']} has no `kubeconfig` key"
    )
    closed = str(listed[bad_secrets["closed"]]["error"])
    assert re.fullmatch(r"unreachable: https://127\.0\.0\.1:\d+: connection refused", closed), (
        closed
    )
    refused = str(listed[bad_secrets["badtoken"]]["error"])
    assert refused.startswith("unauthorised: https://127.0.0.1:") and "(401)" in refused, refused
    # The worker's own call: the same sentences, never an exception.
    assert clusters.probe(bad_secrets["nokey"], api).error == nokey
    gone = clusters.probe("no-such-cluster", api)
    assert (
        gone.error == f"no Secret labelled {CLUSTER_LABEL}=no-such-cluster in {DEFAULT_NAMESPACE}"
    )


def test_a_killed_apiserver_is_unreachable_and_back_with_its_objects(
    api: client.ApiClient, worker_clusters: WorkerClusters
) -> None:
    name = worker_clusters.names[1]
    core = client.CoreV1Api(worker_clusters.api(name))
    marker = f"survives-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_config_map("default", {"metadata": {"name": marker}})  # type: ignore[arg-type]
    assert clusters.probe(name, api).reachable
    worker_clusters.kill_apiserver(name)
    try:
        down = clusters.probe(name, api)
        assert not down.reachable
        assert down.error == f"unreachable: {worker_clusters.get(name).server}: connection refused"
    finally:
        worker_clusters.restart_apiserver(name)
    back = eventually(lambda: (s := clusters.probe(name, api)).reachable and s, 60, "reachable")
    assert back.nodes == TEMPLATE.count
    assert core.read_namespaced_config_map(marker, "default").metadata.name == marker
    other = clusters.probe(worker_clusters.names[0], api)
    assert other.reachable  # the other worker never noticed


def _gauges(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def test_the_manager_worker_exports_each_clusters_gauges(
    controllers: list[processes.Process], worker_clusters: WorkerClusters
) -> None:
    worker = next((p for p in controllers if p.name == "worker"), None)
    if worker is None or not worker.metrics_url:
        pytest.skip("a reused dev stack: its worker's metrics address is its own")
    wanted = [f'caldera_cluster_reachable{{cluster="{n}"}} 1.0' for n in worker_clusters.names]

    def served() -> str | None:
        text = _gauges(worker.metrics_url)
        return text if all(w in text for w in wanted) else None

    text = eventually(
        served,
        clusters.PROBE_SECONDS * 2 + 15,
        f"{wanted} served",
    )
    name = worker_clusters.names[0]
    assert re.search(
        rf'^caldera_cluster_free{{cluster="{name}",resource="cpu"}} [\d.]+$', text, re.M
    )
