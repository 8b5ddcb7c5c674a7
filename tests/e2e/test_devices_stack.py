"""The fake DRA driver `gpu.caldera.dev` (cli/devstack/devices.py) with the real Kubernetes
parts around it, no Caldera process involved: the stack's nodes publish their slices and the
DeviceClass; kube-controller-manager's ResourceClaim controller makes a plain pod's claim
from its ResourceClaimTemplate; kube-scheduler's DynamicResources plugin allocates a device
of our slices, reserves the claim for the pod and binds the pod to that device's node; the
controller deletes the claim once the pod is gone; the garbage collector removes a slice
with its Node. What Caldera's gang scheduler does with the same objects is tested elsewhere."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import controlplane, devices
from cli.devstack.devices import Gpus
from cli.devstack.nodes import NodeTemplate
from tests.e2e.conftest import NODES, eventually

MODEL = 'device.attributes["gpu.caldera.dev"].model'


def _resource(api: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api)


def _slices(api: client.ApiClient) -> dict[str, dict[str, Any]]:
    return {s["metadata"]["name"]: s for s in devices.published(api)}


def _template(name: str, count: int = 1, selector: str = "") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": devices.DEVICE_CLASS, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def _pod(name: str, template: str) -> dict[str, Any]:
    """A plain pod for kube-scheduler (no schedulerName), running until deleted on kwok."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


def _submit(api: client.ApiClient, ns: str, template: dict[str, Any], pod: str) -> None:
    _resource(api).create_namespaced_resource_claim_template(ns, template)
    client.CoreV1Api(api).create_namespaced_pod(ns, _pod(pod, template["metadata"]["name"]))


def _claim_of(api: client.ApiClient, ns: str, pod: str) -> str | None:
    """The claim the ResourceClaim controller made for the pod (its resourceClaimStatuses)."""
    status = client.CoreV1Api(api).read_namespaced_pod(pod, ns).status
    made = [s.resource_claim_name for s in status.resource_claim_statuses or [] if s.name == "gpu"]
    return made[0] if made and made[0] else None


def _claim(api: client.ApiClient, ns: str, name: str) -> Any | None:
    try:
        return _resource(api).read_namespaced_resource_claim(name, ns)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise


def test_the_stack_publishes_the_device_class_and_a_slice_per_node(api: client.ApiClient) -> None:
    cls = _resource(api).read_device_class(devices.DEVICE_CLASS)
    [selector] = cls.spec.selectors
    assert selector.cel.expression == 'device.driver == "gpu.caldera.dev"'
    nodes = {n.metadata.name: n.metadata.uid for n in client.CoreV1Api(api).list_node().items}
    slices = _slices(api)
    for node in NODES.names():
        doc = slices[f"{node}-gpu.caldera.dev"]
        assert doc["spec"]["nodeName"] == node
        assert doc["spec"]["pool"]["name"] == node
        assert [d["name"] for d in doc["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
        [owner] = doc["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", node, nodes[node])
    # Publishing the same again is no write at all.
    versions = {n: s["metadata"]["resourceVersion"] for n, s in slices.items()}
    devices.publish(api, NODES.names(), NODES.gpus)
    assert {n: s["metadata"]["resourceVersion"] for n, s in _slices(api).items()} == versions


def test_kube_scheduler_allocates_a_published_gpu_and_the_claim_is_released_with_the_pod(
    api: client.ApiClient, namespace: str
) -> None:
    template = _template("one-gpu", selector=f'{MODEL} == "caldera-a100"')
    _submit(api, namespace, template, "trainer")

    claim_name = eventually(
        lambda: _claim_of(api, namespace, "trainer"), 30, "the ResourceClaim controller's claim"
    )
    claim = eventually(
        lambda: (
            (c := _claim(api, namespace, claim_name)) and c.status and c.status.reserved_for and c
        ),
        30,
        f"claim {claim_name} allocated and reserved",
    )
    [result] = claim.status.allocation.devices.results
    assert (result.driver, result.request) == ("gpu.caldera.dev", "gpu")
    pod = client.CoreV1Api(api).read_namespaced_pod("trainer", namespace)
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [
        ("pods", "trainer", pod.metadata.uid)
    ]
    # The device is one of the slice published for the node the pod is bound to.
    node = eventually(
        lambda: client.CoreV1Api(api).read_namespaced_pod("trainer", namespace).spec.node_name,
        30,
        "trainer bound",
    )
    assert result.pool == node
    published = _slices(api)[devices.slice_name(node)]
    assert result.device in {d["name"] for d in published["spec"]["devices"]}

    client.CoreV1Api(api).delete_namespaced_pod("trainer", namespace)
    eventually(
        lambda: _claim(api, namespace, claim_name) is None, 60, f"claim {claim_name} deleted"
    )


def _unschedulable(api: client.ApiClient, ns: str, pod: str) -> str | None:
    status = client.CoreV1Api(api).read_namespaced_pod(pod, ns).status
    for c in status.conditions or []:
        if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
            return str(c.message)
    return None


@pytest.mark.parametrize(
    ("count", "selector"),
    [
        pytest.param(NODES.gpus.count + 1, "", id="more-gpus-than-a-node-has"),
        pytest.param(1, f'{MODEL} == "no-such-model"', id="a-model-nobody-publishes"),
    ],
)
def test_a_claim_the_slices_cannot_satisfy_leaves_the_pod_unschedulable(
    api: client.ApiClient, namespace: str, count: int, selector: str
) -> None:
    _submit(api, namespace, _template("unmet", count, selector), "waiting")
    message = eventually(
        lambda: _unschedulable(api, namespace, "waiting"), 30, "waiting reported Unschedulable"
    )
    assert "cannot allocate all claims" in message, message
    pod = client.CoreV1Api(api).read_namespaced_pod("waiting", namespace)
    assert pod.spec.node_name is None


def test_a_slice_goes_with_its_node(api: client.ApiClient) -> None:
    """The Node owns its slice: the garbage collector deletes it with the node."""
    template = NodeTemplate(count=1, prefix=f"gpu-gc-{uuid.uuid4().hex[:6]}", gpus=Gpus(count=2))
    [node] = template.names()
    core = client.CoreV1Api(api)
    try:
        controlplane.ensure_nodes(api, template, timeout=60)
        name = devices.slice_name(node)
        assert len(_slices(api)[name]["spec"]["devices"]) == 2
    finally:
        core.delete_node(node)
    eventually(lambda: name not in _slices(api), 60, f"slice {name} gone with node {node}")
