"""Worker clusters registered on the manager by their Secrets, probed for real: two worker
control planes (`tests/e2e/multicluster.py`) beside the session's stack, `caldera cluster list`
as an operator runs it, Secrets that cannot work, a worker's apiserver killed and brought back,
the manager worker's `caldera_cluster_*` gauges, and the `caldera job` commands reaching a
dispatched job's DispatchWorkflow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from activities.dispatch import clusters
from cli.devstack import clusters as dev_clusters
from cli.devstack import processes
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE, dispatch_workflow_id
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
        assert status["drained"] is False, status
        allocatable = status["allocatable"]
        assert isinstance(allocatable, dict) and allocatable["cpu"] == "16"
    done = _caldera(e2e_stack, "cluster", "list")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["NAME", "REACHABLE", "DRAINED", "NODES", "CPU", "MEMORY", "ERROR"]
    for name in worker_clusters.names:
        row = next(r.split() for r in rows if r.split()[0] == name)
        assert row[1:4] == ["yes", "no", "2"] and row[4].endswith("/16")
        assert row[5].endswith("/64Gi")


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


def _one_pod_job(name: str, queue: str) -> dict[str, Any]:
    """A Volcano Job of one pod asking one cpu (a kwok pod: it runs until stopped)."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    task = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"queue": queue, "minAvailable": 1, "tasks": [task]},
    }


def _gone(api: client.ApiClient, namespace: str, name: str) -> bool:
    """No Volcano Job `namespace/name` on the cluster of `api`."""
    try:
        client.CustomObjectsApi(api).get_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", name
        )
    except client.ApiException as e:
        return e.status == 404
    return False


def _job_cli(stack: E2EStack, *args: str) -> subprocess.CompletedProcess[str]:
    """`caldera job ...` against the session's stack, Temporal included."""
    return _caldera(stack, "job", *args, "--temporal-address", stack.temporal_address)


def _view(stack: E2EStack, name: str, namespace: str) -> dict[str, Any]:
    done = _job_cli(stack, "view", name, "-n", namespace, "-o", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_job_commands_reach_a_dispatched_jobs_dispatch_workflow(
    e2e_stack: E2EStack,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    namespace: str,
    tmp_path: Path,
) -> None:
    """The job's route from its annotation or queue: `run` links the dispatch workflow, `view`
    shows where it went, `abort` is its update and `why` names the cluster."""
    wid = dispatch_workflow_id(namespace, "far")
    path = tmp_path / "far.yaml"
    path.write_text(yaml.safe_dump(_one_pod_job("far", worker_clusters.queue)))
    made = _job_cli(e2e_stack, "run", "-f", str(path), "-n", namespace)
    assert made.returncode == 0, made.stderr
    assert "dispatch%2F" in made.stdout, made.stdout

    def running_there() -> dict[str, Any] | None:
        shown = _view(e2e_stack, "far", namespace)
        wf = shown["workflow"]
        placed = wf.get("dispatch", {}).get("cluster") and shown["phase"] == "Running"
        return shown if placed else None

    shown = eventually(running_there, 120, "dispatched and Running, as `job view` says")
    assert shown["workflow"]["id"] == wid
    cluster = shown["workflow"]["dispatch"]["cluster"]
    assert cluster in worker_clusters.names
    why = _job_cli(e2e_stack, "why", "far", "-n", namespace)
    assert why.returncode == 0, why.stderr
    assert f"Cluster:  {cluster}" in why.stdout.splitlines(), why.stdout
    aborted = _job_cli(e2e_stack, "abort", "far", "-n", namespace, "--reason", "e2e")
    assert aborted.returncode == 0, aborted.stderr
    assert aborted.stdout.startswith(f"job {namespace}/far: AbortJob: Running → "), aborted.stdout
    eventually(
        lambda: _view(e2e_stack, "far", namespace)["phase"] == "Aborted",
        90,
        "Aborted on the copy, mirrored on the manager",
    )
    deleted = _job_cli(e2e_stack, "delete", "far", "-n", namespace)
    assert deleted.returncode == 0, deleted.stderr
    there = worker_clusters.api(cluster)
    eventually(lambda: _gone(there, namespace, "far"), 60, "the copy deleted")


def _capability(api: client.ApiClient, queue: str, capability: dict[str, str] | None) -> None:
    client.CustomObjectsApi(api).patch_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", queue, {"spec": {"capability": capability}}
    )


def _weights(api: client.ApiClient, queue: str, weights: dict[str, int]) -> None:
    named = [{"name": name, "weight": weight} for name, weight in weights.items()]
    client.CustomObjectsApi(api).patch_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", queue, {"spec": {"extendClusters": named}}
    )


def test_a_worker_queue_capped_to_nothing_sends_the_job_to_the_other_cluster(
    e2e_stack: E2EStack,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    api: client.ApiClient,
    namespace: str,
) -> None:
    """The first cluster weighs 4 to the second's 1, so it would take the job; with the queue
    capped to no cpu there, the probe's queue figures send the job to the second."""
    first, second = worker_clusters.names
    queue = worker_clusters.queue
    _weights(api, queue, {first: 4, second: 1})
    _capability(worker_clusters.api(first), queue, {"cpu": "0"})
    jobs = client.CustomObjectsApi(api)
    try:
        container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
        task = {
            "name": "worker",
            "replicas": 1,
            "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
        }
        doc = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "capped"},
            "spec": {"queue": queue, "minAvailable": 1, "tasks": [task]},
        }
        jobs.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs", doc)

        def placed() -> str:
            found: Any = jobs.get_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", namespace, "jobs", "capped"
            )
            notes = (found.get("metadata") or {}).get("annotations") or {}
            return str(notes.get("caldera.dev/dispatched-to") or "")

        assert eventually(placed, 90, "dispatched") == second
        jobs.delete_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", "capped"
        )
        there = client.CustomObjectsApi(worker_clusters.api(second))

        def copy_gone() -> bool:
            try:
                there.get_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", namespace, "jobs", "capped"
                )
            except client.ApiException as e:
                return e.status == 404
            return False

        eventually(copy_gone, 60, "the copy deleted")
    finally:
        _capability(worker_clusters.api(first), queue, None)
        _weights(api, queue, {first: 1, second: 1})
