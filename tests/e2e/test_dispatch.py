"""Volcano Jobs dispatched to worker clusters, for real: two worker control planes
(`tests/e2e/multicluster.py`) registered on the session's stack (the manager), a job on the
dispatching queue run on one of them with its status mirrored on the manager, an abort and a
deletion reaching the copy, and a worker's apiserver killed: after the queue's lost-after the
job runs on the other cluster, and the lost one's stale copy is deleted when it is back; the
same failover with the manager's worker SIGKILLed while the lost-after timer runs, jobs whose
copies are being made when the manager's worker is SIGKILLed, and a cluster drained under a
queue that moves its jobs.

Invariants checked throughout: each job reaches its end phase once on the manager, never do
two clusters (while both answer) run pods of one job, and no copy is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from cli.devstack import clusters as dev_clusters
from cli.devstack import processes
from models import bus, scheduling, vcjob
from models.dispatch import (
    DEFAULT_NAMESPACE,
    DISPATCHED_TO_ANNOTATION,
    DRAIN_ANNOTATION,
    GENERATION_ANNOTATION,
    LEASE_ANNOTATION,
    ORIGIN_ANNOTATION,
    dispatch_workflow_id,
)
from models.signals.dispatch import LOST_AFTER_ANNOTATION, ON_DRAIN_ANNOTATION
from tests.e2e import multicluster
from tests.e2e.conftest import E2EStack, crash_worker, eventually
from tests.e2e.multicluster import WorkerClusters

pytestmark = pytest.mark.e2e
worker_clusters = multicluster.worker_clusters  # the module's fixture
LOST_AFTER = 20  # seconds; the lease is half of it (models/dispatch.py, controllers/dispatch)
RUN = "sim.caldera.dev/run-seconds"  # how long a kwok pod runs before it succeeds


def _job(name: str, queue: str, run_seconds: int | None = None) -> dict[str, Any]:
    notes = {RUN: str(run_seconds)} if run_seconds is not None else {}
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }
    template = {
        "metadata": {"annotations": notes},
        "spec": {"containers": [container], "restartPolicy": "Never"},
    }
    return {
        "apiVersion": vcjob.API_VERSION,
        "kind": vcjob.KIND,
        "metadata": {"name": name},
        "spec": {
            "queue": queue,
            "minAvailable": 2,
            "tasks": [{"name": "worker", "replicas": 2, "template": template}],
        },
    }


def _submit(api: client.ApiClient, namespace: str, doc: dict[str, Any]) -> dict[str, Any]:
    made: Any = client.CustomObjectsApi(api).create_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", doc
    )
    return dict(made)


def _read(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        found: Any = client.CustomObjectsApi(api).get_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, "jobs", name, _request_timeout=(2, 5)
        )
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise
    return dict(found)


def _phase(job: dict[str, Any] | None) -> str:
    return str(((job or {}).get("status") or {}).get("state", {}).get("phase") or "")


def _notes(job: dict[str, Any] | None) -> dict[str, str]:
    return dict(((job or {}).get("metadata") or {}).get("annotations") or {})


def _dispatched_to(api: client.ApiClient, namespace: str, name: str) -> str:
    return _notes(_read(api, namespace, name)).get(DISPATCHED_TO_ANNOTATION, "")


def _running_pods(api: client.ApiClient, namespace: str, name: str) -> list[str]:
    pods = client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector=f"volcano.sh/job-name={name}", _request_timeout=(2, 5)
    )
    return [
        p.metadata.name
        for p in pods.items
        if p.status.phase == "Running" and p.metadata.deletion_timestamp is None
    ]


def _command(api: client.ApiClient, namespace: str, job: dict[str, Any], action: str) -> None:
    meta = job["metadata"]
    target = {
        "apiVersion": vcjob.API_VERSION,
        "kind": vcjob.KIND,
        "name": meta["name"],
        "uid": meta["uid"],
    }
    body = {
        "apiVersion": bus.API_VERSION,
        "kind": "Command",
        "metadata": {"generateName": f"{meta['name']}-{action.lower()}-", "namespace": namespace},
        "action": action,
        "target": target,
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        bus.GROUP, bus.VERSION, namespace, "commands", body
    )


def _story(address: str, namespace: str, name: str) -> str:
    """The dispatch workflow's history, a line per event with its summary (for a failure)."""

    async def read() -> str:
        temporal = await Client.connect(address)
        handle = temporal.get_workflow_handle(dispatch_workflow_id(namespace, name))
        lines = []
        async for e in handle.fetch_history_events():
            summary = e.user_metadata.summary.data.decode() if e.HasField("user_metadata") else ""
            lines.append(f"{e.event_id} {EventType.Name(e.event_type)} {summary}")
        return "\n".join(lines)

    try:
        return asyncio.run(read())
    except Exception as e:  # the story is a help, not the test
        return f"(no story: {e})"


