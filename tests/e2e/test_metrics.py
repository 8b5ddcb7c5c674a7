"""Prometheus metrics end to end: the real worker and forwarder (started by the `controllers`
fixture with metrics on free loopback ports) run a gang job to completion, then both
endpoints are scraped over HTTP: the Temporal SDK's series and Caldera's own reflect the job."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Mapping

import pytest
from kubernetes import client

from cli.devstack import processes, stack
from service import metrics
from tests import grafana
from tests.builders import make_job
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places and binds the pods
REPLICAS = 3
_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

Samples = list[tuple[str, dict[str, str], float]]


def _scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        body = response.read().decode()
    samples: Samples = []
    for line in body.splitlines():
        match = _LINE.match(line)
        if match and not line.startswith("#"):
            labels = dict(_LABEL.findall(match["labels"] or ""))
            samples.append((match["name"], labels, float(match["value"])))
    return samples


def _sum(samples: Samples, name: str, **labels: str) -> float:
    return sum(
        v for n, got, v in samples if n == name and all(got.get(k) == x for k, x in labels.items())
    )


def _urls(controllers: list[processes.Process]) -> Mapping[str, str]:
    started = controllers
    if not started:  # CALDERA_E2E_REUSE: the dev stack's own processes
        dev = stack.load()
        started = dev.controllers if dev is not None else []
        reused = {p.name for p in started if p.metrics_url}
        if reused != {"worker", "forwarder"}:
            pytest.skip("the reused dev stack predates metrics endpoints: restart `caldera dev up`")
    urls = {p.name: p.metrics_url for p in started if p.metrics_url}
    assert set(urls) == {"worker", "forwarder"}, f"started without metrics endpoints: {urls}"
    return urls


def _phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def test_worker_and_forwarder_metrics_reflect_a_job(
    api: client.ApiClient, namespace: str, controllers: list[processes.Process]
) -> None:
    urls = _urls(controllers)
    template = {
        "metadata": {"annotations": {"sim.caldera.dev/run-seconds": "1"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }
    doc = make_job("metered", namespace=namespace).task("w", replicas=REPLICAS, template=template)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc.manifest()
    )
    eventually(lambda: _phase(api, namespace, "metered") == "Completed", 120, "job Completed")

    def worker_caught_up() -> Samples | None:
        samples = _scrape(urls["worker"])
        done = _sum(samples, metrics.JOB_PHASE_TRANSITIONS.name, phase="Completed") >= 1
        return samples if done else None

    worker = eventually(worker_caught_up, 30, "the Completed transition is counted")
    names = {n for n, _, _ in worker}
    # The SDK's runtime metrics come out of the same endpoint.
    assert "temporal_request" in names
    assert "temporal_workflow_task_execution_latency_count" in names
    assert "temporal_activity_execution_latency_count" in names
    assert _sum(worker, metrics.PODS_CREATED.name) >= REPLICAS
    assert _sum(worker, metrics.PODS_BOUND.name) >= REPLICAS
    for phase in ("Pending", "Running", "Completed"):
        assert _sum(worker, metrics.JOB_PHASE_TRANSITIONS.name, phase=phase) >= 1, phase
    assert _sum(worker, metrics.SCHEDULING_SESSIONS.name, outcome="ok") > 0
    assert _sum(worker, metrics.SESSION_DURATION.name + "_count", scheduler="volcano") > 0
    transitions = [labels for n, labels, _ in worker if n == metrics.JOB_PHASE_TRANSITIONS.name]
    assert {t.get("workflow_type") for t in transitions} == {"JobWorkflow"}

    forwarder = _scrape(urls["forwarder"])
    assert "temporal_request" in {n for n, _, _ in forwarder}  # its client's SDK metrics
    assert _sum(forwarder, metrics.FORWARDER_EVENTS.name, kind="pods") >= REPLICAS
    # ADDED, or LISTED when the forwarder's first list ran after the Job was created.
    assert _sum(forwarder, metrics.FORWARDER_EVENTS.name, kind="jobs") >= 1
    for kind in ("jobs", "pods", "podgroups", "queues", "commands"):
        assert _sum(forwarder, metrics.FORWARDER_RELISTS.name, kind=kind, reason="initial") >= 1
    assert _sum(forwarder, metrics.FORWARDER_SIGNALS_SENT.name, signal="job_observed") >= 1
    assert _sum(forwarder, metrics.FORWARDER_SIGNALS_SENT.name, signal="pods_changed") >= 1
    lag_count = _sum(forwarder, metrics.FORWARDER_SIGNAL_LAG.name + "_count")
    assert lag_count > 0
    # The lag includes the coalescing delay (200 ms) for pod batches, and stays well bounded.
    mean = _sum(forwarder, metrics.FORWARDER_SIGNAL_LAG.name + "_sum") / lag_count
    assert 0 < mean < 10, mean

    # The Grafana dashboard's SDK panels read series these processes serve.
    served = names | {n for n, _, _ in forwarder}
    sdk = {n for n in grafana.metric_names() if n.startswith("temporal_")}
    assert sdk and sdk <= served, sdk - served
