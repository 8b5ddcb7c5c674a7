"""The run's options: how many jobs and worker clusters, their size, the phases' budgets."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench import results
from bench.sidebyside import volcano_install
from cli.devstack import clusters
from models.signals.dispatch import MIN_LOST_AFTER

PHASES: Final = ("single", "dispatch", "recovery", "soak")
DEFAULT_PHASES: Final = PHASES[:3]  # the soak (minutes of faults: soak.py) runs when asked


@dataclass(frozen=True)
class Options:
    jobs: int
    workers: int
    phases: tuple[str, ...]
    nodes: int  # the manager's kwok nodes (the single-cluster path runs on them)
    worker_nodes: int  # each worker cluster's
    node_cpu: str
    node_pods: int
    threads: int
    lost_after: int  # the dispatch queue's caldera.dev/lost-after, seconds
    budget: float  # seconds a phase may take to reach its target
    poll: float  # seconds between two reads of the Jobs
    settle: float
    out: Path
    # --volcano-worker: the last worker cluster runs real Volcano (volcano_worker.py)
    volcano_bin: Path | None = None  # None: every worker runs Caldera
    volcano_src: Path | None = None  # the Volcano source tree its CRDs and conf come from
    volcano_lifecycle: int = 2  # Jobs per kind (finish, abort, delete) in the `volcano` checks
    soak_minutes: float = 10.0  # the soak phase: how long jobs are submitted and faults injected
    soak_every: float = 3.0  # seconds between two of its Jobs
    soak_run_seconds: tuple[int, int] = (20, 40)  # each Job's pods succeed after this many
    soak_fault_every: float = 60.0  # seconds between two faults


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.dispatch",
        description="One-pod Volcano Jobs on the manager, then dispatched to worker clusters, "
        "then one worker's apiserver killed: one run, one stack.",
    )
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--workers", type=int, default=2, help="worker clusters (2 to 8)")
    p.add_argument("--phases", default=",".join(DEFAULT_PHASES), help="comma-separated, this order")
    p.add_argument("--nodes", type=int, default=4, help="manager's nodes")
    p.add_argument("--worker-nodes", type=int, default=4, help="each worker cluster's nodes")
    p.add_argument("--node-cpu", default="32")
    p.add_argument("--node-pods", type=int, default=110)
    p.add_argument("--threads", type=int, default=8, help="client threads that submit")
    p.add_argument("--lost-after", type=int, default=30, help="seconds (the queue annotation)")
    p.add_argument("--budget", type=float, default=600, help="seconds per phase")
    p.add_argument("--poll", type=float, default=0.5, help="seconds between reads")
    p.add_argument("--settle", type=float, default=5, help="idle seconds between phases")
    p.add_argument("--out", type=Path, help="report directory (default: see bench/results.py)")
    p.add_argument(
        "--volcano-worker",
        action="store_true",
        help="the last worker cluster runs real Volcano (needs --volcano-bin, --volcano-src)",
    )
    p.add_argument("--volcano-bin", type=Path, help="prebuilt vc-* binaries")
    p.add_argument("--volcano-src", type=Path, help="Volcano source tree (CRDs, scheduler conf)")
    p.add_argument("--volcano-lifecycle", type=int, default=2, help="jobs per kind, >= 1")
    p.add_argument("--soak-minutes", type=float, default=10, help="soak: minutes of faults")
    p.add_argument("--soak-every", type=float, default=3, help="soak: seconds between Jobs")
    p.add_argument("--soak-run-seconds", default="20-40", help="soak: a Job's run, LOW-HIGH s")
    p.add_argument("--soak-fault-every", type=float, default=60, help="soak: seconds apart")
    return p


def parse(argv: list[str] | None = None) -> Options:
    """Options, refused before any process starts when the jobs could not all run at once."""
    p = parser()
    a = p.parse_args(argv)
    phases = tuple(s.strip() for s in a.phases.split(",") if s.strip())
    if not phases or len(set(phases)) != len(phases) or any(s not in PHASES for s in phases):
        p.error(f"--phases: each of {', '.join(PHASES)} at most once (got {a.phases!r})")
    if "recovery" in phases and "dispatch" not in phases:
        p.error("--phases: recovery moves the dispatch phase's jobs; keep dispatch before it")
    if a.jobs < 1 or a.threads < 1 or a.poll <= 0:
        p.error("--jobs and --threads must be at least 1, --poll above 0")
    if not 2 <= a.workers <= clusters.MAX_CLUSTERS:
        p.error(f"--workers: 2 to {clusters.MAX_CLUSTERS} (recovery needs a second cluster)")
    if a.lost_after < MIN_LOST_AFTER:
        p.error(f"--lost-after: at least {MIN_LOST_AFTER} s (Caldera's floor)")
    if "single" in phases and a.nodes * a.node_pods < a.jobs:
        p.error(f"--nodes x --node-pods must hold the {a.jobs} jobs' pods")
    # Recovery puts every job of the lost cluster on the others: the rest must hold them all.
    holding = a.workers - 1 if "recovery" in phases else a.workers
    if "dispatch" in phases and holding * a.worker_nodes * a.node_pods < a.jobs:
        p.error(f"{holding} x --worker-nodes x --node-pods must hold the {a.jobs} jobs' pods")
    if a.volcano_worker:
        why = volcano_install.missing(a.volcano_bin, a.volcano_src)
        if why or a.volcano_lifecycle < 1 or "dispatch" not in phases:
            why = why or "needs the dispatch phase and --volcano-lifecycle of at least 1"
            p.error(f"--volcano-worker: {why}")
        if "soak" in phases:  # it kills Caldera workers and relies on their lease fencing
            p.error("--volcano-worker: not with the soak (Volcano does not fence by the lease)")
    low, _, high = a.soak_run_seconds.partition("-")
    run_seconds = (int(low), int(high or low)) if f"{low}{high}".isdigit() else (0, 0)
    if not 1 <= run_seconds[0] <= run_seconds[1]:
        p.error(f"--soak-run-seconds: LOW-HIGH, 1 <= LOW <= HIGH (got {a.soak_run_seconds!r})")
    if a.soak_minutes <= 0 or a.soak_every <= 0 or a.soak_fault_every < 10:
        p.error("--soak-minutes and --soak-every above 0, --soak-fault-every at least 10")
    return Options(
        jobs=a.jobs,
        workers=a.workers,
        phases=phases,
        nodes=a.nodes,
        worker_nodes=a.worker_nodes,
        node_cpu=a.node_cpu,
        node_pods=a.node_pods,
        threads=a.threads,
        lost_after=a.lost_after,
        budget=a.budget,
        poll=a.poll,
        settle=a.settle,
        out=a.out or results.run_dir("dispatch", f"{a.jobs}x{a.workers}"),
        volcano_bin=a.volcano_bin if a.volcano_worker else None,
        volcano_src=a.volcano_src if a.volcano_worker else None,
        volcano_lifecycle=a.volcano_lifecycle,
        soak_minutes=a.soak_minutes,
        soak_every=a.soak_every,
        soak_run_seconds=run_seconds,
        soak_fault_every=a.soak_fault_every,
    )
