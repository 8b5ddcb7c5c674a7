"""The rules about other pods give the same placements as kube-scheduler: the same pods go
through kube-scheduler (`default-scheduler`) on one pool of kwok nodes and through Caldera's
gang scheduler (`volcano`, as a Volcano Job) on an identical pool, and the placements are
compared up to the pools' node mapping: pods per node, pods per zone, who waits and why.

Each pool has four nodes, two per zone, labelled for this test only; each side's pods select
their pool by nodeSelector, so neither scheduler sees the other's pods as candidates. A test
may give a zone's nodes taints, cordon them or give them a CSINode with a volume count
(`pools` parametrized indirectly with `Zone`s).

The rules about the node alone (required and preferred node affinity, taints, cordons) are
checked with outcomes no tie decides: pods sized so that capacity, or a score difference of
hundreds of points, fixes which zone they go to, and the reasons of the pods left waiting are
compared as kube's histogram ("0/N nodes are available: 2 Insufficient cpu, ...")."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import controlplane
from cli.devstack.nodes import NodeTemplate, Taint
from tests.builders import make_job
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler runs (schedulerName: volcano)
POOL = "caldera.dev/e2e-pool"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SIDES = ("kube", "caldera")
SCHEDULERS = {"kube": "default-scheduler", "caldera": "volcano"}
DEDICATED = Taint(key="caldera.dev/e2e-dedicated", value="infra")  # NoSchedule
# 3 cpu on 8-cpu nodes: two pods fill a node, so a zone holds four.
LARGE = "3"
INSUFFICIENT_CPU = "Insufficient cpu"
DRIVER = "csi.caldera.dev"  # a CSI driver named for this test; nothing runs it
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"


@dataclass(frozen=True)
class Zone:
    """How one zone's pool nodes differ from the plain ones, on both sides."""

    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # cordoned: spec.unschedulable, patched after creation
    volume_count: int | None = None  # a CSINode allowing this many `DRIVER` volumes


@dataclass(frozen=True)
class Pools:
    """Each side's pool label, and every pool node's zone."""

    label: dict[str, str]  # side -> POOL label value
    zone_of: dict[str, str]  # node -> zone


@pytest.fixture
def pools(api: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[Pools]:
    """Both pools; `request.param`, when given, maps a zone to how its nodes differ."""
    zones: dict[str, Zone] = getattr(request, "param", {})
    token = uuid.uuid4().hex[:6]
    core = client.CoreV1Api(api)
    label: dict[str, str] = {}
    zone_of: dict[str, str] = {}
    for side in SIDES:
        label[side] = f"{side}-{token}"
        for zone in ("z1", "z2"):
            extra = zones.get(zone, Zone())
            template = NodeTemplate(
                count=2,
                prefix=f"pp-{token}-{side}-{zone}",
                cpu="8",
                memory="32Gi",
                labels={POOL: label[side], ZONE: zone},
                taints=extra.taints,
            )
            controlplane.ensure_nodes(api, template, timeout=60)
            zone_of.update(dict.fromkeys(template.names(), zone))
            if extra.unschedulable:
                for name in template.names():
                    core.patch_node(name, {"spec": {"unschedulable": True}})
            if extra.volume_count is not None:
                for name in template.names():
                    _csi_node(api, name, extra.volume_count)
    yield Pools(label, zone_of)
    storage = client.StorageV1Api(api)
    for name in zone_of:
        core.delete_node(name)
        if any(z.volume_count is not None for z in zones.values()):
            _absent(lambda n=name: storage.delete_csi_node(n))


def _absent(delete: Callable[[], object]) -> None:
    try:
        delete()
    except client.ApiException as e:
        if e.status != 404:
            raise


def _csi_node(api: client.ApiClient, node: str, count: int) -> None:
    """What a kubelet with `DRIVER` registered writes: the driver's volume count on the node."""
    driver = {"name": DRIVER, "nodeID": node, "allocatable": {"count": count}}
    client.StorageV1Api(api).create_csi_node(  # type: ignore[arg-type]
        {"metadata": {"name": node}, "spec": {"drivers": [driver]}}
    )


def _template(pools: Pools, side: str, app: str, **spec: Any) -> dict[str, Any]:
    ports = spec.pop("ports", None)
    container: dict[str, Any] = {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"cpu": spec.pop("cpu", "100m")}},
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
    return sorted(_zones(pools, pods).values())


def _zones(pools: Pools, pods: list[client.V1Pod]) -> dict[str, int]:
    """Placed pods per zone, by zone name: for rules that pick a zone, not only a spread."""
    return dict(Counter(pools.zone_of[p.spec.node_name] for p in pods if p.spec.node_name))


def _reasons(message: str) -> tuple[str, dict[str, int]]:
    """kube's FitError text as its head ("0/11") and reason -> node count; the preemption
    sentence kube-scheduler appends ("... preemption: 0/11 nodes ...") is left off."""
    head, _, rest = message.partition(" nodes are available: ")
    histogram = rest.split(". preemption:")[0].rstrip(".")
    parts = (part.partition(" ") for part in histogram.split(", ") if part)
    return head, {reason: int(count) for count, _, reason in parts}


