"""The smoke set on containers, for machines with a Docker engine: K3s (a real kubelet and
containerd) and the Temporal CLI's dev server, each started by testcontainers, with Caldera's
worker and forwarder run here against them. Without a reachable engine every test here skips
with one line saying so; the same behaviours are covered by `tests/e2e` on the local stack.

The admission webhook is not started: K3s's apiserver runs in its container and cannot call
back to this machine's loopback. Caldera's admission policies (in-apiserver CEL) are installed.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import caldera_processes as caldera
from cli.devstack import controlplane, install, processes, temporal_dev

TEMPORAL_IMAGE = "temporalio/temporal:latest"
K3S_IMAGE = "rancher/k3s:v1.33.4-k3s1"
TEMPORAL_PORT = 7233


@dataclass(frozen=True)
class ContainerStack:
    kubeconfig: str
    temporal_address: str
    log_dir: Path


def _engine() -> str | None:
    """Why no container can run here; None: a Docker engine answers."""
    try:
        import docker
    except ImportError:
        return "the docker package is not installed"
    try:
        docker.from_env().ping()
    except Exception as e:  # any failure to reach the engine means: skip
        return f"no Docker engine reachable ({type(e).__name__})"
    return None


def _listening(host: str, port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"{host}:{port} not listening within {timeout:.0f}s")


@pytest.fixture(scope="session")
def container_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainerStack]:
    why = _engine()
    if why is not None:
        pytest.skip(f"containers: {why}; tests/e2e covers these on the local stack")
    from testcontainers.community.k3s import K3SContainer
    from testcontainers.core.container import DockerContainer

    workdir = tmp_path_factory.mktemp("caldera-containers")
    server: Any = (
        DockerContainer(TEMPORAL_IMAGE)
        .with_command(
            ["server", "start-dev", "--ip", "0.0.0.0", *temporal_dev.search_attribute_flags()]
        )
        .with_exposed_ports(TEMPORAL_PORT)
    )
    cluster: Any = K3SContainer(K3S_IMAGE)
    started: list[Any] = []
    procs: list[processes.Process] = []
    try:
        for container in (server, cluster):
            container.start()
            started.append(container)
        host, port = server.get_container_host_ip(), server.get_exposed_port(TEMPORAL_PORT)
        _listening(host, int(port))
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(cluster.config_yaml())
        install.install(controlplane.api_client(str(kubeconfig)))
        stack = ContainerStack(str(kubeconfig), f"{host}:{port}", workdir / "logs")
        # Caldera's gang scheduler places the pods; kube-scheduler in K3s leaves them alone.
        procs.append(
            caldera.start_worker(stack.kubeconfig, stack.temporal_address, stack.log_dir, None)
        )
        procs.append(
            caldera.start_forwarder(stack.kubeconfig, stack.temporal_address, stack.log_dir, None)
        )
        yield stack
    finally:
        for p in reversed(procs):
            processes.stop(p)
        for container in reversed(started):
            container.stop()


@pytest.fixture
def api(container_stack: ContainerStack) -> client.ApiClient:
    return controlplane.api_client(container_stack.kubeconfig)
