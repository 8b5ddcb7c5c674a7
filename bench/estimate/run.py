"""The run: the side-by-side stack with Caldera's side, one queue, the planned stream of jobs;
every second the queue's line (the scheduler's `pending_jobs` query) and the namespace's pods
are read, each job's first estimate and its pod's start are kept, and the report written."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from kubernetes import client
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities import kube
from bench import results
from bench.estimate import accuracy
from bench.estimate.accuracy import Planned, Told
from bench.sidebyside import stack
from bench.sidebyside.config import Options
from models import keys
from workflows.scheduler import SchedulerWorkflow

QUEUE: Final = "estimate"
QUEUES: Final = ("scheduling.volcano.sh", "v1beta1", "queues")
RUN: Final = "sim.caldera.dev/run-seconds"
POD_CPU: Final = 2


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.estimate", description=__doc__)
    p.add_argument("--jobs", type=int, default=40)
    p.add_argument("--mean-run", type=float, default=20.0, help="mean run, seconds")
    p.add_argument("--sigma", type=float, default=0.5, help="the runs' log-normal sigma")
    p.add_argument("--at-once", type=int, default=2, help="jobs the queue runs at once")
    p.add_argument("--load", type=float, default=1.5, help="arrivals over what the queue runs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget", type=float, default=1800, help="seconds for every job to start")
    p.add_argument("--out", type=Path, help="report directory (default: see bench/results.py)")
    return p.parse_args(argv)


def _options(out: Path) -> Options:
    return Options(
        shape="singles",
        jobs=1,
        replicas=1,
        sides=("caldera",),
        nodes=3,
        node_cpu="32",
        node_memory="256Gi",
        node_pods=110,
        threads=1,
        volcano_bin=None,
        volcano_src=None,
        out=out,
        budget=0,
        delete_timeout=0,
        history_sample=0,
        settle=0,
        temporal_db_dir=None,
    )


def _job(p: Planned, namespace: str) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": str(POD_CPU)}}}
    template = {
        "metadata": {"annotations": {RUN: str(p.run_seconds)}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    spec = {
        "schedulerName": "volcano",
        "queue": QUEUE,
        "minAvailable": 1,
        "tasks": [{"name": "w", "replicas": 1, "template": template}],
    }
    meta = {"name": p.name, "namespace": namespace}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": meta,
        "spec": spec,
    }


def _setup(api: client.ApiClient, namespace: str, at_once: int) -> None:
    client.CoreV1Api(api).create_namespace(kube.body({"metadata": {"name": namespace}}))
    spec = {"weight": 1, "parent": "root", "capability": {"cpu": str(POD_CPU * at_once)}}
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": QUEUE},
        "spec": spec,
    }
    custom = client.CustomObjectsApi(api)
    custom.create_cluster_custom_object(*QUEUES, body)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        queue: Any = custom.get_cluster_custom_object(*QUEUES, QUEUE)
        if (queue.get("status") or {}).get("state") == "Open":
            return
        time.sleep(0.5)
    raise RuntimeError(f"queue {QUEUE} not Open in 60 s")


def _started(api: client.ApiClient, namespace: str) -> dict[str, datetime]:
    """Each job's pod start, for the pods that have one."""
    out = {}
    for pod in client.CoreV1Api(api).list_namespaced_pod(namespace).items:
        job = ((pod.metadata and pod.metadata.labels) or {}).get("volcano.sh/job-name")
        if job and pod.status and pod.status.start_time:
            out[job] = pod.status.start_time
    return out


async def _measure(
    api: client.ApiClient, temporal: Client, args: argparse.Namespace
) -> dict[str, Any]:
    namespace = f"estimate-{uuid.uuid4().hex[:6]}"
    _setup(api, namespace, args.at_once)
    planned = accuracy.plan(
        args.jobs, args.mean_run, args.sigma, args.at_once, args.load, args.seed
    )
    handle = temporal.get_workflow_handle_for(
        SchedulerWorkflow.run, keys.scheduler_workflow_id("volcano")
    )
    custom = client.CustomObjectsApi(api)
    first: dict[str, tuple[datetime, datetime]] = {}  # job -> (read at, estimated start)
    started: dict[str, datetime] = {}
    begun = time.monotonic()
    pending = list(planned)
    while len(started) < len(planned):
        if time.monotonic() - begun > args.budget:
            break
        now = time.monotonic() - begun
        while pending and pending[0].at <= now:
            custom.create_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", namespace, "jobs", _job(pending.pop(0), namespace)
            )
        line = await handle.query(SchedulerWorkflow.pending_jobs, QUEUE)
        read_at = datetime.now(UTC)
        for job in line.jobs:
            if job.estimated_start is not None and job.name not in first:
                first[job.name] = (read_at, job.estimated_start)
        started = await asyncio.to_thread(_started, api, namespace)
        await asyncio.sleep(1.0)
    told = [
        Told(name, at, estimate, started[name])
        for name, (at, estimate) in sorted(first.items())
        if name in started and at < started[name]
    ]
    found = accuracy.accuracy(told)
    return {
        "jobs": len(planned),
        "started": len(started),
        "runs": [p.run_seconds for p in planned],
        "estimated": found.estimated,
        "median_error_s": found.median_error_s,
        "p90_error_s": found.p90_error_s,
        "median_lead_s": found.median_lead_s,
        "median_relative_error": found.median_relative,
        "told": [
            {
                "job": t.name,
                "told_at": t.told_at.isoformat(),
                "estimate": t.estimate.isoformat(),
                "started": t.started.isoformat(),
            }
            for t in told
        ],
    }


def _report(args: argparse.Namespace, found: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"# Start estimates: {found['jobs']} one-pod jobs through one queue",
            "",
            f"Runs log-normal around {args.mean_run:.0f} s (sigma {args.sigma}), {args.at_once} "
            f"at once, arrivals at {args.load}x what the queue runs, seed {args.seed}.",
            "",
            "| jobs | started | given an estimate before starting | median abs error | p90 "
            "abs error | median lead | median error / lead |",
            "|---|---|---|---|---|---|---|",
            f"| {found['jobs']} | {found['started']} | {found['estimated']} | "
            f"{found['median_error_s']:.1f} s | {found['p90_error_s']:.1f} s | "
            f"{found['median_lead_s']:.1f} s | {found['median_relative_error']:.0%} |",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out: Path = args.out or results.run_dir("estimate", f"jobs-{args.jobs}")
    out.mkdir(parents=True, exist_ok=True)
    st = stack.start(_options(out))
    try:

        async def measure() -> dict[str, Any]:
            temporal = await Client.connect(
                st.temporal.address, data_converter=pydantic_data_converter
            )
            return await _measure(st.api(), temporal, args)

        found = asyncio.run(measure())
    finally:
        stack.stop(st)
    (out / "result.json").write_text(json.dumps(found, indent=2) + "\n")
    (out / "report.md").write_text(_report(args, found))
    print(_report(args, found))
    print(f"report: {out / 'report.md'}")
    return 0