@contextlib.contextmanager
def _telling(stack: E2EStack, namespace: str, *names: str) -> Iterator[None]:
    """On a failed assertion, print the jobs' dispatch stories first."""
    try:
        yield
    except AssertionError:
        for name in names:
            print(f"-- dispatch/{namespace}/{name}")
            print(_story(stack.temporal_address, namespace, name))
        raise


def _reasons(api: client.ApiClient, namespace: str, name: str) -> list[str]:
    events = client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    )
    return [e.reason for e in events.items]


STEADY = "-steady"  # the module's queue's name and this: the same clusters, default lost-after


@pytest.fixture(scope="module")
def lost_after(api: client.ApiClient, worker_clusters: WorkerClusters) -> Iterator[str]:
    """The manager's dispatching queue with a short lost-after, for the module; beside it the
    `steady` one, made here to share the wait for the forwarder."""
    patch = {"metadata": {"annotations": {LOST_AFTER_ANNOTATION: str(LOST_AFTER)}}}
    custom = client.CustomObjectsApi(api)
    custom.patch_cluster_custom_object(
        scheduling.GROUP, scheduling.VERSION, "queues", worker_clusters.queue, patch
    )
    steady = worker_clusters.queue + STEADY
    dev_clusters.ensure_queue(api, steady, worker_clusters.names)
    for name in worker_clusters.names:  # the copies' queue there (gone with the clusters)
        dev_clusters.ensure_queue(worker_clusters.api(name), steady)
    time.sleep(2)  # the forwarder hears the queue changes before the first job of the module
    try:
        yield worker_clusters.queue
    finally:
        with contextlib.suppress(client.ApiException):
            custom.delete_cluster_custom_object(
                scheduling.GROUP, scheduling.VERSION, "queues", steady
            )


@pytest.fixture(scope="module")
def steady(lost_after: str) -> str:
    """A dispatching queue with the default lost-after, so a lease of LEASE_SECONDS: longer
    than Temporal takes to hand a killed worker's tasks to its restart (a workflow task's
    10 s, a long poll's heartbeat timeout), so such a restart fences no copy. On the module's
    queue a lease is LOST_AFTER / 2, shorter than that: there a crash fences every copy."""
    return lost_after + STEADY


def test_job_runs_on_a_worker_with_its_status_mirrored(
    api: client.ApiClient,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    lost_after: str,
    namespace: str,
) -> None:
    made = _submit(api, namespace, _job("train", lost_after, run_seconds=10))
    cluster = eventually(lambda: _dispatched_to(api, namespace, "train"), 90, "the job dispatched")
    assert cluster in worker_clusters.names
    there = worker_clusters.api(cluster)
    copy = eventually(lambda: _read(there, namespace, "train"), 30, "the copy")
    notes = _notes(copy)
    assert notes[ORIGIN_ANNOTATION] == made["metadata"]["uid"]
    assert notes[GENERATION_ANNOTATION] == "1" and notes[LEASE_ANNOTATION]
    assert DISPATCHED_TO_ANNOTATION not in notes
    eventually(
        lambda: _phase(_read(api, namespace, "train")) == "Completed",
        120,
        "Completed, mirrored on the manager",
    )
    status = (_read(api, namespace, "train") or {})["status"]
    assert status.get("succeeded") == 2, status
    others = [n for n in worker_clusters.names if n != cluster]
    assert all(_read(worker_clusters.api(n), namespace, "train") is None for n in others)
    assert "Dispatched" in _reasons(api, namespace, "train")
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", "train"
    )
    eventually(lambda: _read(there, namespace, "train") is None, 60, "the copy deleted")


