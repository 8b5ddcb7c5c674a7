"""The soak's own stack (never a shared one: it restarts the Temporal server and the
apiserver): the Temporal dev server (profile `dev`) or PostgreSQL, the Temporal server and its
UI (profile `server`, started by `caldera dev up --temporal server`'s own code in
`cli/devstack/temporal_server.py`, its data in a directory of its own and every port a free
one, so a running dev stack is never touched), the control plane with kwok nodes, Caldera's
CRDs and queues, one or two workers, two forwarders (one leading, one standing by) and the
webhook."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client

from bench.chaos.schedule import Profile
from cli.devstack import (
    caldera_processes,
    controlplane,
    install,
    processes,
    temporal_dev,
    temporal_server,
)
from cli.devstack.controlplane import ControlPlane
from cli.devstack.nodes import NodeTemplate
from cli.devstack.processes import Process
from cli.devstack.temporal_dev import TemporalServer


@dataclass
class Stack:
    workdir: Path
    temporal: TemporalServer
    plane: ControlPlane
    nodes: NodeTemplate
    workers: list[Process] = field(default_factory=list)
    forwarders: list[Process] = field(default_factory=list)
    webhook: Process | None = None
    profile: Profile = "dev"

    @property
    def kubeconfig(self) -> str:
        return self.plane.kubeconfig

    def logs(self) -> Path:
        return self.workdir / "logs"

    def api(self) -> client.ApiClient:
        return controlplane.api_client(self.kubeconfig)

    def apiserver(self) -> Process:
        return next(p for p in self.plane.processes if p.name == "kube-apiserver")

    def postgres(self) -> Process:
        """The server profile's PostgreSQL (its postmaster)."""
        return next(p for p in self.temporal.extra if p.name == "postgres")

    def replace(self, old: Process, new: Process) -> None:
        """`new` runs where `old` ran (same role), so stopping the stack stops it."""
        for group in (self.workers, self.forwarders, self.plane.processes):
            if old in group:
                group[group.index(old)] = new
        if self.temporal.process == old:
            self.temporal = self.temporal.model_copy(update={"process": new})
        if old in self.temporal.extra:
            extra = [new if p == old else p for p in self.temporal.extra]
            self.temporal = self.temporal.model_copy(update={"extra": extra})


def children(pid: int) -> list[int]:
    """The PIDs whose parent is `pid` (PostgreSQL's backends and helpers of its postmaster)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(stat.parent.name))
    return found


def kill_all(pids: list[int], timeout: float = 30.0) -> list[int]:
    """SIGKILL each PID and wait until none is alive; returns those still alive after
    `timeout`."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [pid for pid in pids if processes.alive(pid)]
        if not left:
            return []
        time.sleep(0.1)
    return [pid for pid in pids if processes.alive(pid)]


def _stop_postgres(postmaster: Process) -> None:
    """A smart shutdown (SIGTERM; the Temporal server is stopped already, so no client
    holds it up), then SIGKILL, by PID, to whatever of its processes outlived it."""
    family = children(postmaster.pid)
    processes.stop(postmaster, grace=30)
    kill_all([pid for pid in family if processes.alive(pid)])


def _start_temporal(work: Path, profile: Profile) -> TemporalServer:
    where = work / "temporal"
    port, ui_port = processes.free_port(), processes.free_port()
    if profile == "dev":
        return temporal_dev.start(where, port, ui_port)
    try:
        return temporal_server.start(where, port, ui_port)
    except BaseException:
        temporal_server.remove_data(where)
        raise


def _stop_temporal(work: Path, server: TemporalServer, profile: Profile) -> None:
    """The UI, the server, then its database; the server profile's data removed."""
    for p in reversed(server.processes):
        if p.name == "postgres" and profile == "server":
            _stop_postgres(p)
        else:
            processes.stop(p)
    if profile == "server":
        temporal_server.remove_data(work / "temporal")


def start(nodes: int, workers: int, profile: Profile = "dev") -> Stack:
    work = Path(tempfile.mkdtemp(prefix="caldera-chaos-"))
    try:
        server = _start_temporal(work, profile)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    template = NodeTemplate(count=nodes, cpu="32", memory="256Gi", pods=110)
    try:
        plane = controlplane.start(work / "cluster", template)
    except BaseException:
        _stop_temporal(work, server, profile)
        shutil.rmtree(work, ignore_errors=True)
        raise
    stack = Stack(workdir=work, temporal=server, plane=plane, nodes=template, profile=profile)
    try:
        install.install(stack.api())
        worker, forwarder, hook = caldera_processes.start(
            stack.kubeconfig, server.address, stack.logs(), scheduler_override=None
        )
        stack.workers, stack.forwarders, stack.webhook = [worker], [forwarder], hook
        for _ in range(workers - 1):
            stack.workers.append(start_worker(stack))
        stack.forwarders.append(start_forwarder(stack, leading=False))
    except BaseException:
        stop(stack)
        raise
    return stack


def start_worker(stack: Stack) -> Process:
    return caldera_processes.start_worker(
        stack.kubeconfig, stack.temporal.address, stack.logs(), None
    )


def start_forwarder(stack: Stack, leading: bool) -> Process:
    return caldera_processes.start_forwarder(
        stack.kubeconfig, stack.temporal.address, stack.logs(), None, leading=leading
    )


def stop(stack: Stack, keep_logs: Path | None = None) -> None:
    """Every process, newest first, by PID; the logs copied to `keep_logs` first."""
    for p in [*reversed(stack.workers), *reversed(stack.forwarders)]:
        processes.stop(p)
    if stack.webhook is not None:
        processes.stop(stack.webhook)
    controlplane.stop(stack.plane)
    _stop_temporal(stack.workdir, stack.temporal, stack.profile)
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        for log in stack.workdir.rglob("*.log"):
            shutil.copy(log, keep_logs / log.name)
    shutil.rmtree(stack.workdir, ignore_errors=True)
