"""End-to-end fixtures: one real control plane and Temporal dev server per test session.

The session starts its own stack on free ports in a temporary directory, with its own worker
and forwarder, and stops exactly those processes at the end. CALDERA_E2E_REUSE=1 runs the
tests against a healthy `caldera dev up` stack instead (and its worker and forwarder).
Each test gets a fresh namespace.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from kubernetes import client

from cli.devstack import caldera_processes as caldera
from cli.devstack import controlplane, install, processes, stack, temporal_dev, temporal_server
from cli.devstack.devices import Gpus
from cli.devstack.nodes import NodeTemplate
from scheduling.framework import conf
from service import namespaces, stalls

if TYPE_CHECKING:
    from tests.e2e.forwarding import Forwarder, Recorder

T = TypeVar("T")
# Each node publishes 4 fake GPUs (the `gpu.caldera.dev` DRA driver, cli/devstack/devices.py),
# as `caldera dev up` does by default.
# A worker's event loop late this long is a failure of the module that ran it: every long poll,
# heartbeat and workflow task of the process waited as long (`service/stalls.py` logs each).
BLOCKED_LOOP_SECONDS = 1.0
NODES = NodeTemplate(count=3, cpu="8", memory="32Gi", pods=110, gpus=Gpus(count=4))


@dataclass(frozen=True)
class E2EStack:
    kubeconfig: str
    temporal_address: str
    workdir: Path | None  # None: a reused `caldera dev up` stack, not ours to stop


def _reusable() -> stack.DevStack | None:
    if os.environ.get("CALDERA_E2E_REUSE") != "1":
        return None
    current = stack.load()
    return current if current is not None and current.healthy() else None


@pytest.fixture(scope="session")
def e2e_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2EStack]:
    dev = _reusable()
    if dev is not None:
        api = controlplane.api_client(dev.control_plane.kubeconfig)
        install.install(api)
        controlplane.ensure_nodes(api, NODES, timeout=60)
        yield E2EStack(dev.control_plane.kubeconfig, dev.temporal.address, None)
        return
    workdir = tmp_path_factory.mktemp("caldera-stack")
    # CALDERA_E2E_TEMPORAL=server: the Temporal server on PostgreSQL instead of the dev server.
    profile = os.environ.get("CALDERA_E2E_TEMPORAL", "dev")
    server = stack.start_temporal(
        profile, workdir / "temporal", processes.free_port(), processes.free_port()
    )
    plane = None
    try:
        plane = controlplane.start(workdir / "cluster", NODES)
        install.install(controlplane.api_client(plane.kubeconfig))
        yield E2EStack(plane.kubeconfig, server.address, workdir)
    finally:
        if plane is not None:
            controlplane.stop(plane)
        temporal_dev.stop(server)
        if profile == "server":
            temporal_server.remove_data(workdir / "temporal")


@pytest.fixture(scope="module")
def controllers(
    e2e_stack: E2EStack, request: pytest.FixtureRequest
) -> Iterator[list[processes.Process]]:
    """Caldera's worker, forwarder and webhook on the session's stack, for the modules that ask:
    the others create Volcano objects no controller should touch. Pods go to kube-scheduler
    unless the module sets `SCHEDULER_OVERRIDE = None` (then Caldera's gang scheduler runs)."""
    if e2e_stack.workdir is None:
        yield []  # a reused dev stack runs its own
        return
    override = getattr(request.module, "SCHEDULER_OVERRIDE", caldera.DEFAULT_SCHEDULER_OVERRIDE)
    started = caldera.start(
        e2e_stack.kubeconfig,
        e2e_stack.temporal_address,
        e2e_stack.workdir / "logs",
        scheduler_override=override,
    )
    first = list(started)  # their logs from this module's start: restarts append to them
    try:
        yield started  # a test may replace a process in this list; all of it is stopped
    finally:
        for p in reversed(started):
            processes.stop(p)
    blocked = [
        f"{Path(p.log).name}: {line}"
        for p in first
        for line in stalls.logged_stalls(processes.log_text(p), BLOCKED_LOOP_SECONDS)
    ]
    if blocked:
        pytest.fail(
            f"a worker's event loop was blocked over {BLOCKED_LOOP_SECONDS:g} s:\n"
            + "\n".join(blocked),
            pytrace=False,
        )


def crash_worker(controllers: list[processes.Process], down_for: float = 0.0) -> processes.Process:
    """SIGKILL the stack's worker (a crash: nothing flushed) and, `down_for` seconds later,
    start it again as `caldera.start` did (same command line and environment, log appended).
    Ready when this returns, and in `controllers` in place of the killed one, so the module's
    teardown stops it and later modules find the stack whole."""
    worker = next(p for p in controllers if p.name == "worker")
    again = processes.restart(worker, down_for=down_for)
    controllers[controllers.index(worker)] = again
    processes.wait_until(again, lambda: "worker started" in processes.log_text(again), 60, "ready")
    return again


@pytest.fixture
def scheduler_conf(e2e_stack: E2EStack) -> Iterator[Path]:
    """The stack's volcano-scheduler.conf for a test to rewrite (the next session reads it);
    Caldera's defaults again afterwards."""
    if e2e_stack.workdir is None:
        pytest.skip("a reused dev stack: its configuration file is the user's, left alone")
    path = caldera.scheduler_conf_path(e2e_stack.workdir / "logs")
    try:
        yield path
    finally:
        path.write_text(conf.CALDERA_DEFAULT)


@pytest.fixture(scope="session")
def api(e2e_stack: E2EStack) -> client.ApiClient:
    return controlplane.api_client(e2e_stack.kubeconfig)


@pytest.fixture
def namespace(api: client.ApiClient) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})  # type: ignore[arg-type]
    yield name
    core.delete_namespace(name)