EXAMPLE = Path(__file__).resolve().parents[2] / "deploy/examples/clusters/dispatched-job.yaml"


def _replicas_there(there: client.ApiClient, namespace: str, name: str) -> int:
    copy = _read(there, namespace, name) or {}
    return int(((copy.get("spec") or {}).get("tasks") or [{}])[0].get("replicas") or 0)


def test_the_example_runs_on_a_worker_and_a_scale_reaches_its_copy(
    api: client.ApiClient,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    steady: str,
    namespace: str,
) -> None:
    """deploy/examples/clusters/dispatched-job.yaml, in the module's dispatching queue (the
    example's names the dev stack's worker-0 and worker-1): it runs on a worker, and scaling
    its task on the manager (3 to 4 replicas, as Volcano lets a Job be updated) reaches the
    copy, whose fourth pod runs too."""
    queue, doc = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    assert [c["name"] for c in queue["spec"]["extendClusters"]] == ["worker-0", "worker-1"]
    doc["metadata"] = {"name": "example"}
    doc["spec"]["queue"] = steady
    template = doc["spec"]["tasks"][0]["template"]
    template["metadata"]["annotations"][RUN] = "60"  # running while it is scaled
    _submit(api, namespace, doc)
    cluster = eventually(lambda: _dispatched_to(api, namespace, "example"), 90, "dispatched")
    there = worker_clusters.api(cluster)
    eventually(lambda: _replicas_there(there, namespace, "example") == 3, 60, "the copy")
    job = _read(api, namespace, "example") or {}
    tasks = job["spec"]["tasks"]
    tasks[0]["replicas"] = 4
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", "example", {"spec": {"tasks": tasks}}
    )
    eventually(lambda: _replicas_there(there, namespace, "example") == 4, 60, "scaled there")
    eventually(lambda: len(_running_pods(there, namespace, "example")) == 4, 90, "4 pods run")
    eventually(lambda: "SpecPassed" in _reasons(api, namespace, "example"), 30, "said on the Job")
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", "example"
    )
    eventually(lambda: _read(there, namespace, "example") is None, 60, "the copy deleted")


def test_abort_and_deletion_reach_the_copy(
    api: client.ApiClient,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    lost_after: str,
    namespace: str,
) -> None:
    made = _submit(api, namespace, _job("long", lost_after))
    cluster = eventually(lambda: _dispatched_to(api, namespace, "long"), 90, "dispatched")
    there = worker_clusters.api(cluster)
    eventually(lambda: _phase(_read(api, namespace, "long")) == "Running", 120, "Running")
    _command(api, namespace, made, "AbortJob")
    eventually(lambda: _phase(_read(there, namespace, "long")) == "Aborted", 90, "copy Aborted")
    eventually(lambda: _phase(_read(api, namespace, "long")) == "Aborted", 60, "Aborted mirrored")
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", "long"
    )
    eventually(lambda: _read(there, namespace, "long") is None, 60, "the copy deleted")


class _Watch:
    """Samples, every second, the manager's phase and which clusters run pods of the job."""

    def __init__(
        self, api: client.ApiClient, clusters: WorkerClusters, namespace: str, name: str
    ) -> None:
        self._api, self._clusters, self._ns, self._name = api, clusters, namespace, name
        self.phases: list[str] = []
        self.both: list[tuple[float, list[str], list[str]]] = []  # two clusters with pods
        self.samples = 0  # taken so far
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Watch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                phase = _phase(_read(self._api, self._ns, self._name))
            except Exception:
                phase = ""
            if phase and (not self.phases or self.phases[-1] != phase):
                self.phases.append(phase)
            running: dict[str, list[str]] = {}
            for name in self._clusters.names:
                try:
                    running[name] = _running_pods(self._clusters.api(name), self._ns, self._name)
                except Exception:
                    running[name] = []  # not answering: nothing seen to run there
            busy = [n for n, pods in running.items() if pods]
            if len(busy) > 1:
                self.both.append((time.monotonic(), *(running[n] for n in busy[:2])))
            self.samples += 1

    def sampled_more(self, count: int = 3) -> None:
        """Until `count` more samples are taken (a last look after the end)."""
        target = self.samples + count
        eventually(lambda: self.samples >= target, 60, f"{count} more samples of {self._name}")


