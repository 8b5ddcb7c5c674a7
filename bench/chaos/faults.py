"""The faults the soak injects, each one a function of the stack that returns once the fault
is over (the process restarted, the server answering again), and what was injected when."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

from kubernetes import client
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from bench.chaos import stack as chaos_stack
from bench.chaos.audit import Audit
from bench.chaos.workload import kind_of
from cli.devstack import controlplane, processes, temporal_server
from cli.devstack.processes import Process

LEASE = ("default", "caldera-forwarder")  # the forwarder's defaults
SERVER_DOWN_FOR = 10.0  # seconds the Temporal server stays stopped
POSTGRES_DOWN_FOR = 5.0  # seconds PostgreSQL stays dead
ANSWER_TIMEOUT = 180.0  # for a restarted server to answer again
STOP_GRACE = 60.0  # for a SIGTERMed Temporal server to exit before it is SIGKILLed


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


class ServerExited(RuntimeError):
    """The Temporal server process ended while the soak waited for it to answer."""


def _temporal_answers(stack: chaos_stack.Stack, timeout: float = ANSWER_TIMEOUT) -> None:
    """Until the frontend describes the `default` namespace (which reads the store); fails at
    once if the server process has exited."""
    server, address = stack.temporal.process, stack.temporal.address

    async def probe() -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                c = await Client.connect(address)
                await c.workflow_service.describe_namespace(
                    DescribeNamespaceRequest(namespace=temporal_server.NAMESPACE)
                )
                return
            except Exception as e:
                if not processes.alive(server.pid):
                    raise ServerExited(processes.log_tail(server, 1)[:200]) from e
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Temporal at {address} not answering: {e}") from e
                await asyncio.sleep(1.0)

    asyncio.run(probe())


def stop_temporal_server(
    stack: chaos_stack.Stack, kill: bool, down_for: float = SERVER_DOWN_FOR
) -> str:
    """The Temporal server (profile `server`) SIGTERMed (a stop: it may take up to a minute,
    then it is SIGKILLed) or SIGKILLed (a crash), `down_for` seconds down, started again on the
    same PostgreSQL databases; over once it answers."""
    old = stack.temporal.process
    began = time.monotonic()
    if kill:
        chaos_stack.kill_all([old.pid])
        how = "SIGKILLed"
    else:
        processes.stop(old, grace=STOP_GRACE)
        took = time.monotonic() - began
        how = (
            f"SIGTERMed (exited in {took:.1f} s)"
            if took < STOP_GRACE
            else f"SIGTERMed, still up after {STOP_GRACE:.0f} s, SIGKILLed"
        )
    new = _server_again(stack, down_for)
    return (
        f"Temporal server pid {old.pid} {how}, {down_for:.0f} s down, pid {new.pid} answering"
        f" {time.monotonic() - began:.1f} s after the signal"
    )


def _server_again(stack: chaos_stack.Stack, down_for: float = 0.0) -> Process:
    """The Temporal server, which has exited, started again on the same configuration (so the
    same ports and databases) after `down_for` seconds; returns once it answers."""
    old = stack.temporal.process
    new = processes.restart(old, kill=False, down_for=down_for)  # `old` has exited already
    stack.replace(old, new)
    port = int(stack.temporal.address.rsplit(":", 1)[1])
    processes.wait_until(new, lambda: not processes.port_free(port), 120, "listening")
    _temporal_answers(stack)
    return new


def _pg_port(postmaster: Process) -> int:
    return int(postmaster.argv[postmaster.argv.index("-p") + 1])


def _pg_accepting(port: int) -> bool:
    """pg_isready: the server accepts connections (crash recovery over), not just listening."""
    tool = shutil.which("pg_isready")
    if tool is None:
        return not processes.port_free(port)
    argv = [tool, "-q", "-h", "127.0.0.1", "-p", str(port), "-U", temporal_server.USER]
    return subprocess.run([*argv, "-t", "2"], check=False).returncode == 0


def kill_postgres(stack: chaos_stack.Stack, down_for: float = POSTGRES_DOWN_FOR) -> str:
    """Every PostgreSQL process SIGKILLed at once, as a crashed machine or container would
    lose them (the postmaster stopped first, so none forks between the listing and the
    kill), then started again on the same data directory after `down_for` seconds: WAL
    replay brings back what was committed. Over once it accepts connections and the Temporal
    server (which stays up, its connections broken) answers through it again."""
    old = stack.postgres()
    began = time.monotonic()
    os.kill(old.pid, signal.SIGSTOP)
    family = [old.pid, *chaos_stack.children(old.pid)]
    left = chaos_stack.kill_all(family)
    if left:
        raise RuntimeError(f"PostgreSQL processes {left} outlived SIGKILL")
    new = processes.restart(old, kill=False, down_for=down_for)  # `old` has exited already
    stack.replace(old, new)
    port = _pg_port(new)
    processes.wait_until(new, lambda: _pg_accepting(port), 120, "accepting connections")
    accepting = time.monotonic() - began
    exited = ""
    try:
        _temporal_answers(stack)
    except ServerExited as e:
        # Not the fault asked for, but what a supervisor (systemd, a kubelet) would do next;
        # the report says so rather than the soak going on without a server.
        again = _server_again(stack)
        exited = f"; the Temporal server exited ({e}), started again as pid {again.pid}"
    return (
        f"PostgreSQL pid {old.pid} and its {len(family) - 1} processes SIGKILLed,"
        f" {down_for:.0f} s down; pid {new.pid} accepting {accepting:.1f} s after the kill,"
        f" Temporal answering after {time.monotonic() - began:.1f} s{exited}"
    )


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
