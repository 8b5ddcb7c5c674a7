"""Binding a pod with ResourceClaims (resource.k8s.io/v1) against the real apiserver, as
`bind_placements` and `bind_session` run it: the claim allocated and reserved for the pod
before its node binding, a retried bind that changes nothing, a plan at odds with the claim's
allocation refused with the claim left as it was, and a binding that fails taking its
allocation back. The scheduler's cluster cache lists and watches the DRA kinds.

No Caldera process runs: the pods name `schedulerName: volcano` and only these calls place
them. Unit-level cases (conflicts, gangs sharing a claim): tests/unit/activities/test_binding.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.messages import BindPlacementsInput, BindPodsResult
from activities.scheduler import binding, informer, resourceclaims
from models.signals.scheduler import ClaimPlan, DeviceResult, PlacedPod
from tests.e2e.conftest import NODES, E2EStack, eventually

NODE = NODES.names()[0]
DRIVER = "claims-e2e.caldera.dev"
CLASS = DRIVER
GROUP, VERSION = "resource.k8s.io", "v1"
DRA_KINDS = ("slices", "deviceclasses", "resourceclaims")


@pytest.fixture(autouse=True)
def activity_kubeconfig(e2e_stack: E2EStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Activities read KUBECONFIG once per process: point them at this session's cluster."""
    monkeypatch.setenv("KUBECONFIG", e2e_stack.kubeconfig)
    kube.api.cache_clear()
    yield
    kube.api.cache_clear()


def _gone_ok(delete: Any, *args: Any) -> None:
    try:
        delete(*args)
    except client.ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture
def devices(api: client.ApiClient) -> Iterator[str]:
    """A DeviceClass of this test's driver and one ResourceSlice of four devices on NODE, as a
    DRA driver's kubelet plugin would publish them; the slice's pool is the node's name."""
    resource = client.ResourceV1Api(api)
    device_class = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    name = f"{NODE}-{DRIVER}"
    device_slice = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": NODE,
            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(4)
            ],
        },
    }
    _gone_ok(resource.delete_resource_slice, name)
    _gone_ok(resource.delete_device_class, CLASS)
    resource.create_device_class(device_class)  # type: ignore[arg-type]
    resource.create_resource_slice(device_slice)  # type: ignore[arg-type]
    try:
        yield name
    finally:
        _gone_ok(resource.delete_resource_slice, name)
        _gone_ok(resource.delete_device_class, CLASS)


def _create_claim(api: client.ApiClient, namespace: str, name: str) -> str:
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": CLASS,
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    }
                ]
            }
        },
    }
    created = client.ResourceV1Api(api).create_namespaced_resource_claim(namespace, claim)  # type: ignore[arg-type]
    assert created.metadata is not None
    return str(created.metadata.uid)


def _create_pod(api: client.ApiClient, namespace: str, name: str, claim: str) -> str:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",  # nobody else places it: only our bind does
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "restartPolicy": "Never",
        },
    }
    created = client.CoreV1Api(api).create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    assert created.metadata is not None
    return str(created.metadata.uid)


def _claim(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    response: Any = client.ResourceV1Api(api).read_namespaced_resource_claim(
        name, namespace, _preload_content=False
    )
    return kube.as_dict(json.loads(response.data))


def _device(index: int) -> DeviceResult:
    return DeviceResult(request="gpu", driver=DRIVER, pool=NODE, device=f"gpu-{index}")


def _bind(namespace: str, *placed: PlacedPod) -> BindPodsResult:
    request = BindPlacementsInput(namespace=namespace, placements=list(placed))
    result: BindPodsResult = ActivityEnvironment().run(binding.bind_placements, request)
    return result


def _node_of(api: client.ApiClient, namespace: str, pod: str) -> str | None:
    spec = client.CoreV1Api(api).read_namespaced_pod(pod, namespace).spec
    return spec.node_name if spec is not None else None


def test_a_claim_is_allocated_and_reserved_then_the_pod_bound(
    api: client.ApiClient, namespace: str, devices: str
) -> None:
    claim_uid = _create_claim(api, namespace, "gpu")
    pod_uid = _create_pod(api, namespace, "p1", "gpu")
    plan = ClaimPlan(claim="gpu", uid=claim_uid, devices=[_device(0)], node=NODE)
    placed = PlacedPod(pod="p1", uid=pod_uid, node=NODE, claims=[plan])

    result = _bind(namespace, placed)
    assert (result.bound, result.failed) == (["p1"], {})
    assert _node_of(api, namespace, "p1") == NODE
    claim = _claim(api, namespace, "gpu")
    assert resourceclaims.FINALIZER in claim["metadata"]["finalizers"]
    allocation = claim["status"]["allocation"]
    assert allocation["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "gpu-0"}
    ]
    assert allocation["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}
        ]
    }
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": pod_uid}]

    # The activity retried after it had bound: a success that writes nothing.
    again = _bind(namespace, placed)
    assert (again.bound, again.failed) == (["p1"], {})
    assert (
        _claim(api, namespace, "gpu")["metadata"]["resourceVersion"]
        == (claim["metadata"]["resourceVersion"])
    )

    # Another pod planned onto other devices of the same claim: refused, the claim untouched.
    other_uid = _create_pod(api, namespace, "p2", "gpu")
    other = ClaimPlan(claim="gpu", uid=claim_uid, devices=[_device(1)], node=NODE)
    refused = _bind(namespace, PlacedPod(pod="p2", uid=other_uid, node=NODE, claims=[other]))
    assert refused.failed == {"p2": f"claim {namespace}/gpu is allocated elsewhere"}
    assert _node_of(api, namespace, "p2") is None
    assert _claim(api, namespace, "gpu") == claim

    # A claim deleted and made again under the same name is not the one decided on.
    shared = ClaimPlan(claim="gpu", uid="not-" + claim_uid)
    replaced = _bind(namespace, PlacedPod(pod="p2", uid=other_uid, node=NODE, claims=[shared]))
    assert replaced.failed == {"p2": f"claim {namespace}/gpu was replaced"}


