"""The volume plan of a placed pod: a static PV per unbound claim, else provisioning."""

from __future__ import annotations

from typing import Any

import pytest

from models.signals.scheduler import VolumePlan
from scheduling.cache.volumes import Storage, StorageClass, volume_plan
from tests.unit.scheduling.cache_builders import claim, pod, pv, storage_class

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
CLASSES = [
    storage_class("fast", "csi.example.com"),
    storage_class("static", "kubernetes.io/no-provisioner"),
]

PLANS = [
    pytest.param([], [], [], [], id="no-claims"),
    pytest.param(["data"], [], [pv("pv1")], [], id="claim-not-in-cache"),
    pytest.param(
        ["data"], [claim("data", bound_to="pv0")], [pv("pv1")], [], id="claim-already-bound"
    ),
    pytest.param(
        ["data"],
        [claim("data", namespace="other")],
        [pv("pv1")],
        [],
        id="same-name-other-namespace",
    ),
    pytest.param(
        ["data"], [claim("data")], [pv("pv1")], [("data", "pv1")], id="no-class-matches-no-class"
    ),
    pytest.param(
        ["data"],
        [claim("data", "fast")],
        [pv("pv-b", "fast"), pv("pv-a", "fast"), pv("pv-0", "slow")],
        [("data", "pv-a")],
        id="first-by-name-of-its-class",
    ),
    pytest.param(
        ["data"],
        [claim("data", "static")],
        [pv("pv0", "static", phase="Bound"), pv("pv1", "static", phase="Released")],
        [],
        id="only-available-pvs",
    ),
    pytest.param(
        ["a", "b"],
        [claim("a", "static"), claim("b", "static")],
        [pv("pv1", "static"), pv("pv2", "static")],
        [("a", "pv1"), ("b", "pv2")],
        id="claims-of-one-pod-get-different-pvs",
    ),
    pytest.param(
        ["a", "b"],
        [claim("a", "static"), claim("b", "static")],
        [pv("pv1", "static")],
        [("a", "pv1")],
        id="second-claim-waits-for-a-pv",
    ),
]


@pytest.mark.parametrize(("claims", "pvcs", "pvs", "static"), PLANS)
def test_static(
    claims: list[str], pvcs: list[Obj], pvs: list[Obj], static: list[tuple[str, str]]
) -> None:
    storage = Storage.parse(pvcs, pvs, CLASSES)
    assert volume_plan(pod("p-0", claims=claims), storage) == VolumePlan(static=static)


PROVISION = [
    pytest.param([claim("data", "fast")], [], ["data"], id="provisioner-class"),
    pytest.param([claim("data", "static")], [], [], id="no-provisioner-class"),
    pytest.param([claim("data", "gone")], [], [], id="class-not-in-cache"),
    pytest.param([claim("data")], [], [], id="no-class"),
    pytest.param([claim("data", "bare")], [], [], id="class-without-provisioner"),
    pytest.param([claim("data", "fast")], [pv("pv1", "slow")], ["data"], id="pv-of-another-class"),
    pytest.param([claim("data", "fast")], [pv("pv1", "fast")], [], id="static-pv-first"),
]


@pytest.mark.parametrize(("pvcs", "pvs", "provision"), PROVISION)
def test_provision(pvcs: list[Obj], pvs: list[Obj], provision: list[str]) -> None:
    storage = Storage.parse(pvcs, pvs, [*CLASSES, storage_class("bare", None)])
    assert volume_plan(pod("p-0", claims=["data"]), storage).provision == provision


def test_both_in_one_plan() -> None:
    storage = Storage.parse(
        [claim("a", "fast"), claim("b", "fast"), claim("c", bound_to="pv0")],
        [pv("pv1", "fast")],
        CLASSES,
    )
    plan = volume_plan(pod("p-0", claims=["a", "b", "c"]), storage)
    assert plan == VolumePlan(static=[("a", "pv1")], provision=["b"])


CLASS_PROVISIONS = [
    pytest.param(storage_class("c", "csi.example.com"), True, id="csi"),
    pytest.param(storage_class("c", ""), True, id="empty-name"),
    pytest.param(storage_class("c", "kubernetes.io/no-provisioner"), False, id="no-provisioner"),
    pytest.param(storage_class("c", None), False, id="absent"),
]


@pytest.mark.parametrize(("obj", "expected"), CLASS_PROVISIONS)
def test_class_provisions(obj: Obj, expected: bool) -> None:
    assert StorageClass.parse(obj).provisions is expected


def _claim(name: str = "data", **spec: Any) -> Obj:
    return {"metadata": {"namespace": "default", "name": name}, "spec": spec}


def _pv(name: str, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": "Available"},
    }


def _zone(*zones: str) -> Obj:
    terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": list(zones)}]}]
    return {"required": {"nodeSelectorTerms": terms}}


NODES = [
    {"metadata": {"name": "n-a", "labels": {"zone": "a"}}},
    {"metadata": {"name": "n-b", "labels": {"zone": "b"}}},
]
RWO, RWX = ["ReadWriteOnce"], ["ReadWriteMany"]
GI = {"requests": {"storage": "1Gi"}}

