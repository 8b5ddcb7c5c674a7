"""Worker clusters beside a dev stack's manager: `caldera dev up --clusters N` and the e2e tests.

Each worker cluster is a control plane of its own (`controlplane.start`, work dir
`<dir>/worker-<i>`, its own loopback ports and etcd) with Caldera's worker and forwarder
(no webhook) connected to the one Temporal server, in a Temporal namespace of its own
(`caldera-worker-<i>`, registered here with Caldera's search attributes): its workflows, its
`scheduler/volcano` and its queues' workflows never meet the manager's.

It is registered on the manager as Caldera registers any cluster (`models/dispatch.py`): a
Secret `cluster-worker-<i>` in `caldera-system` labelled `caldera.dev/cluster: worker-<i>`,
whose kubeconfig points at its loopback apiserver with its certificate authority inline and its
admin token. The manager gets the Queue `multi` whose `extendClusters` names every worker
cluster, and each worker the Queue `multi` too: a Job arrives there in the queue it names, and
a name the worker does not know would leave it waiting.

Every process is recorded (`WorkerCluster.processes`) and stopped by its PID.
`kill_apiserver` and `start_apiserver` take one cluster's kube-apiserver down (SIGKILL) and
bring it back on the same port with the same etcd, so its objects are still there: what the
failover tests do to a worker cluster.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes import client
from pydantic import BaseModel

from activities import kube
from cli.devstack import caldera_processes, controlplane, install, processes
from cli.devstack.controlplane import ControlPlane
from cli.devstack.nodes import NodeTemplate
from cli.devstack.processes import Process
from models import scheduling
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE, KUBECONFIG_KEY
from service import namespaces

PREFIX: Final = "worker"
QUEUE: Final = "multi"  # the queue a dev stack with worker clusters dispatches from
RETENTION: Final = timedelta(days=7)
APISERVER: Final = "kube-apiserver"
READY_TIMEOUT: Final = 120.0
MAX_CLUSTERS: Final = 8  # each is a control plane and two Python processes on this machine


class WorkerCluster(BaseModel):
    """One started worker cluster: its name, Temporal namespace and processes."""

    name: str
    temporal_namespace: str
    control_plane: ControlPlane
    controllers: list[Process] = []  # Caldera's worker and forwarder

    @property
    def processes(self) -> list[Process]:
        return [*self.control_plane.processes, *self.controllers]

    @property
    def kubeconfig(self) -> str:
        return self.control_plane.kubeconfig

    @property
    def server(self) -> str:
        return self.control_plane.server

    def apiserver(self) -> Process:
        return next(p for p in self.control_plane.processes if p.name == APISERVER)

    def healthy(self) -> bool:
        return all(processes.alive(p.pid) for p in self.processes)


def cluster_name(index: int, prefix: str = PREFIX) -> str:
    return f"{prefix}-{index}"


def temporal_namespace(name: str) -> str:
    return f"caldera-{name}"


def secret_name(name: str) -> str:
    return f"cluster-{name}"


# -- Kubernetes objects ------------------------------------------------------------------------


def secret_kubeconfig(kubeconfig_text: str, read: Callable[[str], bytes]) -> str:
    """The kubeconfig a registration Secret may hold: each `certificate-authority` file read
    (by `read`) and put inline, since the worker refuses paths (`models/kubeconfig.py`)."""
    doc: dict[str, Any] = yaml.safe_load(kubeconfig_text)
    for entry in doc.get("clusters") or []:
        cluster = entry.get("cluster") or {}
        path = cluster.pop("certificate-authority", None)
        if path:
            cluster["certificate-authority-data"] = base64.b64encode(read(path)).decode()
    return yaml.safe_dump(doc, sort_keys=False)


def secret_manifest(
    name: str, kubeconfig_text: str, namespace: str = DEFAULT_NAMESPACE
) -> dict[str, Any]:
    """The Secret that registers cluster `name` on a manager."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(name),
            "namespace": namespace,
            "labels": {CLUSTER_LABEL: name},
        },
        "type": "Opaque",
        "stringData": {KUBECONFIG_KEY: kubeconfig_text},
    }


