"""Gang-scheduling benchmark in Volcano's own shape, on the real local stack (not a test).

    python -m bench.gang.run [--scenario gangs|singles] [--nodes 100]

Starts its own control plane (100 kwok nodes x 32 CPU / 256Gi), Temporal dev server, worker,
forwarder and webhook on free ports; submits the scenario; samples pods every second until all
are Running; writes `<scenario>.json` and `<scenario>.png` (pods pending / bound / running over
time) into `--out` (default: a fresh folder under `bench.results`); stops everything it started.

Scenarios: `gangs` = 10 jobs x 100 replicas, minAvailable 100; `singles` = 1000 jobs x 1 pod.
Figures: makespan (first submit → all pods Running), pod scheduling latency p50/p99 (creation →
PodScheduled=True), sessions per second, worker CPU seconds and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client

from bench import results
from cli.devstack import caldera_processes, controlplane, install, processes, temporal_dev
from cli.devstack.nodes import NodeTemplate
from tests.builders import make_job


def _job(name: str, replicas: int) -> dict[str, Any]:
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        }
    }
    return (
        make_job(name, namespace="bench").task("w", replicas=replicas, template=template).manifest()
    )


def _proc(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system) and peak RSS in bytes of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = 100.0
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    peak = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
    return cpu, peak


def _scheduled_at(pod: dict[str, Any]) -> datetime | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "True":
            return _time(c["lastTransitionTime"])
    return None


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _pods(core: client.CoreV1Api) -> list[dict[str, Any]]:
    """Plain mappings: a thousand typed pods per second would cost more than the sampling."""
    response: Any = core.list_namespaced_pod("bench", _preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def run(
    scenario: str, nodes: int, budget: float, singles: int = 1000, db_dir: Path | None = None
) -> dict[str, Any]:
    jobs = (
        [(f"gang-{i}", 100) for i in range(10)]
        if scenario == "gangs"
        else [(f"one-{i}", 1) for i in range(singles)]
    )
    total = sum(r for _, r in jobs)
    work = Path(tempfile.mkdtemp(prefix="caldera-bench-"))
    db = Path(tempfile.mkdtemp(dir=db_dir)) / "temporal_dev.db" if db_dir else None
    server = temporal_dev.start(
        work / "temporal", processes.free_port(), processes.free_port(), db=db
    )
    plane = controlplane.start(
        work / "cluster", NodeTemplate(count=nodes, cpu="32", memory="256Gi", pods=110)
    )
    started: list[processes.Process] = []
    try:
        api = controlplane.api_client(plane.kubeconfig)
        install.install(api)
        started = caldera_processes.start(
            plane.kubeconfig, server.address, work / "logs", scheduler_override=None
        )
        worker = started[0]
        cpu0, _ = _proc(worker.pid)
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "bench"}})  # type: ignore[arg-type]
        custom = client.CustomObjectsApi(api)
        t0 = time.monotonic()
        wall0 = time.time()
        for name, replicas in jobs:
            custom.create_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", "bench", "jobs", _job(name, replicas)
            )
        submitted = time.monotonic() - t0
        timeline: list[dict[str, float]] = []
        peak = 0
        while True:
            pods = _pods(core)
            running = sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
            bound = sum(1 for p in pods if p.get("spec", {}).get("nodeName"))
            timeline.append(
                {
                    "t": time.monotonic() - t0,
                    "created": len(pods),
                    "bound": bound,
                    "running": running,
                }
            )
            peak = max(peak, _proc(worker.pid)[1])
            if running == total or time.monotonic() - t0 > budget:
                break
            time.sleep(1)
        makespan = time.monotonic() - t0
        cpu1, peak_final = _proc(worker.pid)
        latencies = []
        for pod in pods:
            at = _scheduled_at(pod)
            if at is not None:
                created = _time(pod["metadata"]["creationTimestamp"])
                latencies.append((at - created).total_seconds())
        latencies.sort()
        sessions = _sessions(work / "logs" / "worker.log")
        return {
            "scenario": scenario,
            "nodes": nodes,
            "jobs": len(jobs),
            "pods": total,
            "all_running": timeline[-1]["running"] == total,
            "running_at_end": timeline[-1]["running"],
            "budget_seconds": budget,
            "submit_seconds": round(submitted, 1),
            "makespan_seconds": round(makespan, 1),
            "latency_p50_seconds": round(statistics.median(latencies), 2) if latencies else None,
            "latency_p99_seconds": round(latencies[int(len(latencies) * 0.99) - 1], 2)
            if latencies
            else None,
            "sessions": sessions,
            "sessions_per_second": round(sessions / makespan, 2),
            "worker_cpu_seconds": round(cpu1 - cpu0, 1),
            "worker_peak_rss_mib": round(max(peak, peak_final) / 2**20, 1),
            "started_at": datetime.fromtimestamp(wall0).isoformat(timespec="seconds"),
            "timeline": timeline,
        }
    finally:
        for p in reversed(started):
            processes.stop(p)
        controlplane.stop(plane, remove=True)
        processes.stop(server.process)
        shutil.rmtree(work, ignore_errors=True)
        if db is not None:
            shutil.rmtree(db.parent, ignore_errors=True)


def _sessions(log: Path) -> int:
    return sum(1 for line in log.read_text(errors="replace").splitlines() if "session done" in line)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [p["t"] for p in result["timeline"]]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(
        t,
        [p["created"] - p["bound"] for p in result["timeline"]],
        label="pending (created, unbound)",
    )
    ax.plot(t, [p["bound"] for p in result["timeline"]], label="bound")
    ax.plot(t, [p["running"] for p in result["timeline"]], label="running")
    ax.set_xlabel("seconds since first submit")
    ax.set_ylabel("pods")
    shape = f"{result['jobs']} jobs, {result['pods']} pods, {result['nodes']} nodes"
    ax.set_title(f"{result['scenario']}: {shape}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    # SIGTERM unwinds like Ctrl-C, so `run` stops every process it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", choices=("gangs", "singles"), default="gangs")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--budget", type=float, default=900, help="give up after this many seconds")
    parser.add_argument("--singles", type=int, default=1000, help="jobs in `singles` (1000)")
    parser.add_argument(
        "--temporal-db-dir", type=Path, help="put Temporal's SQLite file here (e.g. /dev/shm)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="result directory (default: see bench/results.py)"
    )
    args = parser.parse_args()
    out: Path = args.out or results.run_dir("gang", args.scenario)
    result = run(args.scenario, args.nodes, args.budget, args.singles, args.temporal_db_dir)
    result["temporal_db"] = str(args.temporal_db_dir or "workdir (disk)")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.scenario}.json").write_text(json.dumps(result, indent=2))
    plot(result, out / f"{args.scenario}.png")
    summary = {k: v for k, v in result.items() if k != "timeline"}
    print(json.dumps(summary, indent=2))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
