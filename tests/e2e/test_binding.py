"""The bind flow against the real apiserver, step by step as `bind_session` and
`bind_placements` run it: node binding through `pods/binding`, PodScheduled=False for pods that
cannot be placed (`mark_unschedulable`), and volume binding (a static PV by claimRef, a
dynamically provisioned host-path claim by the selected-node annotation) before the node."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.messages import (
    BindPodsInput,
    BindSessionInput,
    JobPlacements,
    MarkUnschedulableInput,
    Placement,
    StaticBinding,
    Unschedulable,
    VolumesInput,
)
from activities.scheduler import binding, volume_binding
from models.signals import scheduler as scheduler_signals
from tests.e2e.conftest import NODES, E2EStack, eventually

NODE = NODES.names()[0]


@pytest.fixture(autouse=True)
def activity_kubeconfig(e2e_stack: E2EStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Activities read KUBECONFIG once per process: point them at this session's cluster."""
    monkeypatch.setenv("KUBECONFIG", e2e_stack.kubeconfig)
    kube.api.cache_clear()
    yield
    kube.api.cache_clear()


def _pod(name: str, claim: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",  # nobody else places it: only our bind does
        "containers": [{"name": "c", "image": "busybox"}],
        "restartPolicy": "Never",
    }
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _run(fn: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(fn, arg)


def test_bind_places_pod_and_a_second_bind_is_idempotent(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_pod(namespace, _pod("p1"))  # type: ignore[arg-type]
    placement = Placement(pod="p1", uid=created.metadata.uid, node=NODE)
    result = _run(binding.bind_pods, BindPodsInput(namespace=namespace, placements=[placement]))
    assert (result.bound, result.failed) == (["p1"], {})
    eventually(
        lambda: core.read_namespaced_pod("p1", namespace).status.phase == "Running", what="Running"
    )
    again = _run(binding.bind_pods, BindPodsInput(namespace=namespace, placements=[placement]))
    assert again.bound == ["p1"]
    elsewhere = placement.model_copy(update={"node": NODES.names()[1]})
    moved = _run(binding.bind_pods, BindPodsInput(namespace=namespace, placements=[elsewhere]))
    assert moved.failed == {"p1": f"already bound to node {NODE}"}


def test_bind_to_a_missing_node_fails_cleanly_and_marks_the_pod(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, _pod("p2"))  # type: ignore[arg-type]
    gone = Placement(pod="p2", node="kwok-node-deleted")
    result = _run(binding.bind_pods, BindPodsInput(namespace=namespace, placements=[gone]))
    assert result.failed == {"p2": "failed to bind to node kwok-node-deleted: node not found"}
    assert core.read_namespaced_pod("p2", namespace).spec.node_name is None
    why = Unschedulable(
        pod="p2", reason="SchedulerError", message=result.failed["p2"], nominated_node=NODE
    )
    _run(binding.mark_unschedulable, MarkUnschedulableInput(namespace=namespace, pods=[why]))
    status = core.read_namespaced_pod("p2", namespace).status
    (condition,) = [c for c in status.conditions if c.type == "PodScheduled"]
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "SchedulerError",
        "failed to bind to node kwok-node-deleted: node not found",
    )
    assert status.nominated_node_name == NODE


def test_a_session_binds_every_gang_it_placed_and_marks_what_it_could_not(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    uids = {
        name: core.create_namespaced_pod(namespace, _pod(name)).metadata.uid  # type: ignore[arg-type]
        for name in ("s1", "s2", "s3")
    }

    def placed(pod: str, node: str) -> scheduler_signals.PlacedPod:
        return scheduler_signals.PlacedPod(pod=pod, uid=uids[pod], node=node)

    request = BindSessionInput(
        session=7,
        jobs=[
            JobPlacements(
                job_workflow_id="vcjob/a", namespace=namespace, placements=[placed("s1", NODE)]
            ),
            JobPlacements(
                job_workflow_id="vcjob/b",
                namespace=namespace,
                placements=[placed("s2", NODES.names()[1]), placed("s3", "kwok-node-deleted")],
            ),
        ],
    )
    result = _run(binding.bind_session, request)
    why = "failed to bind to node kwok-node-deleted: node not found"
    assert (result.bound, result.failed) == (2, {f"{namespace}/s3": why})
    nodes = {n: core.read_namespaced_pod(n, namespace).spec.node_name for n in uids}
    assert nodes == {"s1": NODE, "s2": NODES.names()[1], "s3": None}
    conditions = core.read_namespaced_pod("s3", namespace).status.conditions
    (condition,) = [c for c in conditions if c.type == "PodScheduled"]
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "SchedulerError",
        why,
    )
    # An attempt retried after it bound is no failure: the pods are where they were placed.
    again = _run(binding.bind_session, request.model_copy(update={"jobs": request.jobs[:1]}))
    assert (again.bound, again.failed) == (1, {})


@pytest.fixture
def static_class(api: client.ApiClient) -> Iterator[str]:
    storage = client.StorageV1Api(api)
    name = "caldera-static"
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    try:
        storage.create_storage_class(body)  # type: ignore[arg-type]
    except client.ApiException as e:
        if e.status != 409:
            raise
    yield name


def _claim(name: str, storage_class: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def test_static_volume_is_bound_before_the_node(
    api: client.ApiClient, namespace: str, static_class: str
) -> None:
    core = client.CoreV1Api(api)
    pv_name = f"pv-{namespace}"
    pv = {
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": static_class,
            "hostPath": {"path": f"/tmp/{pv_name}"},
            "persistentVolumeReclaimPolicy": "Delete",
        },
    }
    core.create_persistent_volume(pv)  # type: ignore[arg-type]
    try:
        core.create_namespaced_persistent_volume_claim(namespace, _claim("data", static_class))  # type: ignore[arg-type]
        core.create_namespaced_pod(namespace, _pod("p3", claim="data"))  # type: ignore[arg-type]
        request = VolumesInput(
            namespace=namespace,
            pod="p3",
            node=NODE,
            static=[StaticBinding(pvc="data", pv=pv_name)],
            timeout_seconds=60,
        )
        _run(volume_binding.bind_volumes, request)
        claim = core.read_namespaced_persistent_volume_claim("data", namespace)
        assert (claim.status.phase, claim.spec.volume_name) == ("Bound", pv_name)
        result = _run(
            binding.bind_pods,
            BindPodsInput(namespace=namespace, placements=[Placement(pod="p3", node=NODE)]),
        )
        assert result.bound == ["p3"]
    finally:
        core.delete_persistent_volume(pv_name)


def test_dynamic_volume_is_provisioned_on_the_chosen_node(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_persistent_volume_claim(namespace, _claim("scratch", "standard"))  # type: ignore[arg-type]
    core.create_namespaced_pod(namespace, _pod("p4", claim="scratch"))  # type: ignore[arg-type]
    request = VolumesInput(
        namespace=namespace, pod="p4", node=NODE, provision=["scratch"], timeout_seconds=60
    )
    _run(volume_binding.bind_volumes, request)
    claim = core.read_namespaced_persistent_volume_claim("scratch", namespace)
    assert claim.status.phase == "Bound"
    assert claim.metadata.annotations[volume_binding.SELECTED_NODE] == NODE
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.spec.host_path is not None


def test_revert_removes_a_selected_node_that_did_not_bind(
    api: client.ApiClient, namespace: str, static_class: str
) -> None:
    core = client.CoreV1Api(api)
    # no-provisioner never provisions: the annotation is written, nothing binds, revert removes it.
    core.create_namespaced_persistent_volume_claim(namespace, _claim("never", static_class))  # type: ignore[arg-type]
    request = VolumesInput(
        namespace=namespace, pod="p5", node=NODE, provision=["never"], timeout_seconds=2
    )
    with pytest.raises(Exception, match="volumes not bound after 2s"):
        _run(volume_binding.bind_volumes, request)
    _run(volume_binding.revert_volumes, request)
    claim = core.read_namespaced_persistent_volume_claim("never", namespace)
    assert volume_binding.SELECTED_NODE not in (claim.metadata.annotations or {})
