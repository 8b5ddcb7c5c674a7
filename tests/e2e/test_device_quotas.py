"""Device quotas per queue on the real stack: two queues sharing the stack's twelve fake GPUs
(three nodes of four, `gpu.caldera.dev`), counted under ResourceQuota's name for a class's
devices. A queue's capability stops its jobs at its devices; a queue holding every GPU gives
back, through reclaim, what a queue of equal weight deserves.

Each job is one pod of 100m CPU asking for one GPU through a ResourceClaimTemplate, so CPU
never decides; pods carry no run-seconds annotation and run until deleted."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import devices
from models import labels
from scheduling.api.devices import device_dimension
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places and reclaims
GPUS = device_dimension(devices.DEVICE_CLASS)  # gpu.caldera.dev.deviceclass.resource.k8s.io/devices
SLOTS = 12  # the stack's GPUs
_G, _V = "scheduling.volcano.sh", "v1beta1"


def _queue(custom: client.CustomObjectsApi, name: str, **spec: Any) -> None:
    body = {
        "apiVersion": f"{_G}/{_V}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "parent": "root", "reclaimable": True, **spec},
    }
    custom.create_cluster_custom_object(_G, _V, "queues", body)


@pytest.fixture
def setup(api: client.ApiClient, namespace: str) -> Iterator[tuple[str, str, str]]:
    """The namespace with a one-GPU claim template, and two queues; all removed after (jobs
    first, then their claims are waited out, so later tests find every GPU free)."""
    resource, custom = client.ResourceV1Api(api), client.CustomObjectsApi(api)
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": devices.DEVICE_CLASS}}
                    ]
                }
            }
        },
    }
    resource.create_namespaced_resource_claim_template(namespace, template)
    suffix = uuid.uuid4().hex[:5]
    names = (f"a-{suffix}", f"b-{suffix}")
    yield namespace, *names
    for job in custom.list_namespaced_custom_object(*volcano.JOBS, namespace, "jobs")["items"]:
        custom.delete_namespaced_custom_object(
            *volcano.JOBS, namespace, "jobs", job["metadata"]["name"]
        )
    client.CoreV1Api(api).delete_collection_namespaced_pod(namespace, grace_period_seconds=0)

    def released() -> bool:
        listed = resource.list_namespaced_resource_claim(namespace)
        return not listed.items

    eventually(released, 90, "claims released")
    for name in names:
        custom.delete_cluster_custom_object(_G, _V, "queues", name)


def _submit(api: client.ApiClient, ns: str, name: str, queue: str) -> None:
    pod = volcano.template({})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    doc = make_job(name, namespace=ns).task("w", replicas=1, template=pod).spec(queue=queue)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, ns, "jobs", doc.manifest()
    )


def _holding(api: client.ApiClient, ns: str) -> Counter[str]:
    """Pods running on a node, not being deleted, by queue: each holds one GPU."""
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return Counter(
        p.metadata.labels.get(labels.QUEUE_NAME, "")
        for p in pods
        if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp
    )


def test_a_queue_capability_in_devices_stops_its_jobs_at_the_quota(
    api: client.ApiClient, setup: tuple[str, str, str]
) -> None:
    ns, capped, other = setup
    custom = client.CustomObjectsApi(api)
    _queue(custom, capped, capability={GPUS: "2"})
    _queue(custom, other)
    for i in range(3):
        _submit(api, ns, f"c{i}", capped)
    for i in range(2):
        _submit(api, ns, f"o{i}", other)
    eventually(
        lambda: _holding(api, ns) == Counter({capped: 2, other: 2}) or None,
        120,
        "two GPUs per queue",
    )
    # The third job of the capped queue waits, and its PodGroup says the queue is why.
    running = {
        p.metadata.name.rsplit("-w-", 1)[0]
        for p in client.CoreV1Api(api).list_namespaced_pod(ns).items
        if p.spec.node_name
    }
    (waiting,) = {"c0", "c1", "c2"} - running

    def why() -> str | None:
        groups = custom.list_namespaced_custom_object(_G, _V, ns, "podgroups")["items"]
        for group in groups:
            if group["metadata"]["name"].startswith(f"{waiting}-"):
                conditions = (group.get("status") or {}).get("conditions") or []
                return next((c["message"] for c in conditions if capped in c["message"]), None)
        return None

    eventually(why, 60, f"{waiting}'s PodGroup names queue {capped}")


def test_a_queue_holding_every_gpu_is_reclaimed_down_to_its_deserved_share(
    api: client.ApiClient, setup: tuple[str, str, str]
) -> None:
    ns, first, second = setup
    custom = client.CustomObjectsApi(api)
    _queue(custom, first)
    _queue(custom, second)
    for i in range(SLOTS):
        _submit(api, ns, f"a{i}", first)
    eventually(lambda: _holding(api, ns)[first] == SLOTS or None, 180, "every GPU taken")
    for i in range(SLOTS // 2):
        _submit(api, ns, f"b{i}", second)
    # Equal weights: each queue deserves six of the twelve GPUs.
    eventually(
        lambda: _holding(api, ns) == Counter({first: 6, second: 6}) or None,
        240,
        "six GPUs per queue",
    )
