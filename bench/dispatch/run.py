"""One run: the manager stack and its worker clusters, each phase in turn, then every process
stopped by its PID.

Phases, on the same stack one after the other: `single` (Jobs in queue `default`: the manager
runs them itself), `dispatch` (the same Jobs in queue `multi`, whose extendClusters names every
worker cluster) and `recovery` (the dispatch phase's Jobs left running, worker-0's
kube-apiserver SIGKILLed, then started again); `soak` (`soak.py`), when asked, last. With
`--volcano-worker` the last worker cluster runs real Volcano (`volcano_worker.py`) and the
`volcano` checks (`volcano_checks.py`) follow the dispatch phase. Every time
is read by this process's clock when a poll first sees a state: the figures carry the poll's
resolution (`--poll`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from kubernetes import client

from activities import kube
from bench.dispatch import report, soak, volcano_checks, volcano_worker
from bench.dispatch.config import Options
from bench.sidebyside import stack as stacks
from bench.sidebyside import submit, workload
from bench.sidebyside.stack import Stack
from cli.devstack import clusters, controlplane, install, processes, temporal_dev
from cli.devstack.clusters import WorkerCluster
from cli.devstack.nodes import NodeTemplate
from models.dispatch import DISPATCHED_TO_ANNOTATION, ORIGIN_ANNOTATION
from models.signals.dispatch import LOST_AFTER_ANNOTATION

SINGLE_QUEUE: Final = "default"
DISPATCH_QUEUE: Final = clusters.QUEUE
REQUEST_TIMEOUT: Final = 5.0  # a read of a dead apiserver must not hold the poll loop


class Run:
    """The manager stack and the worker clusters, as they are now (a restarted apiserver is a
    new process: `workers` always holds the PIDs to stop)."""

    def __init__(self, stack: Stack, workers: list[WorkerCluster]) -> None:
        self.stack = stack
        self.workers = workers
        self.manager = stack.api()

    def worker_api(self, index: int) -> client.ApiClient:
        """A fresh client: one that talked to a killed apiserver may hold dead connections."""
        return controlplane.api_client(self.workers[index].kubeconfig)


# -- the stack -----------------------------------------------------------------------------


def start_manager(opts: Options, work: Path) -> Stack:
    """Temporal dev server, the manager's control plane, Caldera's CRDs and queues, worker,
    forwarder and webhook with Caldera's gang scheduler: as `bench.sidebyside` starts it."""
    server = temporal_dev.start(work / "temporal", processes.free_port(), processes.free_port())
    template = NodeTemplate(count=opts.nodes, cpu=opts.node_cpu, pods=opts.node_pods)
    try:
        plane = controlplane.start(work / "cluster", template)
    except BaseException:
        temporal_dev.stop(server)
        raise
    stack = Stack(workdir=work, db_dir=None, temporal=server, plane=plane)
    try:
        install.install(stack.api())
        stacks.start_caldera(stack)
    except BaseException:
        stacks.stop(stack)
        raise
    return stack


def dispatch_queue(names: list[str], lost_after: int) -> dict[str, Any]:
    """The manager's queue over every worker cluster, with the failover delay the run asks."""
    doc = clusters.queue_manifest(DISPATCH_QUEUE, names)
    doc["metadata"]["annotations"] = {LOST_AFTER_ANNOTATION: f"{lost_after}s"}
    return doc


def cpu_snapshot(run: Run) -> dict[str, float]:
    """CPU seconds so far by role: `manager/<process>`, `workers/<process>` (all worker
    clusters summed) and the shared Temporal server's processes by name."""
    snap: dict[str, float] = {}
    shared = {p.pid for p in run.stack.temporal.processes}
    for p in run.stack.processes():
        key = p.name if p.pid in shared else f"manager/{p.name}"
        report.add(snap, key, stacks.cpu_seconds(p.pid))
    for w in run.workers:
        for p in w.processes:
            report.add(snap, f"workers/{p.name}", stacks.cpu_seconds(p.pid))
    return snap


# -- reading Jobs ----------------------------------------------------------------------------