@pytest.fixture
def queue(api: client.ApiClient) -> Iterator[str]:
    """A Volcano Queue of the test's own (weight 1), once Open; deleted afterwards."""
    from tests.e2e import volcano  # it imports this module

    custom = client.CustomObjectsApi(api)
    name = f"q-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "/".join(volcano.QUEUES[:2]), "kind": "Queue", "metadata": {"name": name}}
    custom.create_cluster_custom_object(*volcano.QUEUES, {**body, "spec": {"weight": 1}})
    volcano.state_becomes(api, name, "Open", timeout=30)
    yield name
    custom.delete_cluster_custom_object(*volcano.QUEUES, name)


def eventually(probe: Callable[[], T | None], timeout: float = 30, what: str = "") -> T:
    """Poll until probe returns something truthy; fail with `what` otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout:.0f}s: {what}")


async def register_namespace(address: str, name: str) -> None:
    """A Temporal namespace of a module's own, kept a day, with Caldera's search attributes
    (the dev server registers them in `default` only; a job's start sets them)."""
    await namespaces.register_namespace(address, name, timedelta(days=1))


# The forwarder modules' fixtures (`test_forwarder`, `test_forwarder_queues`).
# `tests.e2e.forwarding` imports this module, so they import it inside. A module that runs
# forwarders marks itself `pytestmark = pytest.mark.usefixtures("default_forwarder_paused")`.


@pytest.fixture(scope="module")
def recorder(e2e_stack: E2EStack) -> Iterator[Recorder]:
    """The recording stand-ins' worker, in a Temporal namespace of the module's own."""
    from tests.e2e import forwarding

    r = forwarding.Recorder(e2e_stack.temporal_address)
    r.start()
    try:
        yield r
    finally:
        r.stop()


@pytest.fixture(scope="module")
def default_forwarder_paused(api: client.ApiClient) -> Iterator[None]:
    """Take over the default forwarder Lease for the module (see `default_lease_taken`)."""
    from tests.e2e import forwarding

    with forwarding.default_lease_taken(api):
        yield


@pytest.fixture
def forwarder(
    e2e_stack: E2EStack, recorder: Recorder, namespace: str, tmp_path: Path
) -> Iterator[Forwarder]:
    """One `caldera forwarder` on a Lease of the test's own."""
    from tests.e2e import forwarding

    with forwarding.forwarders(e2e_stack, recorder, namespace, tmp_path) as [one]:
        yield one
