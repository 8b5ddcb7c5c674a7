"""Gangs kept within HyperNodes: a Volcano Job's networkTopology reaches its PodGroup and the
scheduler places the gang inside one HyperNode of the allowed tier, or keeps it waiting and
says why; a task's partitionPolicy becomes the PodGroup's subGroupPolicy and each partition is
kept inside a HyperNode of its own.

Six kwok nodes of this test only (8 cpu each, one 6-cpu pod per node), two per rack:
racks r0 r1 r2 (tier 1, tierName rack), r0 and r1 under spine s0, r2 under s1 (tier 2).
Every job selects these nodes by label, so nothing else in the cluster is a candidate."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import controlplane
from cli.devstack.nodes import NodeTemplate
from models import topology
from models.labels import PARTITION_ID
from tests.builders import make_job
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler runs (schedulerName: volcano)
POOL = "caldera.dev/e2e-topology"


@dataclass(frozen=True)
class Fabric:
    pool: str
    rack_of: dict[str, str]  # node -> rack HyperNode
    spine_of: dict[str, str]  # node -> spine HyperNode


def _hyper_node(name: str, tier: int, tier_name: str, kind: str, members: list[str]) -> Any:
    return {
        "apiVersion": topology.API_VERSION,
        "kind": topology.KIND,
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "tierName": tier_name,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


def _gone(api: client.ApiClient, ns: str) -> bool:
    """No Volcano Job, PodGroup or pod of the test is left (a waiting gang's PodGroup holds its
    minResources at enqueue for every later test until it goes)."""
    custom = client.CustomObjectsApi(api)
    for group, version, plural in (
        ("batch.volcano.sh", "v1alpha1", "jobs"),
        ("scheduling.volcano.sh", "v1beta1", "podgroups"),
    ):
        listed: Any = custom.list_namespaced_custom_object(group, version, ns, plural)
        if listed["items"]:
            return False
    return not client.CoreV1Api(api).list_namespaced_pod(ns).items


@pytest.fixture
def fabric(api: client.ApiClient, namespace: str) -> Iterator[Fabric]:
    token = uuid.uuid4().hex[:6]
    custom = client.CustomObjectsApi(api)
    pool = f"topo-{token}"
    template = NodeTemplate(
        count=6, prefix=f"nt-{token}", cpu="8", memory="32Gi", labels={POOL: pool}
    )
    controlplane.ensure_nodes(api, template, timeout=60)
    nodes = template.names()
    racks = {f"r{i}-{token}": nodes[2 * i : 2 * i + 2] for i in range(3)}
    spines = {f"s0-{token}": list(racks)[:2], f"s1-{token}": list(racks)[2:]}
    objects = [_hyper_node(r, 1, "rack", "Node", m) for r, m in racks.items()]
    objects += [_hyper_node(s, 2, "spine", "HyperNode", m) for s, m in spines.items()]
    for obj in objects:
        custom.create_cluster_custom_object(topology.GROUP, topology.VERSION, topology.PLURAL, obj)
    rack_of = {n: r for r, members in racks.items() for n in members}
    spine_of = {n: s for s, members in spines.items() for r in members for n in racks[r]}
    yield Fabric(pool, rack_of, spine_of)
    listed: Any = custom.list_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs"
    )
    for job in listed["items"]:
        custom.delete_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", job["metadata"]["name"]
        )
    eventually(lambda: _gone(api, namespace), 90, "the test's jobs, PodGroups and pods gone")
    for obj in objects:
        custom.delete_cluster_custom_object(
            topology.GROUP, topology.VERSION, topology.PLURAL, obj["metadata"]["name"]
        )
    core = client.CoreV1Api(api)
    for name in nodes:
        core.delete_node(name)


def _submit(
    api: client.ApiClient,
    ns: str,
    fabric: Fabric,
    name: str,
    replicas: int,
    network: Any = None,  # None: the job names no network topology
    node: str | None = None,  # None: any node of the test's pool
    **task: Any,
) -> None:
    selector = {POOL: fabric.pool} if node is None else {"kubernetes.io/hostname": node}
    template = {
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": selector,
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "6"}}}
            ],
        }
    }
    job = make_job(name, namespace=ns).task("w", replicas=replicas, template=template, **task)
    doc = job.spec(minAvailable=replicas).manifest()
    if network is not None:
        doc["spec"]["networkTopology"] = network
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc
    )


def _bound(api: client.ApiClient, ns: str, job: str, count: int) -> list[str] | None:
    pods = client.CoreV1Api(api).list_namespaced_pod(
        ns, label_selector=f"volcano.sh/job-name={job}"
    )
    nodes = [p.spec.node_name for p in pods.items if p.spec and p.spec.node_name]
    return nodes if len(nodes) == count else None


def _pod_group(api: client.ApiClient, ns: str, job: str) -> dict[str, Any] | None:
    listed: Any = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", ns, "podgroups"
    )
    groups: list[dict[str, Any]] = listed["items"]
    owned = [
        g
        for g in groups
        if any(r.get("name") == job for r in g["metadata"].get("ownerReferences", []))
    ]
    return owned[0] if owned else None


def _unschedulable(api: client.ApiClient, ns: str, job: str) -> str | None:
    group = _pod_group(api, ns, job)
    for condition in ((group or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
            return str(condition.get("message") or "")
    return None


def test_a_tier_1_gang_is_kept_in_one_rack_and_one_too_big_for_a_rack_waits(
    api: client.ApiClient, namespace: str, fabric: Fabric
) -> None:
    _submit(api, namespace, fabric, "pair", 2, {"mode": "hard", "highestTierAllowed": 1})
    nodes = eventually(lambda: _bound(api, namespace, "pair", 2), 90, "pair bound")
    assert len({fabric.rack_of[n] for n in nodes}) == 1
    group = _pod_group(api, namespace, "pair")
    assert group is not None
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}

    _submit(api, namespace, fabric, "trio", 3, {"mode": "hard", "highestTierAllowed": 1})
    # A session may first see the gang before slow start made all three pods ("not enough
    # valid pods"): wait for the verdict on the whole gang.
    refusal = "no HyperNode of tier 1 or lower has room for the gang"

    def refused() -> str | None:
        message = _unschedulable(api, namespace, "trio")
        return message if message and refusal in message else None

    message = eventually(refused, 90, "trio refused")
    assert refusal in message
    assert _bound(api, namespace, "trio", 0) == []


def test_a_gang_allowed_to_cross_racks_by_tier_name_stays_in_one_spine(
    api: client.ApiClient, namespace: str, fabric: Fabric
) -> None:
    _submit(api, namespace, fabric, "quad", 4, {"mode": "hard", "highestTierName": "spine"})
    nodes = eventually(lambda: _bound(api, namespace, "quad", 4), 90, "quad bound")
    assert len({fabric.spine_of[n] for n in nodes}) == 1
    assert len(set(nodes)) == 4


def test_a_soft_gang_bigger_than_any_hyper_node_still_runs(
    api: client.ApiClient, namespace: str, fabric: Fabric
) -> None:
    _submit(api, namespace, fabric, "wide", 5, {"mode": "soft"})
    nodes = eventually(lambda: _bound(api, namespace, "wide", 5), 90, "wide bound")
    assert len(set(nodes)) == 5


def test_each_partition_of_a_job_is_kept_in_a_rack_of_its_own(
    api: client.ApiClient, namespace: str, fabric: Fabric
) -> None:
    """Volcano's job controller (job_controller_actions.go getSubGroupPolicy) writes a task's
    partitionPolicy as the PodGroup's subGroupPolicy and labels each pod with its partition;
    its allocate (allocateForSubJob) keeps each partition within its own tier. One 6-cpu pod
    per node and one node of rack 0 taken: each partition of two needs a rack with both nodes
    free, so the partitions go to racks 1 and 2 (a gang placed pod by pod would have taken
    the free node of rack 0 and split its first partition)."""
    nodes = sorted(fabric.rack_of)
    _submit(api, namespace, fabric, "busy", 1, node=nodes[1])
    eventually(lambda: _bound(api, namespace, "busy", 1), 90, "busy bound")
    partitions = {
        "totalPartitions": 2,
        "partitionSize": 2,
        "minPartitions": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    _submit(api, namespace, fabric, "parts", 4, partitionPolicy=partitions)
    eventually(lambda: _bound(api, namespace, "parts", 4), 90, "parts bound")
    group = _pod_group(api, namespace, "parts")
    assert group is not None
    [policy] = group["spec"]["subGroupPolicy"]
    assert policy["subGroupSize"] == 2 and policy["minSubGroups"] == 2
    assert policy["matchLabelKeys"] == [PARTITION_ID]
    assert policy["networkTopology"]["highestTierAllowed"] == 1
    pods = client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector="volcano.sh/job-name=parts"
    )
    racks: dict[str, set[str]] = {}
    for pod in pods.items:
        partition = ((pod.metadata.labels if pod.metadata else None) or {})[PARTITION_ID]
        node = pod.spec.node_name if pod.spec else None
        assert node is not None
        racks.setdefault(partition, set()).add(fabric.rack_of[node])
    rack0 = fabric.rack_of[nodes[0]]
    assert sorted(racks) == ["0", "1"]
    assert all(len(r) == 1 for r in racks.values()), racks
    assert len(racks["0"] | racks["1"]) == 2 and rack0 not in racks["0"] | racks["1"], racks