def test_a_shared_claim_already_allocated_is_only_reserved(
    api: client.ApiClient, namespace: str, devices: str
) -> None:
    claim_uid = _create_claim(api, namespace, "shared")
    uids = {pod: _create_pod(api, namespace, pod, "shared") for pod in ("a", "b")}
    allocate = ClaimPlan(claim="shared", uid=claim_uid, devices=[_device(2)], node=NODE)
    share = ClaimPlan(claim="shared", uid=claim_uid)
    result = _bind(
        namespace,
        PlacedPod(pod="a", uid=uids["a"], node=NODE, claims=[share]),
        PlacedPod(pod="b", uid=uids["b"], node=NODE, claims=[allocate]),
    )
    assert (sorted(result.bound), result.failed) == (["a", "b"], {})
    status = _claim(api, namespace, "shared")["status"]
    assert [r["device"] for r in status["allocation"]["devices"]["results"]] == ["gpu-2"]
    assert sorted(r["name"] for r in status["reservedFor"]) == ["a", "b"]


def test_a_bind_to_a_node_that_does_not_exist_leaves_the_claim_unallocated(
    api: client.ApiClient, namespace: str, devices: str
) -> None:
    claim_uid = _create_claim(api, namespace, "gpu")
    pod_uid = _create_pod(api, namespace, "p3", "gpu")
    plan = ClaimPlan(claim="gpu", uid=claim_uid, devices=[_device(0)], node="kwok-node-deleted")
    placed = PlacedPod(pod="p3", uid=pod_uid, node="kwok-node-deleted", claims=[plan])
    result = _bind(namespace, placed)
    assert result.failed == {"p3": "failed to bind to node kwok-node-deleted: node not found"}
    claim = _claim(api, namespace, "gpu")
    assert not (claim.get("status") or {}).get("allocation")
    assert not (claim.get("status") or {}).get("reservedFor")


def test_a_binding_the_apiserver_refuses_reverts_the_allocation(
    api: client.ApiClient, namespace: str, devices: str
) -> None:
    """The pod was replaced since it was placed (another UID under its name): the binding is
    refused after the claim was allocated and reserved, and both are taken back."""
    claim_uid = _create_claim(api, namespace, "gpu")
    _create_pod(api, namespace, "p4", "gpu")
    plan = ClaimPlan(claim="gpu", uid=claim_uid, devices=[_device(3)], node=NODE)
    placed = PlacedPod(pod="p4", uid="a-pod-gone-since", node=NODE, claims=[plan])
    result = _bind(namespace, placed)
    assert result.failed == {"p4": "pod does not exist any more"}
    assert _node_of(api, namespace, "p4") is None
    claim = _claim(api, namespace, "gpu")
    assert not (claim.get("status") or {}).get("allocation")
    assert not (claim.get("status") or {}).get("reservedFor")
    assert resourceclaims.FINALIZER not in (claim["metadata"].get("finalizers") or [])


def test_the_cluster_cache_lists_and_watches_the_dra_kinds(
    api: client.ApiClient, namespace: str, devices: str
) -> None:
    cache = informer.ClusterCache({k: v for k, v in informer._calls(api).items() if k in DRA_KINDS})
    cache.start()
    try:
        assert cache.wait_synced(30) == []
        since = cache.arrivals("volcano")
        listed = cache.read()
        assert devices in {s["metadata"]["name"] for s in listed["slices"]}
        assert CLASS in {c["metadata"]["name"] for c in listed["deviceclasses"]}
        # A claim made now comes by the watch, and wakes the scheduler (its pod may wait).
        _create_claim(api, namespace, "late")
        eventually(
            lambda: cache.has("resourceclaims", f"{namespace}/late"), what="the claim watched"
        )
        assert cache.wait_for_work("volcano", since, 30, lambda: None)
        # A changed slice (one more device) too.
        resource = client.ResourceV1Api(api)
        more = [{"name": f"gpu-{i}"} for i in range(5)]
        resource.patch_resource_slice(devices, {"spec": {"devices": more}})
        eventually(
            lambda: any(len(s["spec"]["devices"]) == 5 for s in cache.read()["slices"]),
            what="the slice's change watched",
        )
    finally:
        cache.stop()
