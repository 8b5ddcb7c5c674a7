"""The rules about other pods give the same placements as kube-scheduler: the same pods go
through kube-scheduler (`default-scheduler`) on one pool of kwok nodes and through Caldera's
gang scheduler (`volcano`, as a Volcano Job) on an identical pool, and the placements are
compared up to the pools' node mapping: pods per node, pods per zone, who waits and why.

Each pool has four nodes, two per zone, labelled for this test only; each side's pods select
their pool by nodeSelector, so neither scheduler sees the other's pods as candidates."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import controlplane
from cli.devstack.nodes import NodeTemplate
from tests.builders import make_job
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler runs (schedulerName: volcano)
POOL = "caldera.dev/e2e-pool"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SIDES = ("kube", "caldera")
SCHEDULERS = {"kube": "default-scheduler", "caldera": "volcano"}


@dataclass(frozen=True)
class Pools:
    """Each side's pool label, and every pool node's zone."""

    label: dict[str, str]  # side -> POOL label value
    zone_of: dict[str, str]  # node -> zone


@pytest.fixture
def pools(api: client.ApiClient) -> Iterator[Pools]:
    token = uuid.uuid4().hex[:6]
    label: dict[str, str] = {}
    zone_of: dict[str, str] = {}
    for side in SIDES:
        label[side] = f"{side}-{token}"
        for zone in ("z1", "z2"):
            template = NodeTemplate(
                count=2,
                prefix=f"pp-{token}-{side}-{zone}",
                cpu="8",
                memory="32Gi",
                labels={POOL: label[side], ZONE: zone},
            )
            controlplane.ensure_nodes(api, template, timeout=60)
            zone_of.update(dict.fromkeys(template.names(), zone))
    yield Pools(label, zone_of)
    core = client.CoreV1Api(api)
    for name in zone_of:
        core.delete_node(name)


def _template(pools: Pools, side: str, app: str, **spec: Any) -> dict[str, Any]:
    ports = spec.pop("ports", None)
    container: dict[str, Any] = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": "100m"}},
    }
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    return {
        "metadata": {"labels": {"app": f"{app}-{side}"}},
        "spec": {
            "schedulerName": SCHEDULERS[side],
            "restartPolicy": "Never",
            "nodeSelector": {POOL: pools.label[side]},
            "containers": [container],
            **spec,
        },
    }


def _submit(
    api: client.ApiClient,
    ns: str,
    pools: Pools,
    app: str,
    replicas: int,
    min_available: int,
    spec: Callable[[str], dict[str, Any]],
) -> None:
    """`replicas` plain pods for kube-scheduler; a Volcano Job of as many for Caldera."""
    core = client.CoreV1Api(api)
    for i in range(replicas):
        pod = _template(pools, "kube", app, **spec("kube"))
        pod["metadata"]["name"] = f"{app}-kube-{i}"
        core.create_namespaced_pod(ns, pod)  # type: ignore[arg-type]
    doc = (
        make_job(f"{app}-caldera", namespace=ns)
        .task("w", replicas=replicas, template=_template(pools, "caldera", app, **spec("caldera")))
        .spec(minAvailable=min_available)
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc
    )


def _pods(api: client.ApiClient, ns: str, app: str, side: str) -> list[client.V1Pod]:
    return [
        p
        for p in client.CoreV1Api(api).list_namespaced_pod(ns).items
        if (p.metadata.labels or {}).get("app") == f"{app}-{side}"
    ]


def _waiting_message(pod: client.V1Pod) -> str | None:
    for condition in (pod.status.conditions or []) if pod.status else []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return str(condition.message or "") or None
    return None


def _settled(
    api: client.ApiClient, ns: str, app: str, side: str, replicas: int, placed: int
) -> list[client.V1Pod] | None:
    """All pods exist, `placed` of them have a node and every other one says why it waits."""
    pods = _pods(api, ns, app, side)
    if len(pods) != replicas:
        return None
    bound = [p for p in pods if p.spec.node_name]
    waiting = [p for p in pods if not p.spec.node_name and _waiting_message(p)]
    return pods if len(bound) == placed and len(waiting) == replicas - placed else None


def _both(
    api: client.ApiClient, ns: str, app: str, replicas: int, placed: int
) -> dict[str, list[client.V1Pod]]:
    return {
        side: eventually(
            lambda s=side: _settled(api, ns, app, s, replicas, placed),
            90,
            f"{app} on {side}: {placed} of {replicas} placed, the rest waiting with a reason",
        )
        for side in SIDES
    }


def _per_node(pods: list[client.V1Pod]) -> list[int]:
    return sorted(Counter(p.spec.node_name for p in pods if p.spec.node_name).values())


def _per_zone(pools: Pools, pods: list[client.V1Pod]) -> list[int]:
    return sorted(
        Counter(pools.zone_of[p.spec.node_name] for p in pods if p.spec.node_name).values()
    )


def test_required_anti_affinity_one_per_node(
    api: client.ApiClient, namespace: str, pools: Pools
) -> None:
    def spec(side: str) -> dict[str, Any]:
        term = {"labelSelector": {"matchLabels": {"app": f"one-{side}"}}, "topologyKey": HOST}
        return {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        }

    _submit(api, namespace, pools, "one", replicas=3, min_available=3, spec=spec)
    placed = _both(api, namespace, "one", replicas=3, placed=3)
    assert _per_node(placed["kube"]) == _per_node(placed["caldera"]) == [1, 1, 1]


def test_topology_spread_across_zones(api: client.ApiClient, namespace: str, pools: Pools) -> None:
    def spec(side: str) -> dict[str, Any]:
        constraint = {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": f"spread-{side}"}},
        }
        return {"topologySpreadConstraints": [constraint]}

    _submit(api, namespace, pools, "spread", replicas=6, min_available=6, spec=spec)
    placed = _both(api, namespace, "spread", replicas=6, placed=6)
    assert _per_zone(pools, placed["kube"]) == _per_zone(pools, placed["caldera"]) == [3, 3]


def test_host_port_conflict(api: client.ApiClient, namespace: str, pools: Pools) -> None:
    # Five pods wanting host port 8080 on four nodes: one each, and the fifth waits.
    _submit(
        api, namespace, pools, "port", replicas=5, min_available=4, spec=lambda _: {"ports": [8080]}
    )
    placed = _both(api, namespace, "port", replicas=5, placed=4)
    assert _per_node(placed["kube"]) == _per_node(placed["caldera"]) == [1, 1, 1, 1]
    reason = "4 node(s) didn't have free ports for the requested pod ports"
    for side in SIDES:
        [waiting] = [p for p in placed[side] if not p.spec.node_name]
        assert reason in (_waiting_message(waiting) or ""), (side, _waiting_message(waiting))
