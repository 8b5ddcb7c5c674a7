"""One run: start the stack, run each side in turn in its own namespace, stop the stack."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client

from activities import kube
from bench.sidebyside import apimetrics, cleanup, observe, podwatch, submit, volcano, workload
from bench.sidebyside import stack as stacks
from bench.sidebyside import volcano_install as vi
from bench.sidebyside.config import CALDERA_SIDES, FLOOR_SIDE, SERVER_SIDE, Options
from bench.sidebyside.stack import Stack
from bench.sidebyside.temporal_stats import Probe, Window, sample, workflow_id

WFT_LOG_LINE: Final = "Failed activation on workflow"  # the Python SDK's task-failure warning


def _cpu(before: dict[str, float], after: dict[str, float], jobs: int) -> dict[str, Any]:
    per_process = stacks.cpu_delta(before, after)
    total = sum(per_process.values())
    return {
        "per_process_s": per_process,
        "total_s": round(total, 2),
        "ms_per_job": round(total * 1000 / jobs, 1),
    }


def _workload(
    stack: Stack, opts: Options, side: str, plans: list[workload.JobPlan], ns: str
) -> tuple[Window, dict[str, Any]]:
    """Submit (in the background) and watch from the first create until the target; with the
    wall-clock window from just before the first create to the target (or the budget's end),
    in which the shared workflows' events are the workload's."""
    api = stack.api()
    docs = [workload.manifest(side, j, ns, opts.gpus_per_pod) for j in plans]
    watch = observe.Watch(
        label=side,
        namespace=ns,
        volcano_api=workload.is_volcano(side),
        pods=workload.target_pods(plans),
        failing=sum(1 for j in plans if j.fails),
    )
    pods_seen = podwatch.PodWatch(stack.kubeconfig, ns)
    try:
        with ThreadPoolExecutor(1) as pool:
            started = datetime.now(UTC)
            t0 = time.monotonic()
            future = pool.submit(submit.submit, stack.kubeconfig, docs, opts.threads)
            run = observe.wait(api, watch, t0, opts.budget, pods_seen.standing)
            target = datetime.now(UTC)
            sub = future.result()
    finally:
        pods_seen.stop()
    print(f"[{side}] submitted {sub.created}/{len(docs)} jobs in {sub.seconds:.1f}s", flush=True)
    items = run.pop("pods")
    expected = {j.name: j.replicas for j in plans if not j.fails}
    lat = observe.latencies(items, observe.jobs(api, ns, watch.volcano_api), expected)
    last, first = lat.pop("last_running_at"), lat.pop("first_created_at")
    seen = pods_seen.figures(sub.created_at, expected, sub.start_wall)
    makespan = seen["makespan_watch_s"] or run["makespan_poll_s"]
    submitted = {k: v for k, v in asdict(sub).items() if k != "created_at"}
    return (started, target), {
        "namespace": ns,
        "jobs": len(plans),
        "pods_target": watch.pods,
        "failing_jobs": watch.failing,
        "submit": submitted,
        **run,
        "makespan_s": makespan,
        "makespan_status_s": round(last - sub.start_wall, 2) if last and run["reached"] else None,
        "first_job_created_after_s": round(first - sub.start_wall, 2) if first else None,
        "pods_per_s": round(watch.pods / makespan, 2) if makespan else None,
        **lat,
        **seen,
        "timeline": watch.timeline,
    }


def _sampled(side: str, ns: str, plans: list[workload.JobPlan], size: int) -> list[str]:
    return [workflow_id(side, ns, name) for name in sample([j.name for j in plans], size)]


def _temporal(probe: Probe, side: str, ns: str, plans: list[workload.JobPlan], size: int) -> Any:
    ids = _sampled(side, ns, plans, size)
    return {"visibility_after_delete": probe.visibility(side, ns), **probe.histories(ids)}


def _wft_log_lines(stack: Stack, offsets: dict[str, int]) -> int | None:
    worker = next((p for p in stack.caldera if p.name == "worker"), None)
    if worker is None or worker.name not in offsets:
        return None
    return stacks.log_since(worker, offsets[worker.name]).count(WFT_LOG_LINE)


def run_side(
    stack: Stack, opts: Options, side: str, plans: list[workload.JobPlan], probe: Probe
) -> dict[str, Any]:
    """The workload in a fresh namespace, then its deletion; every figure of the side."""
    ns = f"sbs-{side}-{uuid.uuid4().hex[:6]}"
    api = stack.api()
    client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    if opts.gpus_per_pod:  # before the clock runs: the template is the namespace's, not a job's
        template = kube.body(workload.claim_template(opts.gpus_per_pod))
        try:
            client.ResourceV1Api(api).create_namespaced_resource_claim_template(ns, template)
        except BaseException:
            _delete_quietly(api, ns)
            raise
    offsets = {p.name: stacks.log_offset(p) for p in stack.caldera}
    cpu0 = stacks.cpu_snapshot(stack)
    api0 = apimetrics.scrape(api)
    spy = stacks.profile(stack, opts.out / f"{side}-worker.txt") if opts.profile else None
    try:
        (started, target), result = _workload(stack, opts, side, plans, ns)
    except BaseException:
        _delete_quietly(api, ns)  # so the next side starts on a clean cluster
        raise
    finally:
        if spy is not None:
            stacks.end_profile(spy)
    cpu1 = stacks.cpu_snapshot(stack)
    result["apiserver"] = apimetrics.delta(api0, apimetrics.scrape(api), len(plans))
    if opts.gpus_per_pod:  # after the snapshots: the reading is no part of the workload
        result["claims_at_target"] = observe.claim_figures(observe.resource_claims(api, ns))
    caldera = side in CALDERA_SIDES
    if caldera:
        result["visibility_at_target"] = probe.visibility(side, ns)
        # Each sampled job's story up to Running (the whole one is read after deletion).
        result["temporal_at_target"] = probe.histories(
            _sampled(side, ns, plans, opts.history_sample)
        )
    makespan = f"{result['makespan_s']}s" if result["makespan_s"] is not None else "none"
    print(
        f"[{side}] target reached: {result['reached']} (makespan {makespan}); deleting", flush=True
    )
    deleted = cleanup.delete_and_wait(
        api, side, ns, probe if caldera else None, opts.delete_timeout, bool(opts.gpus_per_pod)
    )
    cpu2 = stacks.cpu_snapshot(stack)
    deleted_at = datetime.now(UTC)
    result["window_utc"] = {
        "start": started.isoformat(),
        "target": target.isoformat(),
        "deleted": deleted_at.isoformat(),
    }
    print(
        f"[{side}] deletion: {deleted['deletion_s']}s, capped {deleted['capped']} "
        f"{deleted['remaining_at_cap'] or ''}",
        flush=True,
    )
    result["deletion"] = deleted
    result["cpu_run"] = _cpu(cpu0, cpu1, len(plans))
    result["cpu_delete"] = _cpu(cpu1, cpu2, len(plans))
    result["cpu_all"] = _cpu(cpu0, cpu2, len(plans))
    if caldera:
        result["temporal"] = _temporal(probe, side, ns, plans, opts.history_sample)
        result["temporal"]["worker_log_task_failures"] = _wft_log_lines(stack, offsets)
        # Read once, after deletion, so the reading costs the measured windows nothing; an
        # event's own time says which window it belongs to.
        shared = probe.shared({"run": (started, target), "deletion": (target, deleted_at)})
        result["shared_workflows_at_target"] = shared["run"]
        result["shared_workflows_deletion"] = shared["deletion"]
    return result


def run_floor(stack: Stack, opts: Options) -> dict[str, Any]:
    """The bare workflows of `floor`, one per job, on this stack's Temporal server."""
    argv = [sys.executable, "-m", "bench.sidebyside.floor", stack.temporal.address]
    cpu0 = stacks.cpu_snapshot(stack)
    done = subprocess.run(
        [*argv, str(opts.jobs), str(opts.threads)],
        capture_output=True,
        text=True,
        timeout=opts.budget,
        check=True,
    )
    cpu1 = stacks.cpu_snapshot(stack)
    floor = json.loads(done.stdout.strip().splitlines()[-1])
    cpu1["floor process"] = floor["process_cpu_s"]
    cpu0["floor process"] = 0.0
    print(
        f"[{FLOOR_SIDE}] {floor['completed']}/{opts.jobs} workflows in {floor['makespan_s']}s",
        flush=True,
    )
    return {
        "floor": floor,
        "reached": floor["completed"] == opts.jobs,
        "makespan_s": floor["makespan_s"],
        "cpu_run": _cpu(cpu0, cpu1, opts.jobs),
    }


def _delete_quietly(api: client.ApiClient, namespace: str) -> None:
    try:
        client.CoreV1Api(api).delete_namespace(namespace)
    except Exception as e:
        print(f"could not delete namespace {namespace}: {e}", flush=True)


def _side(
    stack: Stack, opts: Options, side: str, plans: list[workload.JobPlan], probe: Probe, last: bool
) -> dict[str, Any]:
    """One side, with Volcano's processes around it for `volcano`; errors are recorded."""
    installed: volcano.Installed | None = None
    moved = False
    try:
        if side == SERVER_SIDE:
            moved = True
            server = stacks.on_server(stack)
            on_server = Probe(server.address)
            try:
                return run_side(stack, opts, side, plans, on_server)
            finally:
                on_server.close()
        if side == "volcano":
            assert opts.volcano_bin is not None and opts.volcano_src is not None
            installed = volcano.Installed()
            volcano.enter(stack, opts.volcano_bin, opts.volcano_src, installed)
        if side == FLOOR_SIDE:
            return run_floor(stack, opts)
        return run_side(stack, opts, side, plans, probe)
    except Exception as e:
        traceback.print_exc()
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        if installed is not None:
            volcano.leave(stack, installed, restore=not last)
        if moved and not last:
            stacks.on_dev(stack)


def run(opts: Options) -> dict[str, Any]:
    plans = workload.plan(opts.shape, opts.jobs, opts.replicas)
    results: dict[str, Any] = {}
    skip = vi.missing(opts.volcano_bin, opts.volcano_src) if "volcano" in opts.sides else None
    if skip:
        print(f"volcano: skipped ({skip})", flush=True)
        results["volcano"] = {"skipped": skip}
    if FLOOR_SIDE in opts.sides and opts.shape != "singles":
        print(f"{FLOOR_SIDE}: skipped (it models one-pod jobs: --shape singles)", flush=True)
        results[FLOOR_SIDE] = {"skipped": "it models one-pod jobs: --shape singles"}
    sides = [s for s in opts.sides if s not in results]
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    if sides:
        stack = stacks.start(opts)
        probe = Probe(stack.temporal.address)
        try:
            time.sleep(opts.settle)  # let the freshly started processes go idle first
            for i, side in enumerate(sides):
                print(f"[{side}] {len(plans)} jobs, {workload.target_pods(plans)} pods", flush=True)
                results[side] = _side(stack, opts, side, plans, probe, last=i == len(sides) - 1)
                if i < len(sides) - 1:
                    time.sleep(opts.settle)
        finally:
            probe.close()
            if opts.keep_logs:
                shutil.copytree(stack.logs(), opts.out / "logs", dirs_exist_ok=True)
            stacks.stop(stack)
    return {"started_at": started, "options": _options(opts), "sides": results}


def _options(opts: Options) -> dict[str, Any]:
    return {
        k: str(v) if v is not None and not isinstance(v, int | float | str | tuple) else v
        for k, v in asdict(opts).items()
    }
