"""Worker clusters beside the session's e2e stack, for the multi-cluster tests.

A module that needs them imports the fixture (`from tests.e2e.multicluster import
worker_clusters  # noqa: F401`) and asks for `worker_clusters`: two worker clusters, each a
control plane of its own with Caldera's worker and forwarder in a Temporal namespace of its
own, registered on the session's cluster (the manager) by their Secrets, and a queue that
dispatches to both (`WorkerClusters.queue`, on the manager with extendClusters and on each
worker). Names carry a token of the module's own, so no two modules share a Temporal
namespace or a Secret. Everything started is stopped by its PID at the end of the module, and
the Secrets and the manager's queue are removed.

`kill_apiserver` / `restart_apiserver` take one worker's kube-apiserver down by SIGKILL and
bring it back on the same port with the same etcd, so its objects survive.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import pytest
from kubernetes import client

from cli.devstack import clusters as dev_clusters
from cli.devstack import controlplane
from cli.devstack.clusters import WorkerCluster
from cli.devstack.nodes import NodeTemplate
from models import scheduling
from tests.e2e.conftest import E2EStack

COUNT: Final = 2
# Small: two nodes each, so the machine carries three control planes.
TEMPLATE: Final = NodeTemplate(count=2, cpu="8", memory="32Gi", pods=110)


@dataclass
class WorkerClusters:
    """The module's worker clusters, as registered on the manager."""

    manager: client.ApiClient
    temporal_address: str
    queue: str  # on the manager (extendClusters: every cluster) and on each worker
    clusters: list[WorkerCluster]
    _apis: dict[str, client.ApiClient] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.clusters]

    def get(self, name: str) -> WorkerCluster:
        return next(c for c in self.clusters if c.name == name)

    def api(self, name: str) -> client.ApiClient:
        """A client of the worker cluster itself (its admin kubeconfig)."""
        if name not in self._apis:
            self._apis[name] = controlplane.api_client(self.get(name).kubeconfig)
        return self._apis[name]

    def temporal_namespace(self, name: str) -> str:
        return self.get(name).temporal_namespace

    def kill_apiserver(self, name: str) -> None:
        """SIGKILL the worker's kube-apiserver; its etcd and other processes keep running."""
        dev_clusters.kill_apiserver(self.get(name))

    def restart_apiserver(self, name: str) -> WorkerCluster:
        """The worker's kube-apiserver again, same port, same etcd; ready when this returns."""
        index = self.names.index(name)
        self.clusters[index] = dev_clusters.start_apiserver(self.clusters[index])
        return self.clusters[index]


@pytest.fixture(scope="module")
def worker_clusters(
    e2e_stack: E2EStack, api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerClusters]:
    token = uuid.uuid4().hex[:4]
    prefix, queue = f"w{token}", f"multi-{token}"
    base = tmp_path_factory.mktemp("worker-clusters")
    started = dev_clusters.start_all(
        COUNT, base, e2e_stack.temporal_address, TEMPLATE, prefix=prefix, queue=queue
    )
    group = WorkerClusters(api, e2e_stack.temporal_address, queue, started)
    try:
        dev_clusters.register_all(api, started, queue)
        yield group
    finally:
        for name in group.names:
            dev_clusters.unregister(api, name)
        with contextlib.suppress(client.ApiException):
            client.CustomObjectsApi(api).delete_cluster_custom_object(
                scheduling.GROUP, scheduling.VERSION, "queues", queue
            )
        for c in reversed(group.clusters):
            dev_clusters.stop(c)