def volcano_jobs(api: client.ApiClient, namespace: str) -> list[dict[str, Any]] | None:
    """The namespace's Volcano Jobs as plain mappings; None when the apiserver does not answer."""
    custom = client.CustomObjectsApi(api)
    try:
        response: Any = custom.list_namespaced_custom_object(
            "batch.volcano.sh",
            "v1alpha1",
            namespace,
            "jobs",
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
    except Exception:
        return None
    items: list[dict[str, Any]] = json.loads(response.data)["items"] or []
    return items


def pod_count(api: client.ApiClient, namespace: str) -> int | None:
    try:
        listed = client.CoreV1Api(api).list_namespaced_pod(
            namespace, _request_timeout=REQUEST_TIMEOUT
        )
    except Exception:
        return None
    return len(listed.items)


def poll_until(
    read: Callable[[], Iterable[str]],
    wanted: set[str],
    deadline: float,
    poll: float,
    seen: dict[str, float] | None = None,
) -> dict[str, float]:
    """name -> time.time() a poll first found it among `read()`'s, until every one of `wanted`
    is seen or `deadline` (monotonic) passes."""
    seen = {} if seen is None else seen
    while True:
        now = time.time()
        report.first_seen(seen, now, (n for n in read() if n in wanted))
        if wanted <= seen.keys() or time.monotonic() > deadline:
            return seen
        time.sleep(poll)


def _running(api: client.ApiClient, namespace: str) -> Callable[[], list[str]]:
    def read() -> list[str]:
        return [j["metadata"]["name"] for j in volcano_jobs(api, namespace) or [] if _phase(j)]

    return read


def _phase(job: dict[str, Any], phase: str = "Running") -> bool:
    return bool(((job.get("status") or {}).get("state") or {}).get("phase") == phase)


def _status(job: dict[str, Any]) -> str:
    return json.dumps(job.get("status") or {}, sort_keys=True)


def _annotations(job: dict[str, Any]) -> dict[str, str]:
    return dict(job["metadata"].get("annotations") or {})


# -- phases ------------------------------------------------------------------------------------


def manifests(namespace: str, jobs: int, queue: str) -> list[dict[str, Any]]:
    """`jobs` one-pod Volcano Jobs (100m CPU; a pod runs until deleted) in `queue`."""
    docs = []
    for plan in workload.plan("singles", jobs, 1):
        doc = workload.volcano_job(plan, namespace)
        doc["spec"]["queue"] = queue
        docs.append(doc)
    return docs


def run_jobs(run: Run, opts: Options, label: str, queue: str, ns: str) -> dict[str, Any]:
    """Submit the Jobs (in the background) and poll the manager's Jobs until all are Running."""
    client.CoreV1Api(run.manager).create_namespace(kube.body({"metadata": {"name": ns}}))
    docs = manifests(ns, opts.jobs, queue)
    names = {d["metadata"]["name"] for d in docs}
    cpu0 = cpu_snapshot(run)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(submit.submit, run.stack.kubeconfig, docs, opts.threads)
        deadline = time.monotonic() + opts.budget
        running = poll_until(_running(run.manager, ns), names, deadline, opts.poll)
        sub = future.result()
    cpu1 = cpu_snapshot(run)
    placed = report.placement(
        _annotations(j).get(DISPATCHED_TO_ANNOTATION, "")
        for j in volcano_jobs(run.manager, ns) or []
    )
    figures = report.phase_figures(sub.start_wall, sub.created_at, running, opts.jobs)
    print(f"[{label}] {figures['running']}/{opts.jobs} Running, {figures}", flush=True)
    submitted = {k: v for k, v in asdict(sub).items() if k not in ("created_at",)}
    return {
        "namespace": ns,
        "queue": queue,
        "submit": submitted,
        **figures,
        "placement": placed,
        "cpu": report.cpu(cpu0, cpu1, opts.jobs),
    }


def delete_namespace(api: client.ApiClient, namespace: str, timeout: float) -> float | None:
    """Seconds until the namespace is gone (None: still there at `timeout`)."""
    core = client.CoreV1Api(api)
    t0 = time.monotonic()
    try:
        core.delete_namespace(namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
    while time.monotonic() - t0 < timeout:
        try:
            core.read_namespace(namespace)
        except client.ApiException as e:
            if e.status == 404:
                return round(time.monotonic() - t0, 2)
            raise
        time.sleep(1)
    return None


def recovery(run: Run, opts: Options, ns: str) -> dict[str, Any]:
    """Kill worker-0's apiserver while the dispatch phase's Jobs run; time until each of its
    Jobs runs elsewhere (the copy Running there, and the manager's Job showing it), then start
    the apiserver again and time until its stale copies and their pods are gone."""
    lost = run.workers[0].name
    jobs = volcano_jobs(run.manager, ns) or []
    affected = {
        j["metadata"]["name"]
        for j in jobs
        if _annotations(j).get(DISPATCHED_TO_ANNOTATION) == lost and _phase(j)
    }
    if not affected:
        return {"error": f"no Running job on {lost} to move"}
    # The status each showed at the kill: a manager Job counts as moved only once its status
    # is another (the new copy's), not the old copy's Running still mirrored.
    before = {j["metadata"]["name"]: _status(j) for j in jobs}
    others = list(range(1, len(run.workers)))
    other_names = {run.workers[i].name for i in others}
    apis = [run.worker_api(i) for i in others]

    def remote_running() -> list[str]:
        names: list[str] = []
        for api in apis:
            for j in volcano_jobs(api, ns) or []:
                copied = ORIGIN_ANNOTATION in _annotations(j)
                if copied and _phase(j) and j["metadata"]["name"] in affected:
                    names.append(j["metadata"]["name"])
        return names

    def mirrored() -> list[str]:
        return [
            j["metadata"]["name"]
            for j in volcano_jobs(run.manager, ns) or []
            if j["metadata"]["name"] in affected
            and _annotations(j).get(DISPATCHED_TO_ANNOTATION) in other_names
            and _phase(j)
            and _status(j) != before.get(j["metadata"]["name"])
        ]

    cpu0 = cpu_snapshot(run)
    print(f"[recovery] killing {lost}'s kube-apiserver; {len(affected)} jobs there", flush=True)
    killed = time.time()
    clusters.kill_apiserver(run.workers[0])
    deadline = time.monotonic() + opts.lost_after + opts.budget
    remote: dict[str, float] = {}
    shown: dict[str, float] = {}
    while time.monotonic() < deadline and not (
        affected <= remote.keys() and affected <= shown.keys()
    ):
        now = time.time()
        report.first_seen(remote, now, remote_running())
        report.first_seen(shown, time.time(), mirrored())
        time.sleep(opts.poll)
    moved_at = time.time()
    print(f"[recovery] {len(remote)}/{len(affected)} running elsewhere; restarting", flush=True)
    run.workers[0] = restart_apiserver(run.workers[0])
    up = time.time()
    back = run.worker_api(0)

    def stale() -> tuple[int | None, int | None]:
        copies = volcano_jobs(back, ns)
        left = None if copies is None else sum(1 for j in copies if _stale(j, affected))
        return left, pod_count(back, ns)

    gone: dict[str, float] = {}
    deadline = time.monotonic() + opts.budget
    left: tuple[int | None, int | None] = (None, None)
    while time.monotonic() < deadline:
        left = stale()
        now = time.time()
        if left[0] == 0:
            gone.setdefault("copies", now)
        if left[1] == 0:
            gone.setdefault("pods", now)
        if len(gone) == 2:
            break
        time.sleep(opts.poll)
    cpu1 = cpu_snapshot(run)
    for api in [*apis, back]:
        api.close()  # type: ignore[no-untyped-call]
    return report.recovery_figures(
        lost=lost,
        lost_after=opts.lost_after,
        affected=len(affected),
        killed=killed,
        remote=remote,
        shown=shown,
        restart_s=up - moved_at,
        up=up,
        gone=gone,
        left=left,
        # The restarted apiserver is a new process: its CPU is not comparable across the two.
        cpu=report.cpu(cpu0, cpu1, len(affected), drop=("workers/" + clusters.APISERVER,)),
    )


def _stale(job: dict[str, Any], affected: set[str]) -> bool:
    """A copy of a moved job left on the lost cluster (none of them may come back there while
    its stale copy may still be there)."""
    return job["metadata"]["name"] in affected and ORIGIN_ANNOTATION in _annotations(job)


def restart_apiserver(cluster: WorkerCluster) -> WorkerCluster:
    """`clusters.start_apiserver`'s restart, but a process that never gets ready is stopped
    by its PID here (`start_apiserver` would leave it running and unrecorded)."""
    old = cluster.apiserver()
    again = processes.start(old.name, old.argv, Path(old.log).parent, old.env)
    try:
        processes.wait_until(
            again,
            lambda: processes.http_ok(f"{cluster.server}/readyz", insecure=True),
            clusters.READY_TIMEOUT,
            "ready",
        )
    except BaseException:
        processes.stop(again)
        raise
    renewed = [again if p.pid == old.pid else p for p in cluster.control_plane.processes]
    plane = cluster.control_plane.model_copy(update={"processes": renewed})
    return cluster.model_copy(update={"control_plane": plane})


def _phase_safely(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return body()
    except Exception as e:
        traceback.print_exc()
        return {"error": f"{type(e).__name__}: {e}"}


def run(opts: Options) -> dict[str, Any]:
    """Every phase asked for, on one stack; everything started is stopped on the way out."""
    results: dict[str, Any] = {}
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    work = Path(tempfile.mkdtemp(prefix="caldera-dispatch-"))
    workers: list[WorkerCluster] = []
    stack = start_manager(opts, work)
    try:
        template = NodeTemplate(count=opts.worker_nodes, cpu=opts.node_cpu, pods=opts.node_pods)
        caldera_workers = opts.workers - (1 if opts.volcano_bin else 0)
        workers.extend(
            clusters.start_all(caldera_workers, work / "workers", stack.temporal.address, template)
        )
        if opts.volcano_bin and opts.volcano_src:  # the last one runs real Volcano
            workers.append(
                volcano_worker.start(
                    caldera_workers, work / "workers", template, opts.volcano_bin, opts.volcano_src
                )
            )
        the_run = Run(stack, workers)
        for w in workers:
            clusters.register(the_run.manager, w)
        install.apply(the_run.manager, dispatch_queue([w.name for w in workers], opts.lost_after))
        time.sleep(opts.settle)
        single, dispatch = _namespace("single"), _namespace("dispatch")
        if "single" in opts.phases:
            results["single"] = _phase_safely(
                lambda: run_jobs(the_run, opts, "single", SINGLE_QUEUE, single)
            )
            # Even after an error: its pods must not run on beside the dispatch phase.
            gone = _phase_safely(
                lambda: {"deletion_s": delete_namespace(the_run.manager, single, opts.budget)}
            )
            results["single"].update(gone if "error" not in results["single"] else {})
            time.sleep(opts.settle)
        if "dispatch" in opts.phases:
            results["dispatch"] = _phase_safely(
                lambda: run_jobs(the_run, opts, "dispatch", DISPATCH_QUEUE, dispatch)
            )
            if opts.volcano_bin and "error" not in results["dispatch"]:
                results["volcano"] = _phase_safely(
                    lambda: volcano_checks.check(the_run, opts, dispatch)
                )
            if "recovery" in opts.phases and "error" not in results["dispatch"]:
                results["recovery"] = _phase_safely(lambda: recovery(the_run, opts, dispatch))
        if "soak" in opts.phases:
            if "dispatch" in results:  # its jobs run until deleted: not beside the soak's
                gone = _phase_safely(
                    lambda: {"deletion_s": delete_namespace(the_run.manager, dispatch, opts.budget)}
                )
                results["dispatch"].update(gone if "error" not in results["dispatch"] else {})
            results["soak"] = _phase_safely(lambda: soak.soak(the_run, opts, _namespace("soak")))
    finally:
        for w in reversed(workers):
            clusters.stop(w)
        stacks.stop(stack)
        shutil.rmtree(work, ignore_errors=True)
    return {"started_at": started, "options": _options(opts), "phases": results}


def _namespace(label: str) -> str:
    return f"dsp-{label}-{uuid.uuid4().hex[:6]}"


def _options(opts: Options) -> dict[str, Any]:
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()}
