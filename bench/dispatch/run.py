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

import shutil
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from kubernetes import client

from activities import kube
from bench.dispatch import report, soak, stack, volcano_checks, volcano_worker
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
    doc = clusters.queue_manifest(stack.DISPATCH_QUEUE, names)
    doc["metadata"]["annotations"] = {LOST_AFTER_ANNOTATION: f"{lost_after}s"}
    return doc


# -- reading Jobs ----------------------------------------------------------------------------


def _running(api: client.ApiClient, namespace: str) -> Callable[[], list[str]]:
    def read() -> list[str]:
        return [
            j["metadata"]["name"]
            for j in stack.volcano_jobs(api, namespace) or []
            if stack.in_phase(j)
        ]

    return read


# -- phases ------------------------------------------------------------------------------------


def manifests(namespace: str, jobs: int, queue: str) -> list[dict[str, Any]]:
    """`jobs` one-pod Volcano Jobs (100m CPU; a pod runs until deleted) in `queue`."""
    docs = []
    for plan in workload.plan("singles", jobs, 1):
        doc = workload.volcano_job(plan, namespace)
        doc["spec"]["queue"] = queue
        docs.append(doc)
    return docs


def run_jobs(run: stack.Run, opts: Options, label: str, queue: str, ns: str) -> dict[str, Any]:
    """Submit the Jobs (in the background) and poll the manager's Jobs until all are Running."""
    client.CoreV1Api(run.manager).create_namespace(kube.body({"metadata": {"name": ns}}))
    docs = manifests(ns, opts.jobs, queue)
    names = {d["metadata"]["name"] for d in docs}
    cpu0 = stack.cpu_snapshot(run)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(submit.submit, run.stack.kubeconfig, docs, opts.threads)
        deadline = time.monotonic() + opts.budget
        running = stack.poll_until(_running(run.manager, ns), names, deadline, opts.poll)
        sub = future.result()
    cpu1 = stack.cpu_snapshot(run)
    placed = report.placement(
        stack.annotations_of(j).get(DISPATCHED_TO_ANNOTATION, "")
        for j in stack.volcano_jobs(run.manager, ns) or []
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


def recovery(run: stack.Run, opts: Options, ns: str) -> dict[str, Any]:
    """Kill worker-0's apiserver while the dispatch phase's Jobs run; time until each of its
    Jobs runs elsewhere (the copy Running there, and the manager's Job showing it), then start
    the apiserver again and time until its stale copies and their pods are gone."""
    lost = run.workers[0].name
    jobs = stack.volcano_jobs(run.manager, ns) or []
    affected = {
        j["metadata"]["name"]
        for j in jobs
        if stack.annotations_of(j).get(DISPATCHED_TO_ANNOTATION) == lost and stack.in_phase(j)
    }
    if not affected:
        return {"error": f"no Running job on {lost} to move"}
    # The status each showed at the kill: a manager Job counts as moved only once its status
    # is another (the new copy's), not the old copy's Running still mirrored.
    before = {j["metadata"]["name"]: stack.status_of(j) for j in jobs}
    others = list(range(1, len(run.workers)))
    other_names = {run.workers[i].name for i in others}
    apis = [run.worker_api(i) for i in others]

    def remote_running() -> list[str]:
        names: list[str] = []
        for api in apis:
            for j in stack.volcano_jobs(api, ns) or []:
                copied = ORIGIN_ANNOTATION in stack.annotations_of(j)
                if copied and stack.in_phase(j) and j["metadata"]["name"] in affected:
                    names.append(j["metadata"]["name"])
        return names

    def mirrored() -> list[str]:
        return [
            j["metadata"]["name"]
            for j in stack.volcano_jobs(run.manager, ns) or []
            if j["metadata"]["name"] in affected
            and stack.annotations_of(j).get(DISPATCHED_TO_ANNOTATION) in other_names
            and stack.in_phase(j)
            and stack.status_of(j) != before.get(j["metadata"]["name"])
        ]

    cpu0 = stack.cpu_snapshot(run)
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
    run.workers[0] = stack.restart_apiserver(run.workers[0])
    up = time.time()
    back = run.worker_api(0)

    def stale() -> tuple[int | None, int | None]:
        copies = stack.volcano_jobs(back, ns)
        left = None if copies is None else sum(1 for j in copies if _stale(j, affected))
        return left, stack.pod_count(back, ns)

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
    cpu1 = stack.cpu_snapshot(run)
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
    return job["metadata"]["name"] in affected and ORIGIN_ANNOTATION in stack.annotations_of(job)


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
    manager = start_manager(opts, work)
    try:
        template = NodeTemplate(count=opts.worker_nodes, cpu=opts.node_cpu, pods=opts.node_pods)
        caldera_workers = opts.workers - (1 if opts.volcano_bin else 0)
        workers.extend(
            clusters.start_all(
                caldera_workers, work / "workers", manager.temporal.address, template
            )
        )
        if opts.volcano_bin and opts.volcano_src:  # the last one runs real Volcano
            workers.append(
                volcano_worker.start(
                    caldera_workers, work / "workers", template, opts.volcano_bin, opts.volcano_src
                )
            )
        the_run = stack.Run(manager, workers)
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
                lambda: run_jobs(the_run, opts, "dispatch", stack.DISPATCH_QUEUE, dispatch)
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
        stacks.stop(manager)
        shutil.rmtree(work, ignore_errors=True)
    return {"started_at": started, "options": _options(opts), "phases": results}


def _namespace(label: str) -> str:
    return f"dsp-{label}-{uuid.uuid4().hex[:6]}"


def _options(opts: Options) -> dict[str, Any]:
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()}
