"""A fake DRA driver, `gpu.caldera.dev`: the objects a real driver publishes, and nothing else.

A real DRA driver's kubelet plugin publishes one ResourceSlice per node (a pool named after
the node, owned by the Node so the garbage collector removes it with the node) and the cluster
admin installs a DeviceClass selecting the driver's devices. kube-scheduler (or Caldera's gang
scheduler) allocates devices from those slices; kube-controller-manager's ResourceClaim
controller turns ResourceClaimTemplates into claims and releases them. kwok runs the pods, so
no kubelet plugin prepares anything: these objects are the whole driver. Each slice's devices
are `gpu-0`..`gpu-<N-1>` with the attributes `model` (string) and `index` (int), and the
capacity `memory`; a claim selects them with `device.attributes["gpu.caldera.dev"].model`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

from kubernetes import client
from pydantic import BaseModel, ConfigDict, Field, field_validator

from activities import kube
from models.quantity import parse_quantity

DRIVER: Final = "gpu.caldera.dev"
DEVICE_CLASS: Final = DRIVER  # claims ask for `deviceClassName: gpu.caldera.dev`
API_VERSION: Final = "resource.k8s.io/v1"
FIELD_MANAGER: Final = DRIVER  # the objects' managedFields name the driver, as a real one's do
DEFAULT_COUNT: Final = 4
DEFAULT_MODEL: Final = "caldera-a100"
DEFAULT_MEMORY: Final = "40Gi"
MAX_DEVICES: Final = 128  # resource.k8s.io/v1's limit of devices in one ResourceSlice
MAX_STRING_ATTRIBUTE: Final = 64  # and of a string attribute's length
_DNS_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN: Final = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")


class Gpus(BaseModel):
    """The fake GPUs of one node: how many, and what each reports."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int = Field(default=DEFAULT_COUNT, ge=0, le=MAX_DEVICES)
    model: str = Field(default=DEFAULT_MODEL, min_length=1, max_length=MAX_STRING_ATTRIBUTE)
    memory: str = DEFAULT_MEMORY

    @field_validator("memory")
    @classmethod
    def _quantity(cls, value: str) -> str:
        """Refused here rather than by the apiserver, after some slices were written."""
        if parse_quantity(value) <= 0:
            raise ValueError(f"GPU memory must be positive, not {value!r}")
        return value


def slice_name(node: str) -> str:
    """`<node>-gpu.caldera.dev`: fixed, so publishing again replaces rather than adds (real
    drivers use generateName; one slice per node makes a name of our own enough)."""
    name = f"{node}-{DRIVER}"
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise ValueError(f"{name!r} is not a DNS subdomain: node {node!r} cannot carry GPUs")
    return name


def device_class() -> dict[str, Any]:
    """Selects every device of the driver, as a driver's install manifests do."""
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def devices(gpus: Gpus) -> list[dict[str, Any]]:
    return [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": gpus.model}, "index": {"int": i}},
            "capacity": {"memory": {"value": gpus.memory}},
        }
        for i in range(gpus.count)
    ]


def resource_slice(node: str, node_uid: str, gpus: Gpus, generation: int = 1) -> dict[str, Any]:
    """The node's only slice: pool `<node>` of one slice; the Node owns it (the garbage
    collector removes it with the node, as it does a kubelet plugin's)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {
            "name": slice_name(node),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node,
                    "uid": node_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices(gpus),
        },
    }


def _json(response: Any) -> dict[str, Any]:
    """The body of a call made with `_preload_content=False`, as the apiserver wrote it (the
    client's models leave out fields they do not know)."""
    doc: dict[str, Any] = json.loads(response.data)
    return doc


def _unchanged(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    """The stored slice says what `desired` says, its pool's generation aside."""

    def content(doc: dict[str, Any]) -> tuple[Any, ...]:
        spec = dict(doc["spec"])
        pool = {k: v for k, v in spec.pop("pool").items() if k != "generation"}
        owners = [(o["kind"], o["name"], o["uid"]) for o in doc["metadata"]["ownerReferences"]]
        return spec, pool, owners

    return content(current) == content(desired)


def _put_slice(api: client.ApiClient, desired: dict[str, Any]) -> None:
    """Create the slice, or replace one that differs with the pool's next generation, which
    tells schedulers the older contents are gone; an equal one is left as it is."""
    resource = client.ResourceV1Api(api)
    try:
        resource.create_resource_slice(kube.body(desired), field_manager=FIELD_MANAGER)
        return
    except client.ApiException as e:
        if e.status != 409:
            raise
    name = desired["metadata"]["name"]
    current = _json(resource.read_resource_slice(name, _preload_content=False))
    if _unchanged(current, desired):
        return
    desired["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    desired["spec"]["pool"]["generation"] = current["spec"]["pool"]["generation"] + 1
    resource.replace_resource_slice(name, kube.body(desired), field_manager=FIELD_MANAGER)


def ensure_device_class(api: client.ApiClient) -> None:
    """The class claims name: without it a claim's request cannot be allocated at all."""
    resource = client.ResourceV1Api(api)
    try:
        resource.create_device_class(kube.body(device_class()), field_manager=FIELD_MANAGER)
    except client.ApiException as e:
        if e.status != 409:  # there from an earlier publish: its spec never changes
            raise


def publish(api: client.ApiClient, nodes: Iterable[str], gpus: Gpus) -> list[str]:
    """The DeviceClass and each node's slice, as they would be after the driver started
    there; idempotent. Returns the slices' names; `gpus.count == 0` publishes nothing."""
    if gpus.count == 0:
        return []
    wanted = list(nodes)
    names = [slice_name(n) for n in wanted]  # an impossible name fails before any write
    listed = client.CoreV1Api(api).list_node().items
    uids = {n.metadata.name: n.metadata.uid or "" for n in listed if n.metadata}
    missing = sorted(set(wanted) - set(uids))
    if missing:
        raise ValueError(f"no such nodes to publish GPUs on: {missing}")
    ensure_device_class(api)
    for node in wanted:
        _put_slice(api, resource_slice(node, uids[node], gpus))
    return names


def published(api: client.ApiClient) -> list[dict[str, Any]]:
    """The driver's slices in the cluster, as plain manifests."""
    listed = client.ResourceV1Api(api).list_resource_slice(
        field_selector=f"spec.driver={DRIVER}", _preload_content=False
    )
    items: list[dict[str, Any]] = _json(listed)["items"]
    return items


def remove(api: client.ApiClient, nodes: Iterable[str] | None = None) -> list[str]:
    """Delete the driver's slices of `nodes` (None: of every node), as a driver uninstalled
    there would; the DeviceClass stays. Returns the names deleted."""
    resource = client.ResourceV1Api(api)
    wanted = None if nodes is None else set(nodes)
    gone = []
    for doc in published(api):
        if wanted is not None and doc["spec"].get("nodeName") not in wanted:
            continue
        try:
            resource.delete_resource_slice(doc["metadata"]["name"])
        except client.ApiException as e:
            if e.status != 404:
                raise
        gone.append(doc["metadata"]["name"])
    return gone