def _waiting_reasons(pods: list[client.V1Pod]) -> list[tuple[str, dict[str, int]]]:
    """The parsed reason of every waiting pod."""
    return [_reasons(message) for p in pods if (message := _waiting_message(p))]


def _assert_waiting(placed: dict[str, list[client.V1Pod]], *phrases: str) -> None:
    """Every waiting pod on both sides accounts for the same N nodes ("0/N", counts summing
    to N) and has a reason containing each phrase. The counts behind a reason are not
    compared: a node failing two rules counts under kube-scheduler's first failing filter
    (node rules before resources) but under Caldera's resource fit when that fails (Volcano's
    allocate checks resources first), and each side's pods also see the other pool's nodes,
    full or tainted. A phrase may be a part of a reason."""
    parsed = {side: _waiting_reasons(placed[side]) for side in SIDES}
    heads = {head for found in parsed.values() for head, _ in found}
    assert len(heads) == 1, parsed
    [head] = heads
    for side, found in parsed.items():
        for _, histogram in found:
            assert f"0/{sum(histogram.values())}" == head, (side, head, histogram)
            for phrase in phrases:
                assert any(phrase in reason for reason in histogram), (side, phrase, histogram)


def _large(**spec: Any) -> Callable[[str], dict[str, Any]]:
    """The same spec on both sides, with pods of `LARGE` cpu: two fill a node."""
    return lambda _: {"cpu": LARGE, **spec}


def _required(*expressions: dict[str, Any]) -> dict[str, Any]:
    term = {"matchExpressions": list(expressions)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


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


@pytest.mark.parametrize(
    "expressions",
    [
        pytest.param(
            (
                {"key": ZONE, "operator": "In", "values": ["z1"]},
                {"key": POOL, "operator": "Exists"},
            ),
            id="in-exists",
        ),
        pytest.param(
            (
                {"key": ZONE, "operator": "NotIn", "values": ["z2"]},
                {"key": ZONE, "operator": "Exists"},
            ),
            id="notin-exists",
        ),
    ],
)
def test_required_node_affinity_fills_zone_rest_wait(
    api: client.ApiClient,
    namespace: str,
    pools: Pools,
    expressions: tuple[dict[str, Any], ...],
) -> None:
    # Six pods for z1's room of four: four go there, two per node, and two wait for it.
    spec = _large(affinity=_required(*expressions))
    _submit(api, namespace, pools, "zone", replicas=6, min_available=4, spec=spec)
    placed = _both(api, namespace, "zone", replicas=6, placed=4)
    assert _zones(pools, placed["kube"]) == _zones(pools, placed["caldera"]) == {"z1": 4}
    assert _per_node(placed["kube"]) == _per_node(placed["caldera"]) == [2, 2]
    _assert_waiting(placed, INSUFFICIENT_CPU, AFFINITY_MISMATCH)


@pytest.mark.parametrize(
    "pools", [pytest.param({"z1": Zone(taints=(DEDICATED,))}, id="z1-tainted")], indirect=True
)
def test_no_schedule_taint_untolerated_avoid_tolerating_use(
    api: client.ApiClient, namespace: str, pools: Pools
) -> None:
    # z1 is tainted: of six pods that do not tolerate it, z2 takes four and two wait.
    _submit(api, namespace, pools, "plain", replicas=6, min_available=4, spec=_large())
    placed = _both(api, namespace, "plain", replicas=6, placed=4)
    assert _zones(pools, placed["kube"]) == _zones(pools, placed["caldera"]) == {"z2": 4}
    _assert_waiting(placed, INSUFFICIENT_CPU, "node(s) had untolerated taint(s)")
    # Pods that tolerate it go to z1, the only room left.
    toleration = {"key": DEDICATED.key, "operator": "Equal", "value": DEDICATED.value}
    spec = _large(tolerations=[{**toleration, "effect": "NoSchedule"}])
    _submit(api, namespace, pools, "tolerant", replicas=4, min_available=4, spec=spec)
    placed = _both(api, namespace, "tolerant", replicas=4, placed=4)
    assert _zones(pools, placed["kube"]) == _zones(pools, placed["caldera"]) == {"z1": 4}


@pytest.mark.parametrize(
    "pools",
    [
        pytest.param(
            {"z1": Zone(taints=(Taint(key=DEDICATED.key, effect="PreferNoSchedule"),))},
            id="z1-prefer-no-schedule",
        )
    ],
    indirect=True,
)
def test_prefer_no_schedule_taint_steers_to_other_zone(
    api: client.ApiClient, namespace: str, pools: Pools
) -> None:
    # Four small pods, all of which fit in z2: the taint score (3 x 100) decides.
    _submit(api, namespace, pools, "soft", replicas=4, min_available=4, spec=lambda _: {})
    placed = _both(api, namespace, "soft", replicas=4, placed=4)
    assert _zones(pools, placed["kube"]) == _zones(pools, placed["caldera"]) == {"z2": 4}


def test_preferred_node_affinity_steers_to_zone(
    api: client.ApiClient, namespace: str, pools: Pools
) -> None:
    # Weight 100 for z2: the node affinity score (2 x 100) decides for four small pods.
    term = {
        "weight": 100,
        "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z2"]}]},
    }
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}
    _submit(
        api,
        namespace,
        pools,
        "prefer",
        replicas=4,
        min_available=4,
        spec=lambda _: {"affinity": affinity},
    )
    placed = _both(api, namespace, "prefer", replicas=4, placed=4)
    assert _zones(pools, placed["kube"]) == _zones(pools, placed["caldera"]) == {"z2": 4}


