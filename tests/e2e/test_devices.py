"""DRA on the real stack: Volcano Jobs whose tasks ask for GPUs of the fake driver
`gpu.caldera.dev` through ResourceClaimTemplates. kube-controller-manager makes the claims,
Caldera's gang scheduler allocates their devices and writes them into the claims' status
before it binds the pods; a gang that cannot get every member's devices gets none; bad input
is named on the PodGroup and the job waits. The parity cases give kube-scheduler
(`default-scheduler`) the same pods and compare the devices it allocates, or its refusal.

The stack's three nodes publish four GPUs each (indexes 0-3); each test cleans up its pods, so
the next finds every GPU free once the claims are gone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from temporalio.client import Client

from cli.devstack import devices
from models import keys
from scheduling.plugins.dynamicresources import CANNOT_ALLOCATE
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the Volcano Jobs' pods
INDEX = 'device.attributes["gpu.caldera.dev"].index'


def _template(api: client.ApiClient, ns: str, name: str, count: int = 1, **exactly: Any) -> str:
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": devices.DEVICE_CLASS,
                                "count": count,
                                **exactly,
                            },
                        }
                    ]
                }
            }
        },
    }
    client.ResourceV1Api(api).create_namespaced_resource_claim_template(ns, body)
    return name


def _pod_template(template: str, scheduler: str = "volcano") -> dict[str, Any]:
    pod = volcano.template({volcano.RUN: "600"})
    pod["spec"]["schedulerName"] = scheduler
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def _submit(api: client.ApiClient, ns: str, name: str, template: str, replicas: int) -> None:
    doc = (
        make_job(name, namespace=ns)
        .task("w", replicas=replicas, template=_pod_template(template))
        .spec(minAvailable=replicas)
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(*volcano.JOBS, ns, "jobs", doc)


def _claims(api: client.ApiClient, ns: str) -> list[dict[str, Any]]:
    listed = client.ResourceV1Api(api).list_namespaced_resource_claim(ns, _preload_content=False)
    return list(devices._json(listed)["items"])


def _allocated(claim: dict[str, Any]) -> list[str]:
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {})
    return [f"{r['pool']}/{r['device']}" for r in results.get("results", [])]


def _group_message(api: client.ApiClient, ns: str) -> str | None:
    groups = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", ns, "podgroups"
    )["items"]
    for group in groups:
        for condition in (group.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Unschedulable" and condition.get("message"):
                return str(condition["message"])
    return None


@pytest.fixture
def gpus(api: client.ApiClient, namespace: str) -> Iterator[str]:
    """The namespace; at the end its jobs and pods are deleted and their claims waited out, so
    the next test finds every GPU free."""
    yield namespace
    custom = client.CustomObjectsApi(api)
    for job in custom.list_namespaced_custom_object(*volcano.JOBS, namespace, "jobs")["items"]:
        custom.delete_namespaced_custom_object(
            *volcano.JOBS, namespace, "jobs", job["metadata"]["name"]
        )
    eventually(
        lambda: (
            not custom.list_namespaced_custom_object(*volcano.JOBS, namespace, "jobs")["items"]
            or None
        ),
        60,
        "jobs gone",
    )
    client.CoreV1Api(api).delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    eventually(lambda: not _claims(api, namespace) or None, 60, "claims released")


async def test_a_job_gets_one_device_per_pod_recorded_in_its_claims_and_history(
    api: client.ApiClient, gpus: str, e2e_stack: E2EStack
) -> None:
    template = _template(api, gpus, "one-gpu")
    started = datetime.now(UTC)
    _submit(api, gpus, "train", template, replicas=2)
    volcano.phase_becomes(api, gpus, "train", "Running", timeout=120)
    pods = {p.metadata.name: p for p in client.CoreV1Api(api).list_namespaced_pod(gpus).items}
    claims = _claims(api, gpus)
    assert len(claims) == 2
    seen = set()
    for claim in claims:
        (device,) = _allocated(claim)
        (reserved,) = claim["status"]["reservedFor"]
        pod = pods[reserved["name"]]
        assert reserved["uid"] == pod.metadata.uid
        assert device.startswith(f"{pod.spec.node_name}/gpu-")  # the pool is the node
        seen.add(device)
    assert len(seen) == 2  # no device given twice
    # The scheduler's history records each decision: the claim and the device it got.
    temporal = await Client.connect(e2e_stack.temporal_address)
    recorded: list[bytes] = []
    runs = temporal.list_workflows(f'WorkflowId = "{keys.scheduler_workflow_id("volcano")}"')
    async for run in runs:  # newest first: the scheduler may have continued as new since
        handle = temporal.get_workflow_handle(run.id, run_id=run.run_id)
        recorded += [e.SerializeToString() for e in (await handle.fetch_history()).events]
        if run.start_time < started:
            break  # this run began before the job: older runs cannot hold its decision
    for claim in claims:
        name, device = claim["metadata"]["name"], _allocated(claim)[0].split("/")[1]
        assert any(name.encode() in e and device.encode() in e for e in recorded), name


def test_a_gang_that_cannot_get_every_members_devices_gets_none(
    api: client.ApiClient, gpus: str
) -> None:
    """Four pods of four GPUs each on three nodes of four: three would fit, the gang needs
    four, so no claim is allocated and the PodGroup says why."""
    template = _template(api, gpus, "four-gpus", count=4)
    _submit(api, gpus, "big", template, replicas=4)
    message = eventually(
        lambda: (m := _group_message(api, gpus)) and CANNOT_ALLOCATE in m and m, 120, "why"
    )
    assert "of class gpu.caldera.dev" in message
    assert len(_claims(api, gpus)) == 4
    assert all(not _allocated(c) for c in _claims(api, gpus))


def test_a_missing_device_class_is_named_and_the_job_waits(
    api: client.ApiClient, gpus: str
) -> None:
    template = _template(api, gpus, "typo", deviceClassName="gpu.caldera.dev-typo")
    _submit(api, gpus, "typo", template, replicas=1)
    message = eventually(
        lambda: (m := _group_message(api, gpus)) and "deviceClassName" in m and m, 120, "why"
    )
    assert 'deviceClassName: DeviceClass "gpu.caldera.dev-typo" not found' in message
    assert volcano.job(api, gpus, "typo")["status"]["state"]["phase"] == "Pending"


def _kube_pod(api: client.ApiClient, ns: str, name: str, template: str) -> None:
    pod = _pod_template(template, scheduler="default-scheduler")
    pod["metadata"]["name"] = name
    client.CoreV1Api(api).create_namespaced_pod(ns, {"apiVersion": "v1", "kind": "Pod", **pod})


def _devices_of(api: client.ApiClient, ns: str) -> list[str]:
    """The device names the namespace's claims got (without the node: the schedulers may
    pick different nodes with the same devices)."""
    return sorted(d.split("/")[1] for c in _claims(api, ns) for d in _allocated(c))


@pytest.mark.parametrize(
    ("count", "selector"),
    [(2, f"{INDEX} >= 2"), (3, f"{INDEX} != 1"), (1, f"{INDEX} == 3")],
    ids=["two-high", "three-not-one", "the-last"],
)
def test_the_same_devices_as_kube_scheduler(
    api: client.ApiClient, gpus: str, count: int, selector: str
) -> None:
    template = _template(
        api, gpus, "pick", count=count, selectors=[{"cel": {"expression": selector}}]
    )
    _kube_pod(api, gpus, "kube", template)
    kube = eventually(lambda: _devices_of(api, gpus) or None, 60, "kube-scheduler's devices")
    client.CoreV1Api(api).delete_namespaced_pod("kube", gpus, grace_period_seconds=0)
    eventually(lambda: not _claims(api, gpus) or None, 60, "kube's claim released")
    _submit(api, gpus, "caldera", template, replicas=1)
    ours = eventually(lambda: _devices_of(api, gpus) or None, 120, "Caldera's devices")
    assert ours == kube


def test_the_same_refusal_as_kube_scheduler(api: client.ApiClient, gpus: str) -> None:
    """Five GPUs on nodes of four: kube-scheduler and Caldera both leave the pod waiting with
    `cannot allocate all claims` for every node."""
    template = _template(api, gpus, "five", count=5)
    _kube_pod(api, gpus, "kube", template)

    def kube_reason() -> str | None:
        pod = client.CoreV1Api(api).read_namespaced_pod("kube", gpus)
        found = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
        return found[0].message if found and found[0].message else None

    kube = eventually(kube_reason, 60, "kube-scheduler's reason")
    _submit(api, gpus, "caldera", template, replicas=1)
    # First the claim is waited for (the controller makes it after the pod), then the devices.
    ours = eventually(
        lambda: (m := _group_message(api, gpus)) and CANNOT_ALLOCATE in m and m,
        120,
        "Caldera's reason",
    )
    assert f"3 {CANNOT_ALLOCATE}" in kube, kube
    assert f"3 {CANNOT_ALLOCATE}" in ours, ours
    assert all(not _allocated(c) for c in _claims(api, gpus))
