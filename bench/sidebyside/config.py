"""The run's options: shape, sides, cluster size, where the report goes."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench import results
from bench.sidebyside import workload
from cli.devstack import devices

SIDES: Final = ("builtin", "temporal-floor", "caldera", "caldera-batch", "volcano")
# Caldera's Volcano Jobs again, with the worker and forwarder on the Temporal server on
# PostgreSQL (`cli.devstack.temporal_dev_server`) instead of the dev server: what a production
# store changes. Not in the default sides (it starts a second Temporal).
SERVER_SIDE: Final = "caldera-server"
KNOWN_SIDES: Final = (*SIDES, SERVER_SIDE)
FLOOR_SIDE: Final = "temporal-floor"  # bare workflows, no Kubernetes objects (`floor`)
SHAPES: Final = ("singles", "gangs", "mixed")
CALDERA_SIDES: Final = frozenset({"caldera", "caldera-batch", SERVER_SIDE})
# Default job count and replicas per gang, per shape.
DEFAULT_JOBS: Final = {"singles": 1000, "gangs": 10, "mixed": 100}
DEFAULT_REPLICAS: Final = {"singles": 1, "gangs": 100, "mixed": 10}


@dataclass(frozen=True)
class Options:
    shape: str
    jobs: int
    replicas: int
    sides: tuple[str, ...]
    nodes: int
    node_cpu: str
    node_memory: str
    node_pods: int
    threads: int
    volcano_bin: Path | None
    volcano_src: Path | None
    out: Path
    budget: float  # seconds a side may take to reach its target
    delete_timeout: float
    history_sample: int
    settle: float  # idle seconds between sides
    temporal_db_dir: Path | None
    keep_logs: bool = False  # copy every process's log into `out`
    profile: bool = False  # py-spy on the worker during each Caldera side's workload
    gpus_per_pod: int = 0  # devices of gpu.caldera.dev each pod claims (0: no claims)
    gpus_per_node: int = 0  # fake GPUs each node publishes (0: no ResourceSlices)


def gpus_per_node(pods: int, nodes: int, per_pod: int, asked: int | None) -> int:
    """The GPUs each node publishes: `asked`, else just enough for every pod at once (a pod's
    devices come from one node, so K x ceil(pods / nodes)). Raises ValueError when the
    workload cannot fit, so a run is refused before a stack starts rather than left pending."""
    if per_pod < 0 or (asked is not None and asked < 0):
        raise ValueError("--gpus-per-pod and --gpus-per-node must be at least 0")
    if per_pod == 0:
        return asked or 0
    if nodes < 1:
        raise ValueError("--gpus-per-pod needs at least one node")
    cap = devices.MAX_DEVICES  # one ResourceSlice per node holds at most this many
    per_node = asked if asked is not None else per_pod * math.ceil(pods / nodes)
    if per_node > cap:
        raise ValueError(
            f"{pods} pods x {per_pod} GPUs on {nodes} nodes need {per_node} GPUs per node, "
            f"over the {cap} one node's ResourceSlice holds: use more --nodes"
        )
    if nodes * (per_node // per_pod) < pods:
        raise ValueError(
            f"{nodes} nodes x {per_node} GPUs hold {nodes * (per_node // per_pod)} pods of "
            f"{per_pod} GPUs, not the workload's {pods}: raise --gpus-per-node or --nodes"
        )
    return per_node


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.sidebyside",
        description="The same workload on each side, one after the other, on one stack.",
    )
    p.add_argument("--shape", choices=SHAPES, default="singles")
    p.add_argument("--jobs", type=int, help="jobs (singles 1000, gangs 10, mixed 100)")
    p.add_argument("--replicas", type=int, help="pods per gang (gangs 100, mixed 10)")
    p.add_argument("--sides", default=",".join(SIDES), help="comma-separated, run in this order")
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--node-cpu", default="32")
    p.add_argument("--node-memory", default="256Gi")
    p.add_argument("--node-pods", type=int, default=110)
    p.add_argument("--threads", type=int, default=8, help="client threads that submit")
    p.add_argument("--volcano-bin", type=Path, help="dir with vc-controller-manager, ...")
    p.add_argument("--volcano-src", type=Path, help="a Volcano source tree (its installer/)")
    p.add_argument("--out", type=Path, help="report directory (default: see bench/results.py)")
    p.add_argument("--budget", type=float, default=900, help="seconds per side to reach target")
    p.add_argument("--delete-timeout", type=float, default=300)
    p.add_argument("--history-sample", type=int, default=20, help="workflow histories read")
    p.add_argument("--settle", type=float, default=5, help="idle seconds between sides")
    p.add_argument("--temporal-db-dir", type=Path, help="Temporal's SQLite here (e.g. /dev/shm)")
    p.add_argument("--keep-logs", action="store_true", help="copy the stack's logs into --out")
    p.add_argument(
        "--profile", action="store_true", help="py-spy the worker (collapsed stacks in --out)"
    )
    p.add_argument(
        "--gpus-per-pod", type=int, default=0, help="gpu.caldera.dev devices each pod claims"
    )
    p.add_argument(
        "--gpus-per-node", type=int, help="fake GPUs per node (default: just enough, <= 128)"
    )
    return p


def parse(argv: list[str] | None = None) -> Options:
    p = parser()
    a = p.parse_args(argv)
    sides = tuple(s.strip() for s in a.sides.split(",") if s.strip())
    unknown = [s for s in sides if s not in KNOWN_SIDES]
    if unknown or not sides or len(set(sides)) != len(sides):
        p.error(f"--sides: each of {', '.join(KNOWN_SIDES)} at most once (got {a.sides!r})")
    jobs = a.jobs if a.jobs is not None else DEFAULT_JOBS[a.shape]
    replicas = 1 if a.shape == "singles" else (a.replicas or DEFAULT_REPLICAS[a.shape])
    if jobs < 1 or replicas < 1 or a.threads < 1:
        p.error("--jobs, --replicas and --threads must be at least 1")
    pods = workload.all_pods(workload.plan(a.shape, jobs, replicas))
    try:
        per_node = gpus_per_node(pods, a.nodes, a.gpus_per_pod, a.gpus_per_node)
    except ValueError as e:
        p.error(str(e))
    out = a.out or results.run_dir("sidebyside", f"{a.shape}-{jobs}")
    return Options(
        shape=a.shape,
        jobs=jobs,
        replicas=replicas,
        sides=sides,
        nodes=a.nodes,
        node_cpu=a.node_cpu,
        node_memory=a.node_memory,
        node_pods=a.node_pods,
        threads=a.threads,
        volcano_bin=a.volcano_bin,
        volcano_src=a.volcano_src,
        out=out,
        budget=a.budget,
        delete_timeout=a.delete_timeout,
        history_sample=a.history_sample,
        settle=a.settle,
        temporal_db_dir=a.temporal_db_dir,
        keep_logs=a.keep_logs,
        profile=a.profile,
        gpus_per_pod=a.gpus_per_pod,
        gpus_per_node=per_node,
    )
