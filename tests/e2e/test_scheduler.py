"""Caldera's gang scheduler end to end: Volcano Jobs with `schedulerName: volcano`, the
PodGroup gate on, sessions in the SchedulerWorkflow, binding by each JobWorkflow, on kwok
nodes of 8 CPUs (3 nodes: 24 CPUs in all)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from cli.devstack import caldera_processes as caldera
from cli.devstack.processes import Process
from models import keys
from models.signals import scheduler as scheduler_signals
from tests.builders import make_job
from tests.e2e.conftest import NODES, E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on


def _template(cpu: str, seconds: str | None = None) -> dict[str, Any]:
    annotations = {"sim.caldera.dev/run-seconds": seconds} if seconds else {}
    return {
        "metadata": {"annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def _submit(
    api: client.ApiClient, ns: str, name: str, replicas: int, cpu: str, seconds: str | None = None
) -> None:
    doc = (
        make_job(name, namespace=ns)
        .task("w", replicas=replicas, template=_template(cpu, seconds))
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc
    )


def _phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def _pods(api: client.ApiClient, ns: str, job: str) -> list[Any]:
    return [
        p
        for p in client.CoreV1Api(api).list_namespaced_pod(ns).items
        if p.metadata.name.startswith(f"{job}-")
    ]


def test_gang_job_is_scheduled_by_caldera_and_completes(
    api: client.ApiClient, namespace: str
) -> None:
    _submit(api, namespace, "gang", replicas=3, cpu="2", seconds="2")
    eventually(lambda: _phase(api, namespace, "gang") == "Running", 90, "gang Running")
    pods = _pods(api, namespace, "gang")
    assert len(pods) == 3 and all(p.spec.node_name for p in pods)
    assert {p.spec.scheduler_name for p in pods} == {"volcano"}
    eventually(lambda: _phase(api, namespace, "gang") == "Completed", 90, "gang Completed")


def test_job_larger_than_the_cluster_binds_nothing_and_says_why(
    api: client.ApiClient, namespace: str
) -> None:
    _submit(api, namespace, "huge", replicas=4, cpu="7")  # 4 x 7 CPUs: only 3 nodes fit one each
    custom = client.CustomObjectsApi(api)

    def why() -> str | None:
        groups = custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
        )
        for group in groups["items"]:
            for condition in (group.get("status") or {}).get("conditions") or []:
                if condition.get("type") == "Unschedulable":
                    return str(condition.get("message"))
        return None

    message = eventually(why, 90, "Unschedulable condition on the PodGroup")
    # Its minResources exceed what the queue and cluster can take: enqueue refuses it.
    assert message == "queue resource quota insufficient: queue default", message
    assert not [p for p in _pods(api, namespace, "huge") if p.spec.node_name]
    assert _phase(api, namespace, "huge") == "Pending"
    events = client.CoreV1Api(api).list_namespaced_event(namespace).items
    on_job = [(e.reason, e.message) for e in events if e.involved_object.name == "huge"]
    assert ("Unschedulable", message) in on_job, on_job


def test_three_gang_jobs_share_the_nodes(api: client.ApiClient, namespace: str) -> None:
    for name in ("ga", "gb", "gc"):
        _submit(api, namespace, name, replicas=3, cpu="2", seconds="3")
    for name in ("ga", "gb", "gc"):
        eventually(
            lambda n=name: _phase(api, namespace, n) in ("Running", "Completed"),
            120,
            f"{name} runs",
        )
    nodes = {p.spec.node_name for n in ("ga", "gb", "gc") for p in _pods(api, namespace, n)}
    assert len(nodes) == 3  # least-allocated spreads 9 pods x 2 CPUs over the 3 nodes
    for name in ("ga", "gb", "gc"):
        eventually(
            lambda n=name: _phase(api, namespace, n) == "Completed", 120, f"{name} completes"
        )


@pytest.fixture
def tainted(api: client.ApiClient) -> Iterator[str]:
    core = client.CoreV1Api(api)
    node = NODES.names()[0]
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    core.patch_node(node, {"spec": {"taints": [taint]}})
    yield node
    core.patch_node(node, {"spec": {"taints": []}})


def test_tainted_node_is_skipped_unless_tolerated(
    api: client.ApiClient, namespace: str, tainted: str
) -> None:
    _submit(api, namespace, "plain", replicas=4, cpu="1")
    tolerating = make_job("tolerant", namespace=namespace).task(
        "w", replicas=3, template=_template("1")
    )
    doc = tolerating.manifest()
    doc["spec"]["tasks"][0]["template"]["spec"]["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    ]
    doc["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {
        "kubernetes.io/hostname": tainted
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc
    )
    for name in ("plain", "tolerant"):
        eventually(lambda n=name: _phase(api, namespace, n) == "Running", 90, f"{name} Running")
    assert tainted not in {p.spec.node_name for p in _pods(api, namespace, "plain")}
    assert {p.spec.node_name for p in _pods(api, namespace, "tolerant")} == {tainted}


def test_job_volume_is_provisioned_on_the_chosen_node_before_binding(
    api: client.ApiClient, namespace: str
) -> None:
    claim = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "standard",
        "resources": {"requests": {"storage": "1Gi"}},
    }
    doc = (
        make_job("withdata", namespace=namespace)
        .task("w", replicas=1, template=_template("1"))
        .spec(volumes=[{"mountPath": "/data", "volumeClaim": claim}])
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc
    )
    eventually(
        lambda: _phase(api, namespace, "withdata") == "Running", 90, "job with a volume Running"
    )
    core = client.CoreV1Api(api)
    (pod,) = _pods(api, namespace, "withdata")
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", "withdata"
    )
    claim_name = job["spec"]["volumes"][0]["volumeClaimName"]  # generated, written back
    pvc = core.read_namespaced_persistent_volume_claim(claim_name, namespace)
    assert pvc.status.phase == "Bound"
    assert pvc.metadata.annotations["volume.kubernetes.io/selected-node"] == pod.spec.node_name


def test_job_with_a_static_volume_gets_it_bound_before_the_node(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    storage = client.StorageV1Api(api)
    klass = "caldera-static-sched"
    try:
        storage.create_storage_class(  # type: ignore[arg-type]
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": klass},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
    except client.ApiException as e:
        if e.status != 409:
            raise
    pv_name = f"pv-{namespace}"
    core.create_persistent_volume(  # type: ignore[arg-type]
        {
            "metadata": {"name": pv_name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": klass,
                "hostPath": {"path": f"/tmp/{pv_name}"},
                "persistentVolumeReclaimPolicy": "Delete",
            },
        }
    )
    try:
        core.create_namespaced_persistent_volume_claim(  # type: ignore[arg-type]
            namespace,
            {
                "metadata": {"name": "shared"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": klass,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        doc = (
            make_job("static", namespace=namespace)
            .task("w", replicas=1, template=_template("1"))
            .spec(volumes=[{"mountPath": "/data", "volumeClaimName": "shared"}])
            .manifest()
        )
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc
        )
        eventually(
            lambda: _phase(api, namespace, "static") == "Running",
            90,
            "job with a static volume Running",
        )
        claim = core.read_namespaced_persistent_volume_claim("shared", namespace)
        assert (claim.status.phase, claim.spec.volume_name) == ("Bound", pv_name)
    finally:
        core.delete_persistent_volume(pv_name)


async def test_bind_to_a_vanished_node_fails_cleanly_and_the_pod_lands_elsewhere(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    core = client.CoreV1Api(api)
    doc = (
        make_job("moved", namespace=namespace)
        .task("w", replicas=1, template=_template("1"))
        .manifest()
    )
    doc["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {"caldera.dev/pool": namespace}
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc
    )
    eventually(lambda: _pods(api, namespace, "moved"), 60, "pod created, no node matches yet")
    # A placement decided for a node that is gone by the time the job binds it:
    temporal = await Client.connect(
        e2e_stack.temporal_address, data_converter=pydantic_data_converter
    )
    placed = scheduler_signals.PodsPlaced(
        session=-1, placements=[scheduler_signals.PlacedPod(pod="moved-w-0", node="kwok-node-gone")]
    )
    await temporal.get_workflow_handle(keys.job_workflow_id(namespace, "moved")).signal(
        scheduler_signals.SIGNAL_PODS_PLACED, placed
    )

    # The job marks the pod PodScheduled=False (SchedulerError) with the bind's error; the
    # scheduler's next session may replace it with its own Unschedulable at once, so the failed
    # bind is read from the job's history (the bind's recorded result), where it stays.
    handle = temporal.get_workflow_handle(keys.job_workflow_id(namespace, "moved"))
    expected = "failed to bind to node kwok-node-gone: node not found"

    async def marked() -> bool:
        history = await handle.fetch_history()
        return any(expected.encode() in e.SerializeToString() for e in history.events)

    for _ in range(120):
        if await marked():
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError(f"not within 60s: the pod marked {expected!r} in the job's story")
    assert core.read_namespaced_pod("moved-w-0", namespace).spec.node_name is None
    target = NODES.names()[1]
    core.patch_node(target, {"metadata": {"labels": {"caldera.dev/pool": namespace}}})
    try:
        eventually(
            lambda: _phase(api, namespace, "moved") == "Running", 90, "job Running on a real node"
        )
        assert core.read_namespaced_pod("moved-w-0", namespace).spec.node_name == target
    finally:
        core.patch_node(target, {"metadata": {"labels": {"caldera.dev/pool": None}}})


def test_worker_killed_between_decision_and_bind_double_books_nothing(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, controllers: list[Process]
) -> None:
    for name in ("ka", "kb", "kc"):
        _submit(api, namespace, name, replicas=3, cpu="2")  # 18 of the 24 CPUs
    custom = client.CustomObjectsApi(api)

    def enqueued() -> bool:
        groups = custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
        )
        return any((g.get("status") or {}).get("phase") == "Inqueue" for g in groups["items"])

    eventually(enqueued, 60, "a session decided")
    worker = next(p for p in controllers if p.name == "worker")
    os.kill(worker.pid, signal.SIGKILL)  # no goodbye: decisions in flight stay in Temporal
    assert e2e_stack.workdir is not None
    replacement = caldera.start_worker(
        e2e_stack.kubeconfig, e2e_stack.temporal_address, e2e_stack.workdir / "logs", None
    )
    controllers[controllers.index(worker)] = replacement
    for name in ("ka", "kb", "kc"):
        eventually(
            lambda n=name: _phase(api, namespace, n) == "Running",
            120,
            f"{name} Running after the restart",
        )
    used: dict[str, int] = {}
    for name in ("ka", "kb", "kc"):
        for pod in _pods(api, namespace, name):
            used[pod.spec.node_name] = used.get(pod.spec.node_name, 0) + 2
    assert sum(used.values()) == 18
    assert max(used.values()) <= 8, used  # no node holds more than its 8 CPUs


def test_a_job_adopted_with_a_pod_group_from_before_volcano_1_5_runs_in_that_gang(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, controllers: list[Process]
) -> None:
    """A Job Volcano began before 1.5 named its PodGroup as itself. Adopted while Caldera was
    down, it keeps that gang, as Volcano's lookup does: no second PodGroup is made, its pods
    name the old one, are placed by Caldera's scheduler, and the job completes."""
    down = [p for p in controllers if p.name in ("forwarder", "worker")]
    for p in down:
        os.kill(p.pid, signal.SIGKILL)
    custom = client.CustomObjectsApi(api)
    doc = make_job("old", namespace=namespace).task("w", replicas=1, template=_template("1", "2"))
    job = custom.create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc.manifest()
    )
    custom.patch_namespaced_custom_object_status(
        "batch.volcano.sh",
        "v1alpha1",
        namespace,
        "jobs",
        "old",
        {"status": {"state": {"phase": "Pending"}, "minAvailable": 1}},
    )
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "old",
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "old", "ownerReferences": [owner]},
        "spec": {"minMember": 1, "queue": "default"},
    }
    pg = ("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")
    custom.create_namespaced_custom_object(*pg, group)
    custom.patch_namespaced_custom_object_status(*pg, "old", {"status": {"phase": "Inqueue"}})
    assert e2e_stack.workdir is not None
    for p in down:
        start = caldera.start_forwarder if p.name == "forwarder" else caldera.start_worker
        controllers[controllers.index(p)] = start(
            e2e_stack.kubeconfig, e2e_stack.temporal_address, e2e_stack.workdir / "logs", None
        )
    groups_seen: set[str] = set()

    def completed() -> bool:
        listed = custom.list_namespaced_custom_object(*pg)["items"]
        groups_seen.update(g["metadata"]["name"] for g in listed)
        return _phase(api, namespace, "old") == "Completed"

    eventually(completed, 120, "the adopted job Completed")
    (pod,) = _pods(api, namespace, "old")
    assert pod.metadata.annotations["scheduling.k8s.io/group-name"] == "old"
    assert pod.spec.node_name and pod.status.phase == "Succeeded"
    assert groups_seen <= {"old"}, groups_seen  # never a second gang `old-<uid>`
