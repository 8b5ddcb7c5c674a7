"""The soak's own stack (never a shared one: it restarts the Temporal server and the
apiserver): the dev server, the control plane with kwok nodes, Caldera's CRDs and queues,
one or two workers, two forwarders (one leading, one standing by) and the webhook."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client

from cli.devstack import caldera_processes, controlplane, install, processes, temporal_dev
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

    @property
    def kubeconfig(self) -> str:
        return self.plane.kubeconfig

    def logs(self) -> Path:
        return self.workdir / "logs"

    def api(self) -> client.ApiClient:
        return controlplane.api_client(self.kubeconfig)

    def apiserver(self) -> Process:
        return next(p for p in self.plane.processes if p.name == "kube-apiserver")

    def replace(self, old: Process, new: Process) -> None:
        """`new` runs where `old` ran (same role), so stopping the stack stops it."""
        for group in (self.workers, self.forwarders, self.plane.processes):
            if old in group:
                group[group.index(old)] = new
        if self.temporal.process == old:
            self.temporal = self.temporal.model_copy(update={"process": new})


def start(nodes: int, workers: int) -> Stack:
    work = Path(tempfile.mkdtemp(prefix="caldera-chaos-"))
    server = temporal_dev.start(work / "temporal", processes.free_port(), processes.free_port())
    template = NodeTemplate(count=nodes, cpu="32", memory="256Gi", pods=110)
    try:
        plane = controlplane.start(work / "cluster", template)
    except BaseException:
        processes.stop(server.process)
        raise
    stack = Stack(workdir=work, temporal=server, plane=plane, nodes=template)
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
    processes.stop(stack.temporal.process)
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        for log in stack.workdir.rglob("*.log"):
            shutil.copy(log, keep_logs / log.name)
    shutil.rmtree(stack.workdir, ignore_errors=True)
