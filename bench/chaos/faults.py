"""The faults the soak injects, each one a function of the stack that returns once the fault
is over (the process restarted, the server answering again), and what was injected when."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from kubernetes import client

from bench.chaos import stack as chaos_stack
from bench.chaos.audit import Audit
from bench.chaos.workload import kind_of
from cli.devstack import controlplane, processes
from cli.devstack.processes import Process

LEASE = ("default", "caldera-forwarder")  # the forwarder's defaults


@dataclass
class Fault:
    kind: str
    at: float  # epoch seconds the fault began
    over: float  # epoch seconds it was over (restarted, answering again)
    detail: str
    canary: str = ""  # the job submitted right after it


def _logged_since(p: Process, line: str, timeout: float) -> None:
    processes.wait_until(p, lambda: line in processes.log_text(p), timeout, "ready")


def kill_worker(stack: chaos_stack.Stack, turn: int) -> str:
    """SIGKILL one worker (in turn when two run) and start it again."""
    old = stack.workers[turn % len(stack.workers)]
    new = processes.restart(old, kill=True)
    stack.replace(old, new)
    _logged_since(new, "worker started", 90)
    return f"worker pid {old.pid} -> {new.pid}"


def _leader(stack: chaos_stack.Stack) -> Process:
    api = stack.api()
    lease = client.CoordinationV1Api(api).read_namespaced_lease(LEASE[1], LEASE[0])
    holder = (lease.spec.holder_identity if lease.spec else None) or ""
    for p in stack.forwarders:
        if holder.endswith(f"-{p.pid}"):
            return p
    return stack.forwarders[0]


def kill_forwarder(stack: chaos_stack.Stack) -> str:
    """SIGKILL the leading forwarder: the standby takes the lease; the killed one comes back
    standing by."""
    old = _leader(stack)
    new = processes.restart(old, kill=True)
    stack.replace(old, new)
    _logged_since(new, "standing by", 90)
    return f"leader pid {old.pid} killed, back as standby pid {new.pid}"


def restart_temporal(stack: chaos_stack.Stack, down_for: float = 10.0) -> str:
    old = stack.temporal.process
    new = processes.restart(old, kill=False, down_for=down_for)
    stack.replace(old, new)
    port = int(stack.temporal.address.rsplit(":", 1)[1])
    processes.wait_until(new, lambda: not processes.port_free(port), 60, "listening")
    return f"dev server stopped for {down_for:.0f} s"


def restart_apiserver(stack: chaos_stack.Stack) -> str:
    old = stack.apiserver()
    new = processes.restart(old, kill=True)
    stack.replace(old, new)
    url = f"{stack.plane.server}/readyz"
    processes.wait_until(new, lambda: processes.http_ok(url, insecure=True), 90, "ready")
    return "kube-apiserver SIGKILLed and started again"


def remove_node(stack: chaos_stack.Stack, name: str) -> str:
    client.CoreV1Api(stack.api()).delete_node(name)
    return f"node {name} deleted"


def restore_nodes(stack: chaos_stack.Stack) -> str:
    controlplane.ensure_nodes(stack.api(), stack.nodes, timeout=60)
    return "nodes created again"


def evict_one(stack: chaos_stack.Stack, audit: Audit, rng: random.Random) -> str:
    """Delete one Running pod of a job that may lose pods (as an eviction would)."""
    running = [
        p for p in audit.live() if p.phase == "Running" and p.job and kind_of(p.job).evictable
    ]
    if not running:
        return ""
    pod = rng.choice(sorted(running, key=lambda p: p.name))
    try:
        client.CoreV1Api(stack.api()).delete_namespaced_pod(pod.name, audit.namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
        return ""
    return pod.name


def now() -> float:
    return time.time()