@pytest.mark.parametrize("crash", [False, True], ids=["manager-up", "manager-worker-crashed"])
def test_lost_cluster_fails_over_and_its_stale_copy_is_deleted_on_return(
    e2e_stack: E2EStack,
    api: client.ApiClient,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    lost_after: str,
    namespace: str,
    crash: bool,
) -> None:
    """`crash`: once the lost-after timer is armed, the manager's worker is SIGKILLed and kept
    down until that timer is due, so it fires with no worker; restarted, the job moves anyway."""
    if crash and not controllers:
        pytest.skip("a reused dev stack: its worker is not this test's to kill")
    _submit(api, namespace, _job("moving", lost_after, run_seconds=60))
    with (
        _telling(e2e_stack, namespace, "moving"),
        _Watch(api, worker_clusters, namespace, "moving") as watch,
    ):
        first = eventually(lambda: _dispatched_to(api, namespace, "moving"), 90, "dispatched")
        eventually(lambda: _phase(_read(api, namespace, "moving")) == "Running", 120, "Running")
        worker_clusters.kill_apiserver(first)
        killed = time.monotonic()
        if crash:
            eventually(
                lambda: "ClusterUnreachable" in _reasons(api, namespace, "moving"),
                LOST_AFTER,
                "the lost-after timer armed",
            )
            # Down past the timer's due time (armed before its Event): it fires unheard.
            crash_worker(controllers, down_for=LOST_AFTER + 1)
        second = eventually(
            lambda: (c := _dispatched_to(api, namespace, "moving")) != first and c,
            LOST_AFTER + 90,
            "moved to the other cluster",
        )
        moved_after = time.monotonic() - killed
        assert moved_after >= LOST_AFTER, f"moved before lost-after: {moved_after:.0f}s"
        there = worker_clusters.api(second)
        copy = eventually(lambda: _read(there, namespace, "moving"), 30, "the new copy")
        assert _notes(copy)[GENERATION_ANNOTATION] == "2"
        back = time.monotonic()  # it answers before the restart returns (once ready)
        worker_clusters.restart_apiserver(first)
        lost_api = worker_clusters.api(first)
        eventually(
            lambda: _read(lost_api, namespace, "moving") is None, 120, "the stale copy deleted"
        )
        cleaned = time.monotonic() - back
        eventually(
            lambda: _phase(_read(api, namespace, "moving")) == "Completed",
            180,
            "Completed on the new cluster, mirrored",
        )
        watch.sampled_more()
    reasons = _reasons(api, namespace, "moving")
    assert reasons.count("Dispatched") == 2 and "ClusterLost" in reasons, reasons
    assert watch.phases.count("Completed") == 1 and watch.phases[-1] == "Completed", watch.phases
    # Pods on both clusters only in the window after the lost one came back with its stale
    # copy's pods (its apiserver was dead: nothing could stop them there), until they went.
    overlap = [t for t, *_ in watch.both if not back <= t <= back + cleaned + 2]
    assert not overlap, f"pods of two copies ran at once outside the cleanup: {watch.both}"
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", "moving"
    )
    eventually(lambda: _read(there, namespace, "moving") is None, 60, "no copy left behind")
    assert all(
        _read(worker_clusters.api(n), namespace, "moving") is None for n in worker_clusters.names
    )


