"""The dev stack's worker clusters: what is registered on the manager (a Secret the worker
accepts, the dispatching queue), and how the state file records them so `down` stops all."""

from __future__ import annotations

import base64

import pytest
import yaml

from activities.dispatch import cluster_secrets
from cli.devstack import clusters, stack
from cli.devstack.controlplane import ControlPlane
from cli.devstack.processes import Process
from cli.devstack.temporal_dev import TemporalServer
from cli.main import parser
from models import kubeconfig, scheduling
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE

pytestmark = pytest.mark.unit

PLANE_KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: caldera
  cluster: {server: "https://127.0.0.1:40001", certificate-authority: /w/pki/apiserver.crt}
users:
- name: admin
  user: {token: abc}
contexts:
- name: caldera
  context: {cluster: caldera, user: admin}
current-context: caldera
"""


def test_names() -> None:
    name = clusters.cluster_name(1)
    assert (name, clusters.temporal_namespace(name), clusters.secret_name(name)) == (
        "worker-1",
        "caldera-worker-1",
        "cluster-worker-1",
    )


def test_the_secret_carries_the_certificate_inline_and_the_worker_accepts_it() -> None:
    read: list[str] = []

    def file(path: str) -> bytes:
        read.append(path)
        return b"PEM"

    text = clusters.secret_kubeconfig(PLANE_KUBECONFIG, file)
    assert read == ["/w/pki/apiserver.crt"]
    cluster = yaml.safe_load(text)["clusters"][0]["cluster"]
    assert cluster == {
        "server": "https://127.0.0.1:40001",
        "certificate-authority-data": base64.b64encode(b"PEM").decode(),
    }
    assert kubeconfig.parse(text).server == "https://127.0.0.1:40001"
    with pytest.raises(kubeconfig.KubeconfigError):
        kubeconfig.parse(PLANE_KUBECONFIG)  # the path itself would be refused

    doc = clusters.secret_manifest("worker-0", text)
    assert doc["metadata"] == {
        "name": "cluster-worker-0",
        "namespace": DEFAULT_NAMESPACE,
        "labels": {CLUSTER_LABEL: "worker-0"},
    }
    listed = {**doc, "data": {"kubeconfig": base64.b64encode(text.encode()).decode()}}
    registration = cluster_secrets.registration(listed)
    assert (registration.cluster, registration.kubeconfig) == ("worker-0", text.encode())


def test_the_managers_queue_names_every_worker_cluster() -> None:
    doc = clusters.queue_manifest("multi", ["worker-0", "worker-1"])
    queue = scheduling.Queue.model_validate(doc)
    assert queue.spec is not None and queue.spec.extend_clusters is not None
    assert [(c.name, c.weight) for c in queue.spec.extend_clusters] == [
        ("worker-0", 1),
        ("worker-1", 1),
    ]
    plain = clusters.queue_manifest("multi")
    assert "extendClusters" not in plain["spec"]


def _process(name: str, pid: int) -> Process:
    return Process(name=name, pid=pid, log=f"/logs/{name}.log")


def _plane(*names: str, first_pid: int) -> ControlPlane:
    return ControlPlane(
        workdir="/w",
        kubeconfig="/w/kubeconfig",
        server="https://127.0.0.1:1",
        bin_dir="/bin",
        processes=[_process(n, first_pid + i) for i, n in enumerate(names)],
    )


def test_the_state_file_records_the_clusters_processes() -> None:
    worker = clusters.WorkerCluster(
        name="worker-0",
        temporal_namespace="caldera-worker-0",
        control_plane=_plane("etcd", "kube-apiserver", first_pid=200),
        controllers=[_process("worker", 210), _process("forwarder", 211)],
    )
    dev = stack.DevStack(
        control_plane=_plane("etcd", "kube-apiserver", first_pid=100),
        temporal=TemporalServer(address="a", ui="u", process=_process("temporal", 50)),
        controllers=[_process("worker", 110)],
        clusters=[worker],
    )
    again = stack.DevStack.model_validate_json(dev.model_dump_json())
    assert [p.pid for p in again.processes] == [100, 101, 50, 110, 200, 201, 210, 211]
    assert [name for name, _ in again.labelled()][-3:] == [
        "worker-0/kube-apiserver",
        "worker-0/worker",
        "worker-0/forwarder",
    ]
    assert worker.apiserver().pid == 201
    assert "cluster worker-0:" in again.summary()
    before = dev.model_dump(exclude={"clusters"})
    assert stack.DevStack.model_validate(before).clusters == []  # an older state file


def test_up_takes_a_cluster_count() -> None:
    assert parser().parse_args(["dev", "up"]).clusters == 0
    assert parser().parse_args(["dev", "up", "--clusters", "2"]).clusters == 2
    with pytest.raises(SystemExit):
        parser().parse_args(["dev", "up", "--clusters", "99"])
