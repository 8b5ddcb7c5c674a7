"""Prometheus metrics end to end: the real worker and forwarder (started by the `controllers`
fixture with metrics on free loopback ports) run a gang job to completion, then both
endpoints are scraped over HTTP: the Temporal SDK's series and Caldera's own reflect the job.
A job running in a queue of its own shows in Volcano's queue series on the worker's endpoint,
which drops them once the queue is deleted."""

from __future__ import annotations

import re
import urllib.request
import uuid
from collections.abc import Mapping

import pytest
from kubernetes import client

from cli.devstack import processes, stack
from service import metrics
from tests import grafana
from tests.builders import make_job
from tests.e2e import volcano
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


def _one(samples: Samples, name: str, **labels: str) -> float | None:
    """The value of the one series of `name` with `labels`; None: there is none."""
    found = [v for n, got, v in samples if n == name and got == labels]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def test_worker_serves_volcanos_queue_series_until_the_queue_is_deleted(
    api: client.ApiClient, namespace: str, controllers: list[processes.Process]
) -> None:
    worker = _urls(controllers)["worker"]
    if not any(n.startswith("volcano_") for n, _, _ in _scrape(worker)):
        pytest.skip("the reused dev stack's worker predates Volcano's series: restart it")
    custom = client.CustomObjectsApi(api)
    queue = f"metered-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": queue},
        "spec": {"weight": 2, "capability": {"cpu": "12"}},
    }
    custom.create_cluster_custom_object(*volcano.QUEUES, body)
    try:
        volcano.state_becomes(api, queue, "Open")
        template = {
            "metadata": {"annotations": {volcano.RUN: "600"}},  # runs while the test reads
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                ],
            },
        }
        doc = make_job("queued", namespace=namespace).task(
            "w", replicas=REPLICAS, template=template
        )
        custom.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc.spec(queue=queue).manifest()
        )
        held = float(REPLICAS * 1000)  # milli-cpu

        bound = f"{metrics.JOB_BOUND_LATENCY.name}_count"

        def running() -> Samples | None:
            """The gauges are set as the session decides, the bound latency once it wrote."""
            samples = _scrape(worker)
            allocated = _one(samples, "volcano_queue_allocated_milli_cpu", queue_name=queue)
            count = _one(samples, "volcano_queue_pod_group_running_count", queue_name=queue)
            timed = _one(samples, bound, queue_name=queue)
            return samples if (allocated, count, timed) == (held, 1.0, 1.0) else None

        samples = eventually(running, 120, f"queue {queue} holds the job's {held}m, Running")
        assert _one(samples, "volcano_queue_weight", queue_name=queue) == 2.0
        assert _one(samples, "volcano_queue_request_milli_cpu", queue_name=queue) == held
        assert _one(samples, "volcano_queue_deserved_milli_cpu", queue_name=queue) == held
        assert _one(samples, "volcano_queue_overused", queue_name=queue) == 1.0
        assert _one(samples, "volcano_queue_capacity_milli_cpu", queue_name=queue) == 12000.0
        assert _one(samples, "volcano_queue_real_capacity_milli_cpu", queue_name=queue) == 12000.0
        for phase in ("pending", "inqueue", "unknown", "completed"):
            name = f"volcano_queue_pod_group_{phase}_count"
            assert _one(samples, name, queue_name=queue) == 0.0, phase
        # The job's way: admitted, placed, bound, each timed once from the PodGroup's creation.
        inqueue = f"{metrics.JOB_INQUEUE_LATENCY.name}_count"
        assert _one(samples, inqueue, queue_name=queue) == 1.0
        placed = metrics.E2E_JOB_SCHEDULING_LATENCY.name
        assert (_one(samples, f"{placed}_count") or 0) >= 1
        sessions = metrics.E2E_SCHEDULING_LATENCY.name
        assert (_one(samples, f"{sessions}_count") or 0) >= 1
        # The dashboard's Queues row reads series the worker serves (extended resources aside:
        # the job asks for none).
        read = {n for n in grafana.metric_names() if n.startswith("volcano_")}
        served = {n for n, _, _ in samples}
        assert read - served <= {n for n in read if n.endswith("_scalar_resources")}, read - served
    finally:
        custom.delete_cluster_custom_object(*volcano.QUEUES, queue)

    def gone() -> bool:
        return not any(
            labels.get("queue_name") == queue
            for n, labels, _ in _scrape(worker)
            if n.startswith("volcano_queue_")
        )

    eventually(gone, 60, f"queue {queue}'s series removed with the queue")