def test_manager_away_longer_than_a_lease_fences_the_copy_and_runs_it_again(
    e2e_stack: E2EStack,
    api: client.ApiClient,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    lost_after: str,
    namespace: str,
) -> None:
    """The manager's worker stopped (SIGSTOP) past a lease: the worker cluster aborts the copy
    on its own (its lease ran out), and the manager, back, runs the job again as the next
    generation, never beside the fenced copy."""
    worker = next((p for p in controllers if p.name == "worker"), None)
    if worker is None:
        pytest.skip("a reused dev stack: its worker is not this test's to stop")
    _submit(api, namespace, _job("fenced", lost_after, run_seconds=45))
    with (
        _telling(e2e_stack, namespace, "fenced"),
        _Watch(api, worker_clusters, namespace, "fenced") as watch,
    ):
        first = eventually(lambda: _dispatched_to(api, namespace, "fenced"), 90, "dispatched")
        eventually(lambda: _phase(_read(api, namespace, "fenced")) == "Running", 120, "Running")
        there = worker_clusters.api(first)
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            eventually(
                lambda: _phase(_read(there, namespace, "fenced")) == "Aborted",
                LOST_AFTER + 30,
                "the copy aborted by its own cluster",
            )
            assert not _running_pods(there, namespace, "fenced")
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        eventually(
            lambda: _generation_running(worker_clusters, namespace, "fenced") == "2",
            120,
            "generation 2 running",
        )
        eventually(
            lambda: _phase(_read(api, namespace, "fenced")) == "Completed",
            180,
            "Completed, mirrored",
        )
        watch.sampled_more()
    reasons = _reasons(api, namespace, "fenced")
    assert "CopyFenced" in reasons, reasons
    assert "Aborted" not in watch.phases, watch.phases  # the fenced copy's end is not the job's
    assert watch.phases.count("Completed") == 1 and watch.phases[-1] == "Completed"
    assert not watch.both, f"pods of two copies ran at once: {watch.both}"
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        vcjob.GROUP, vcjob.VERSION, namespace, "jobs", "fenced"
    )
    eventually(
        lambda: all(
            _read(worker_clusters.api(n), namespace, "fenced") is None
            for n in worker_clusters.names
        ),
        60,
        "no copy left behind",
    )


def _generation_running(clusters: WorkerClusters, namespace: str, name: str) -> str:
    """The generation of the copy that runs pods now ("": none)."""
    for cluster in clusters.names:
        there = clusters.api(cluster)
        copy = _read(there, namespace, name)
        if copy is not None and _running_pods(there, namespace, name):
            return _notes(copy).get(GENERATION_ANNOTATION, "")
    return ""


def _copies(clusters: WorkerClusters, namespace: str, name: str) -> list[tuple[str, str]]:
    """(cluster, generation) of every copy of the job, on every worker cluster."""
    found = []
    for cluster in clusters.names:
        copy = _read(clusters.api(cluster), namespace, name)
        if copy is not None:
            found.append((cluster, _notes(copy).get(GENERATION_ANNOTATION, "")))
    return found


def _pods(clusters: WorkerClusters, namespace: str, name: str) -> list[str]:
    """`<cluster>/<pod>: <phase>` of every pod of the job, on every worker cluster."""
    found = []
    for cluster in clusters.names:
        pods = client.CoreV1Api(clusters.api(cluster)).list_namespaced_pod(
            namespace, label_selector=f"volcano.sh/job-name={name}", _request_timeout=(2, 5)
        )
        found += [f"{cluster}/{p.metadata.name}: {p.status.phase}" for p in pods.items]
    return sorted(found)


def test_manager_worker_killed_while_copies_are_made_neither_doubles_nor_loses_a_job(
    e2e_stack: E2EStack,
    api: client.ApiClient,
    controllers: list[processes.Process],
    worker_clusters: WorkerClusters,
    steady: str,
    namespace: str,
) -> None:
    """Four jobs; the manager's worker SIGKILLed (and restarted) once the first copy exists,
    right after the last two jobs are submitted: some copies made, others not yet. Each job
    ends Completed once, from its one copy (generation 1: a lease of LEASE_SECONDS outlasts
    the restart), with its two pods and no more."""
    if not controllers:
        pytest.skip("a reused dev stack: its worker is not this test's to kill")
    names = [f"batch-{i}" for i in range(4)]
    with contextlib.ExitStack() as watching, _telling(e2e_stack, namespace, *names):
        watches = {
            n: watching.enter_context(_Watch(api, worker_clusters, namespace, n)) for n in names
        }
        for name in names[:2]:
            _submit(api, namespace, _job(name, steady, run_seconds=10))
        eventually(
            lambda: any(_copies(worker_clusters, namespace, n) for n in names[:2]),
            90,
            "a first copy made",
        )
        for name in names[2:]:
            _submit(api, namespace, _job(name, steady, run_seconds=10))
        made = {n: _copies(worker_clusters, namespace, n) for n in names}
        crash_worker(controllers)
        eventually(
            lambda: all(_phase(_read(api, namespace, n)) == "Completed" for n in names),
            240,
            f"all Completed, mirrored (copies at the kill: {made})",
        )
        for watch in watches.values():
            watch.sampled_more()
        for name, watch in watches.items():
            assert watch.phases.count("Completed") == 1, (name, watch.phases)
            assert watch.phases[-1] == "Completed", (name, watch.phases)
            assert not watch.both, f"{name}: pods of two copies ran at once: {watch.both}"
            copies = _copies(worker_clusters, namespace, name)
            assert len(copies) == 1 and copies[0][1] == "1", (name, copies, made)
            pods = _pods(worker_clusters, namespace, name)
            assert len(pods) == 2 and all(p.endswith("Succeeded") for p in pods), (name, pods)
    for name in names:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, "jobs", name
        )
    eventually(
        lambda: not any(_copies(worker_clusters, namespace, n) for n in names),
        60,
        "no copy left behind",
    )