MATCHES = [
    pytest.param(_claim(resources=GI), _pv("pv", capacity={"storage": "2Gi"}), True, id="bigger"),
    pytest.param(_claim(resources=GI), _pv("pv", capacity={"storage": "1Gi"}), True, id="exact"),
    pytest.param(
        _claim(resources=GI), _pv("pv", capacity={"storage": "512Mi"}), False, id="too-small"
    ),
    pytest.param(_claim(resources=GI), _pv("pv"), False, id="no-capacity"),
    pytest.param(_claim(accessModes=RWO), _pv("pv", accessModes=RWO + RWX), True, id="modes-in"),
    pytest.param(_claim(accessModes=RWX), _pv("pv", accessModes=RWO), False, id="mode-missing"),
    pytest.param(
        _claim(selector={"matchLabels": {"tier": "gold"}}),
        _pv("pv", {"tier": "gold"}),
        True,
        id="selector-labels",
    ),
    pytest.param(
        _claim(selector={"matchLabels": {"tier": "gold"}}),
        _pv("pv", {"tier": "tin"}),
        False,
        id="selector-labels-differ",
    ),
    pytest.param(
        _claim(selector={"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
        _pv("pv", {"tier": "tin"}),
        True,
        id="selector-exists",
    ),
    pytest.param(
        _claim(selector={"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}),
        _pv("pv", {"tier": "2"}),
        False,
        id="selector-node-only-operator",
    ),
    pytest.param(
        _claim(storageClassName="fast"), _pv("pv", storageClassName="slow"), False, id="class"
    ),
]


@pytest.mark.parametrize(("pvc", "volume", "chosen"), MATCHES)
def test_static_pv_must_match_the_claim(pvc: Obj, volume: Obj, chosen: bool) -> None:
    storage = Storage.parse([pvc], [volume], CLASSES, NODES)
    plan = volume_plan(pod("p-0", claims=["data"]), storage, "n-a")
    assert plan.static == ([("data", "pv")] if chosen else [])


REACH = [
    pytest.param("n-a", [("data", "pv-a")], id="node-in-the-pvs-zone"),
    pytest.param("n-b", [("data", "pv-b")], id="other-zone-other-pv"),
    pytest.param("n-c", [("data", "pv-c")], id="unknown-node-only-unrestricted-pv"),
]


@pytest.mark.parametrize(("node", "static"), REACH)
def test_static_pv_must_be_reachable_from_the_pods_node(
    node: str, static: list[tuple[str, str]]
) -> None:
    volumes = [
        _pv("pv-a", nodeAffinity=_zone("a")),
        _pv("pv-b", nodeAffinity=_zone("b")),
        _pv("pv-c"),
    ]
    storage = Storage.parse([_claim()], volumes, CLASSES, NODES)
    assert volume_plan(pod("p-0", claims=["data"]), storage, node) == VolumePlan(static=static)


def test_volume_affinity_is_that_of_the_bound_pvs_only() -> None:
    claims = [_claim("a", volumeName="pv-a"), _claim("b"), _claim("c", volumeName="pv-c")]
    volumes = [_pv("pv-a", nodeAffinity=_zone("a")), _pv("pv-c")]
    storage = Storage.parse(claims, volumes, CLASSES, NODES)
    (affinity,) = storage.volume_affinity("default", ["a", "b", "c", "gone"])
    assert affinity.node_selector_terms[0].match_expressions[0].values == ("a",)


def _csi_pv(name: str, driver: str = "csi.example.com", handle: str = "") -> Obj:
    return _pv(name, csi={"driver": driver, "volumeHandle": handle or f"vol-{name}"})


def _csi_node(name: str, **counts: int | None) -> Obj:
    drivers = [
        {"name": d.replace("_", "."), **({"allocatable": {"count": c}} if c is not None else {})}
        for d, c in counts.items()
    ]
    return {"metadata": {"name": name}, "spec": {"drivers": drivers}}


ATTACHED = [
    pytest.param(
        [_claim("a", volumeName="pv-a")],
        [_csi_pv("pv-a")],
        [("csi.example.com", "csi.example.com/vol-pv-a")],
        id="bound-to-a-csi-pv",
    ),
    pytest.param([_claim("a", volumeName="pv-a")], [_pv("pv-a")], [], id="bound-not-csi"),
    pytest.param(
        [_claim("a", storageClassName="csi")],
        [],
        [("csi.example.com", "csi.example.com/claim:default/a")],
        id="unbound-class-driver",
    ),
    pytest.param(
        [_claim("a", storageClassName="csi", volumeName="gone")],
        [],
        [("csi.example.com", "csi.example.com/claim:default/a")],
        id="pv-missing-class-driver",
    ),
    pytest.param([_claim("a", storageClassName="local")], [], [], id="no-provisioner-class"),
    pytest.param([_claim("a", storageClassName="nowhere")], [], [], id="unknown-class"),
    pytest.param([], [], [], id="claim-missing"),
]


@pytest.mark.parametrize(("claims", "volumes", "expected"), ATTACHED)
def test_attached_csi_volumes(
    claims: list[Obj], volumes: list[Obj], expected: list[tuple[str, str]]
) -> None:
    classes = [
        storage_class("csi", "csi.example.com"),
        storage_class("local", "kubernetes.io/no-provisioner"),
    ]
    storage = Storage.parse(claims, volumes, classes)
    assert [tuple(v) for v in storage.attached("default", ["a"])] == expected


def test_csi_node_counts_per_driver_without_count_is_no_limit() -> None:
    nodes = [_csi_node("n0", csi_example_com=2, other_io=None), _csi_node("n1")]
    storage = Storage.parse([], [], [], csi_nodes=nodes)
    assert storage.limits == {"n0": {"csi.example.com": 2}, "n1": {}}