def queue_manifest(name: str, clusters: Sequence[str] = ()) -> dict[str, Any]:
    """A Queue under root; with `clusters`, its extendClusters (weight 1 each)."""
    spec: dict[str, Any] = {"weight": 1}
    if clusters:
        spec["extendClusters"] = [{"name": c, "weight": 1} for c in clusters]
    doc = {
        "apiVersion": scheduling.API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    return scheduling.Queue.model_validate(doc).dump()


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    try:
        client.CoreV1Api(api).create_namespace(kube.body({"metadata": {"name": name}}))
    except client.ApiException as e:
        if e.status != 409:
            raise


def apply_secret(api: client.ApiClient, doc: dict[str, Any]) -> None:
    """Create the Secret, or replace the one there (a restarted cluster has a new token)."""
    meta = doc["metadata"]
    ensure_namespace(api, meta["namespace"])
    core = client.CoreV1Api(api)
    try:
        core.create_namespaced_secret(meta["namespace"], kube.body(doc))
    except client.ApiException as e:
        if e.status != 409:
            raise
        core.replace_namespaced_secret(meta["name"], meta["namespace"], kube.body(doc))


def register(
    manager: client.ApiClient, cluster: WorkerCluster, namespace: str = DEFAULT_NAMESPACE
) -> None:
    """Register `cluster` on the manager by its Secret."""
    text = secret_kubeconfig(Path(cluster.kubeconfig).read_text(), lambda p: Path(p).read_bytes())
    apply_secret(manager, secret_manifest(cluster.name, text, namespace))


def unregister(manager: client.ApiClient, name: str, namespace: str = DEFAULT_NAMESPACE) -> None:
    with contextlib.suppress(client.ApiException):
        client.CoreV1Api(manager).delete_namespaced_secret(secret_name(name), namespace)


def ensure_queue(api: client.ApiClient, name: str, clusters: Sequence[str] = ()) -> None:
    install.apply(api, queue_manifest(name, clusters))


# -- processes -----------------------------------------------------------------------------------


def start(
    index: int,
    base: Path,
    temporal_address: str,
    template: NodeTemplate,
    prefix: str = PREFIX,
    queue: str = QUEUE,
) -> WorkerCluster:
    """Worker cluster `<prefix>-<index>` under `base`: control plane, Caldera's API and
    `queue`, worker and forwarder in its Temporal namespace; everything it started is stopped
    if a step fails."""
    name = cluster_name(index, prefix)
    namespace = temporal_namespace(name)
    asyncio.run(namespaces.register_namespace(temporal_address, namespace, RETENTION))
    workdir = base / name
    plane = controlplane.start(workdir, template)
    cluster = WorkerCluster(name=name, temporal_namespace=namespace, control_plane=plane)
    try:
        api = controlplane.api_client(plane.kubeconfig)
        install.install(api)
        ensure_queue(api, queue)
        logs = workdir / "logs"
        worker = caldera_processes.start_worker(
            plane.kubeconfig, temporal_address, logs, None, temporal_namespace=namespace
        )
        cluster.controllers.append(worker)
        forwarder = caldera_processes.start_forwarder(
            plane.kubeconfig, temporal_address, logs, None, temporal_namespace=namespace
        )
        cluster.controllers.append(forwarder)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def start_all(
    count: int,
    base: Path,
    temporal_address: str,
    template: NodeTemplate,
    started: Callable[[list[WorkerCluster]], None] = lambda _: None,
    prefix: str = PREFIX,
    queue: str = QUEUE,
) -> list[WorkerCluster]:
    """`count` worker clusters, one after the other; `started` hears the list after each (to
    record it), and all are stopped if one fails."""
    clusters: list[WorkerCluster] = []
    try:
        for index in range(count):
            clusters.append(start(index, base, temporal_address, template, prefix, queue))
            started(list(clusters))
    except BaseException:
        for c in reversed(clusters):
            stop(c)
        raise
    return clusters


def stop(cluster: WorkerCluster) -> None:
    """Every process of the cluster, newest first, by PID."""
    for p in reversed(cluster.processes):
        processes.stop(p)


def register_all(
    manager: client.ApiClient, clusters: Sequence[WorkerCluster], queue: str = QUEUE
) -> None:
    """Each cluster's Secret on the manager, and the manager's queue dispatching to them all."""
    for c in clusters:
        register(manager, c)
    ensure_queue(manager, queue, [c.name for c in clusters])


def kill_apiserver(cluster: WorkerCluster) -> None:
    """SIGKILL the cluster's kube-apiserver (a crash: nothing flushed, etcd left as it is)."""
    p = cluster.apiserver()
    with contextlib.suppress(ProcessLookupError):
        os.kill(p.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(p.pid, 0)


def start_apiserver(cluster: WorkerCluster, timeout: float = READY_TIMEOUT) -> WorkerCluster:
    """The cluster with its kube-apiserver started again (same command line: same port, same
    etcd, same token), ready when this returns; a running one is killed first."""
    old = cluster.apiserver()
    if processes.alive(old.pid):
        kill_apiserver(cluster)
    again = processes.start(old.name, old.argv, Path(old.log).parent, old.env)
    try:
        processes.wait_until(
            again,
            lambda: processes.http_ok(f"{cluster.server}/readyz", insecure=True),
            timeout,
            "ready",
        )
    except BaseException:
        processes.stop(again)  # recorded nowhere else: stopped here, by its PID
        raise
    renewed = [again if p.pid == old.pid else p for p in cluster.control_plane.processes]
    plane = cluster.control_plane.model_copy(update={"processes": renewed})
    return cluster.model_copy(update={"control_plane": plane})