def _drain(api: client.ApiClient, cluster: str, value: str | None) -> None:
    """Annotate the cluster's Secret on the manager (None: remove the annotation)."""
    patch = {"metadata": {"annotations": {DRAIN_ANNOTATION: value}}}
    client.CoreV1Api(api).patch_namespaced_secret(
        dev_clusters.secret_name(cluster), DEFAULT_NAMESPACE, patch
    )


def test_a_drained_cluster_takes_no_new_job_and_its_queue_moves_the_running_one(
    e2e_stack: E2EStack,
    api: client.ApiClient,
    worker_clusters: WorkerClusters,
    steady: str,
    namespace: str,
) -> None:
    """On a queue with `on-drain: Move`: the job's cluster drained, the job runs again on the
    other as generation 2 and its copy on the drained one goes; a job submitted then goes to
    the other cluster only; undrained, the cluster takes jobs again."""
    moving = steady + "-move"
    dev_clusters.ensure_queue(api, moving, worker_clusters.names)
    notes = {"metadata": {"annotations": {ON_DRAIN_ANNOTATION: "Move"}}}
    custom = client.CustomObjectsApi(api)
    custom.patch_cluster_custom_object(
        scheduling.GROUP, scheduling.VERSION, "queues", moving, notes
    )
    for name in worker_clusters.names:
        dev_clusters.ensure_queue(worker_clusters.api(name), moving)
    time.sleep(2)  # the forwarder hears the queue before the job
    drained = ""
    try:
        with _telling(e2e_stack, namespace, "drained", "after"):
            _submit(api, namespace, _job("drained", moving, run_seconds=600))
            drained = eventually(lambda: _dispatched_to(api, namespace, "drained"), 90, "placed")
            there = worker_clusters.api(drained)
            eventually(lambda: len(_running_pods(there, namespace, "drained")) == 2, 120, "Running")
            _drain(api, drained, "true")
            eventually(
                lambda: _generation_running(worker_clusters, namespace, "drained") == "2",
                180,
                "generation 2 running on the other cluster",
            )
            assert _read(there, namespace, "drained") is None or not _running_pods(
                there, namespace, "drained"
            )
            eventually(lambda: _read(there, namespace, "drained") is None, 60, "the copy gone")
            assert "ClusterDrained" in _reasons(api, namespace, "drained")
            _submit(api, namespace, _job("after", moving, run_seconds=5))
            other = eventually(lambda: _dispatched_to(api, namespace, "after"), 90, "placed")
            assert other != drained
    finally:
        if drained:
            _drain(api, drained, None)
        with contextlib.suppress(client.ApiException):
            custom.delete_cluster_custom_object(
                scheduling.GROUP, scheduling.VERSION, "queues", moving
            )
    for name in ("drained", "after"):
        custom.delete_namespaced_custom_object(vcjob.GROUP, vcjob.VERSION, namespace, "jobs", name)
    eventually(
        lambda: not any(_copies(worker_clusters, namespace, n) for n in ("drained", "after")),
        60,
        "no copy left behind",
    )
