"""The one stack every side runs on, and the CPU each of its processes spends.

Started like `bench/gang`: the Temporal dev server, the control plane (etcd, kube-apiserver,
kube-controller-manager with the job controller, kube-scheduler, kwok and its nodes, with the
fake DRA driver's GPUs published on them when the run asks for devices), Caldera's
CRDs and queues, then Caldera's worker, forwarder and admission webhook with Caldera's gang
scheduler on; for the `caldera-server` side, the Temporal server on PostgreSQL too, which
Caldera's processes move onto for that side. Every process is recorded and stopped by its PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kubernetes import client

from bench.sidebyside.config import Options
from cli.devstack import (
    caldera_processes,
    controlplane,
    install,
    processes,
    temporal_dev,
    temporal_server,
)
from cli.devstack.controlplane import ControlPlane
from cli.devstack.devices import Gpus
from cli.devstack.nodes import NodeTemplate
from cli.devstack.processes import Process
from cli.devstack.temporal_dev import TemporalServer

TICKS: Final = os.sysconf("SC_CLK_TCK")


@dataclass
class Stack:
    workdir: Path
    db_dir: Path | None
    temporal: TemporalServer
    plane: ControlPlane
    caldera: list[Process] = field(default_factory=list)  # worker, forwarder, webhook
    extra: list[Process] = field(default_factory=list)  # e.g. Volcano's, while its side runs
    server: TemporalServer | None = None  # the Temporal server on PostgreSQL, once started

    @property
    def kubeconfig(self) -> str:
        return self.plane.kubeconfig

    def api(self) -> client.ApiClient:
        return controlplane.api_client(self.plane.kubeconfig)

    def processes(self) -> list[Process]:
        alt = self.server.processes if self.server is not None else []
        return [*self.plane.processes, *self.temporal.processes, *alt, *self.caldera, *self.extra]

    def logs(self) -> Path:
        return self.workdir / "logs"


def start(opts: Options) -> Stack:
    work = Path(tempfile.mkdtemp(prefix="caldera-sidebyside-"))
    db_dir = Path(tempfile.mkdtemp(dir=opts.temporal_db_dir)) if opts.temporal_db_dir else None
    db = db_dir / "temporal_dev.db" if db_dir else None
    server = temporal_dev.start(
        work / "temporal", processes.free_port(), processes.free_port(), db=db
    )
    template = NodeTemplate(
        count=opts.nodes,
        cpu=opts.node_cpu,
        memory=opts.node_memory,
        pods=opts.node_pods,
        gpus=Gpus(count=opts.gpus_per_node),  # 0: no ResourceSlices, as before
    )
    try:
        plane = controlplane.start(work / "cluster", template)
    except BaseException:
        temporal_dev.stop(server)
        raise
    stack = Stack(workdir=work, db_dir=db_dir, temporal=server, plane=plane)
    try:
        install.install(stack.api())
        if any(s != "builtin" for s in opts.sides):
            start_caldera(stack)
    except BaseException:
        stop(stack)
        raise
    return stack


def start_caldera(stack: Stack, on: TemporalServer | None = None) -> None:
    """Caldera's worker, forwarder and webhook, with Caldera's gang scheduler (no override),
    on the stack's dev server or on `on`."""
    if not stack.caldera:
        address = (on or stack.temporal).address
        stack.caldera = caldera_processes.start(
            stack.kubeconfig, address, stack.logs(), scheduler_override=None
        )


def on_server(stack: Stack) -> TemporalServer:
    """Caldera moved onto the Temporal server on PostgreSQL (started the first time)."""
    if stack.server is None:
        where = stack.workdir / "temporal-server"
        stack.server = temporal_server.start(where, processes.free_port(), processes.free_port())
    stop_caldera(stack)
    start_caldera(stack, stack.server)
    return stack.server


def on_dev(stack: Stack) -> None:
    """Caldera back on the stack's dev server."""
    stop_caldera(stack)
    start_caldera(stack)


def stop_caldera(stack: Stack) -> None:
    """Newest first; the webhook withdraws its registration as it stops."""
    for p in reversed(stack.caldera):
        processes.stop(p)
    stack.caldera = []


def stop(stack: Stack) -> None:
    """Every process this stack started, newest first, by PID; then its directories."""
    for p in reversed(stack.extra):
        processes.stop(p)
    stack.extra = []
    stop_caldera(stack)
    controlplane.stop(stack.plane)
    if stack.server is not None:
        temporal_dev.stop(stack.server)
        temporal_server.remove_data(stack.workdir / "temporal-server")
    temporal_dev.stop(stack.temporal)
    shutil.rmtree(stack.workdir, ignore_errors=True)
    if stack.db_dir is not None:
        shutil.rmtree(stack.db_dir, ignore_errors=True)


def _stat(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, its exited children's, and its live children's
    (PostgreSQL works in one child per connection); None: gone."""
    fields = _stat(pid)
    if fields is None:
        return None
    total = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (child := _stat(int(entry.name))) and child[1] == str(pid):
            total += int(child[11]) + int(child[12])
    return total / TICKS


def cpu_snapshot(stack: Stack) -> dict[str, float]:
    """CPU seconds so far of each running process of the stack, by name."""
    snap: dict[str, float] = {}
    for p in stack.processes():
        cpu = cpu_seconds(p.pid)
        if cpu is not None:
            snap[p.name] = snap.get(p.name, 0.0) + cpu
    return snap


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Seconds spent between two snapshots by the processes alive at both."""
    return {k: round(after[k] - before[k], 2) for k in after if k in before}


def log_offset(p: Process) -> int:
    try:
        return Path(p.log).stat().st_size
    except OSError:
        return 0


def log_since(p: Process, offset: int) -> str:
    try:
        with open(p.log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def profile(stack: Stack, out: Path) -> Process | None:
    """py-spy sampling the worker (collapsed stacks to `out`) until `end_profile`; None when
    py-spy is not installed or no worker runs."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    worker = next((p for p in stack.caldera if p.name == "worker"), None)
    if worker is None or not Path(spy).exists():
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    # Non-blocking: a paused worker (83 threads stopped 50 times a second) ran at half speed.
    argv = [spy, "record", "--nonblocking", "--format", "raw", "--rate", "50"]
    argv += ["-p", str(worker.pid), "-o", str(out)]
    return processes.start("py-spy", argv, stack.logs())


def end_profile(spy: Process) -> None:
    """SIGINT makes py-spy write what it sampled; then it is stopped like any process."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(spy.pid, signal.SIGINT)
    deadline = time.monotonic() + 20
    while processes.alive(spy.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    processes.stop(spy)