@pytest.mark.parametrize(
    "pools", [pytest.param({"z1": Zone(unschedulable=True)}, id="z1-cordoned")], indirect=True
)
def test_cordoned_nodes_avoided(api: client.ApiClient, namespace: str, pools: Pools) -> None:
    # z1 is cordoned: z2 takes four of six pods and two wait.
    _submit(api, namespace, pools, "cordon", replicas=6, min_available=4, spec=_large())
    placed = _both(api, namespace, "cordon", replicas=6, placed=4)
    assert _zones(pools, placed["kube"]) == _zones(pools, placed["caldera"]) == {"z2": 4}
    _assert_waiting(placed, INSUFFICIENT_CPU, "node(s) were unschedulable")


def _bound_claims(api: client.ApiClient, ns: str, names: list[str]) -> list[str]:
    """A claim per name, each pre-bound to a CSI PV of its own; waits until all are Bound.
    The driver needs no attach, so no VolumeAttachment stands in for a pod's volume."""
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    try:
        storage.create_csi_driver(  # type: ignore[arg-type]
            {"metadata": {"name": DRIVER}, "spec": {"attachRequired": False}}
        )
    except client.ApiException as e:
        if e.status != 409:
            raise
    volumes = []
    for name in names:
        pv = f"{ns}-{name}"
        core.create_persistent_volume(  # type: ignore[arg-type]
            {
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "csi": {"driver": DRIVER, "volumeHandle": pv},
                    "claimRef": {"namespace": ns, "name": name},
                    "persistentVolumeReclaimPolicy": "Retain",
                },
            }
        )
        volumes.append(pv)
        core.create_namespaced_persistent_volume_claim(  # type: ignore[arg-type]
            ns,
            {
                "metadata": {"name": name},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "volumeName": pv,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
    for name in names:
        eventually(
            lambda n=name: (
                core.read_namespaced_persistent_volume_claim(n, ns).status.phase == "Bound"
            ),
            60,
            f"claim {name} Bound to its PV",
        )
    return volumes


@pytest.mark.parametrize(
    "pools",
    [pytest.param({"z1": Zone(volume_count=1), "z2": Zone(volume_count=1)}, id="one-each")],
    indirect=True,
)
def test_volume_count_limit_one_volume_per_node(
    api: client.ApiClient, namespace: str, pools: Pools
) -> None:
    # Every node's CSINode allows one volume of the driver: five pods, each with a claim of
    # its own, take one node each and the fifth waits.
    replicas = 5
    claims = {side: [f"data-{side}-{i}" for i in range(replicas)] for side in SIDES}
    volumes = _bound_claims(api, namespace, claims["kube"] + claims["caldera"])
    try:
        core = client.CoreV1Api(api)
        for i, claim in enumerate(claims["kube"]):
            pod = _template(pools, "kube", "vol", volumes=[_claim_volume(claim)])
            pod["metadata"]["name"] = f"vol-kube-{i}"
            core.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
        job = make_job("vol-caldera", namespace=namespace).spec(minAvailable=replicas - 1)
        for i, claim in enumerate(claims["caldera"]):
            template = _template(pools, "caldera", "vol", volumes=[_claim_volume(claim)])
            job = job.task(f"w{i}", replicas=1, template=template)
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", job.manifest()
        )
        placed = _both(api, namespace, "vol", replicas=replicas, placed=replicas - 1)
        assert _per_node(placed["kube"]) == _per_node(placed["caldera"]) == [1, 1, 1, 1]
        reason = "4 node(s) exceed max volume count"
        for side in SIDES:
            [waiting] = [p for p in placed[side] if not p.spec.node_name]
            assert reason in (_waiting_message(waiting) or ""), (side, _waiting_message(waiting))
    finally:
        client.CustomObjectsApi(api).delete_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", "vol-caldera"
        )
        for pv in volumes:
            _absent(lambda v=pv: client.CoreV1Api(api).delete_persistent_volume(v))


def _claim_volume(claim: str) -> dict[str, Any]:
    return {"name": "data", "persistentVolumeClaim": {"claimName": claim}}
