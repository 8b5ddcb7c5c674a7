"""DRA in the gang scheduler: which devices a pod's ResourceClaims get, whole gangs or none,
and what a pod waiting for devices is told. Objects are shaped as resource.k8s.io/v1 stores
them and go through the real snapshot builder and session."""

from __future__ import annotations

from typing import Any

import pytest

from models.signals.scheduler import ClaimPlan, DeviceResult
from scheduling.actions.registry import run_session
from scheduling.api.device_claims import parse_claim
from scheduling.api.device_selectors import accepts
from scheduling.api.devices import DeviceWorld, device_dimension
from scheduling.api.result import SessionResult
from scheduling.plugins.dynamicresources import CANNOT_ALLOCATE, NOT_ON_NODE
from tests.unit.scheduling.builders import make_node, make_pod, make_podgroup, make_queue, snapshot

Obj = dict[str, Any]
DRIVER = "gpu.caldera.dev"
CLASS = "gpu.caldera.dev"


def slice_(node: str, count: int, model: str = "a100", memory: str = "40Gi", **pool: Any) -> Obj:
    return {
        "metadata": {"name": f"{node}-gpus", "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1, **pool},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"model": {"string": model}, "index": {"int": i}},
                    "capacity": {"memory": {"value": memory}},
                }
                for i in range(count)
            ],
        },
    }


def device_class(name: str = CLASS, *selectors: str) -> Obj:
    exprs = selectors or (f'device.driver == "{DRIVER}"',)
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
    }


def claim(
    name: str,
    *requests: Obj,
    owner: str | None = None,
    constraints: list[Obj] | None = None,
    allocated: list[tuple[str, str]] | None = None,  # (node, device)
    uid: str | None = None,
) -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": owner, "uid": owner, "controller": True}]
    status: Obj = {}
    if allocated:
        status["allocation"] = {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": node, "device": device}
                    for node, device in allocated
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [allocated[0][0]]}
                        ]
                    }
                ]
            },
        }
    return {
        "metadata": meta,
        "spec": {
            "devices": {
                "requests": list(requests or (exactly("gpu"),)),
                "constraints": constraints or [],
            }
        },
        "status": status,
    }


def exactly(name: str, count: int = 1, *selectors: str, mode: str = "ExactCount") -> Obj:
    body: Obj = {"deviceClassName": CLASS, "allocationMode": mode}
    if mode == "ExactCount":
        body["count"] = count
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": body}


def pod(name: str, *claims: str, group: str = "pg", cpu: str = "1") -> Obj:
    """A pending pod whose claims were made from a template (its status names them)."""
    obj = (
        make_pod(name, group=group, cpu=cpu)
        .spec(
            resourceClaims=[
                {"name": f"c{i}", "resourceClaimTemplateName": "t"} for i in range(len(claims))
            ]
        )
        .obj()
    )
    obj["metadata"]["uid"] = name
    obj["status"]["resourceClaimStatuses"] = [
        {"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)
    ]
    return obj


def decide(
    nodes: list[Obj],
    groups: list[Obj],
    pods: list[Obj],
    slices: list[Obj],
    claims: list[Obj],
    classes: list[Obj] | None = None,
    queues: list[Obj] | None = None,
    in_flight: dict[tuple[str, str], ClaimPlan] | None = None,
) -> SessionResult:
    world = DeviceWorld.parse(
        slices, classes if classes is not None else [device_class()], claims, in_flight
    )
    snap = snapshot(nodes, [(g, []) for g in groups], pods=pods, queues=queues, devices=world)
    return run_session(snap)


def devices_of(result: SessionResult) -> dict[str, list[tuple[str, str]]]:
    """Pod -> (claim, pool/device) for every allocating plan."""
    return {
        p.pod: [(c.claim, f"{d.pool}/{d.device}") for c in p.claims for d in c.devices]
        for p in result.placements
    }


def message_of(result: SessionResult, job: str = "default/pg") -> str:
    return next(c.message for c in result.conditions if c.job == job)


NODES = [make_node("n0", cpu="8").obj(), make_node("n1", cpu="8").obj()]


def test_a_pod_gets_the_first_free_device_on_its_node_and_the_plan_names_it() -> None:
    result = decide(
        NODES, [make_podgroup("pg")], [pod("p0", "p0-gpu")], [slice_("n0", 2)], [claim("p0-gpu")]
    )
    placed = result.placements[0]
    assert placed.node == "n0"
    assert placed.claims == (
        ClaimPlan(
            claim="p0-gpu",
            uid="uid-p0-gpu",
            devices=[DeviceResult(request="gpu", driver=DRIVER, pool="n0", device="gpu-0")],
            node="n0",
        ),
    )


def test_a_gang_whose_members_cannot_all_get_devices_gets_none() -> None:
    members = [pod(f"p{i}", f"p{i}-gpu") for i in range(3)]
    result = decide(
        NODES,
        [make_podgroup("pg", min_member=3)],
        members,
        [slice_("n0", 1), slice_("n1", 1)],
        [claim(f"p{i}-gpu") for i in range(3)],
    )
    assert result.placements == ()
    assert f"2 {CANNOT_ALLOCATE}" in message_of(result)
    assert "no free devices for p2-gpu/gpu (1 of class gpu.caldera.dev)" in message_of(result)


def test_the_members_of_a_gang_share_out_the_devices_without_double_booking() -> None:
    members = [pod(f"p{i}", f"p{i}-gpu") for i in range(4)]
    result = decide(
        NODES,
        [make_podgroup("pg", min_member=4)],
        members,
        [slice_("n0", 2), slice_("n1", 2)],
        [claim(f"p{i}-gpu") for i in range(4)],
    )
    got = devices_of(result)
    assert len(got) == 4
    assigned = [d for plans in got.values() for _, d in plans]
    assert sorted(assigned) == ["n0/gpu-0", "n0/gpu-1", "n1/gpu-0", "n1/gpu-1"]


def test_devices_already_allocated_or_assumed_are_taken() -> None:
    assumed = ClaimPlan(
        claim="other",
        uid="uid-other",
        devices=[DeviceResult(request="gpu", driver=DRIVER, pool="n0", device="gpu-1")],
        node="n0",
    )
    result = decide(
        NODES,
        [make_podgroup("pg")],
        [pod("p0", "p0-gpu")],
        [slice_("n0", 3)],
        [claim("p0-gpu"), claim("held", allocated=[("n0", "gpu-0")]), claim("other")],
        in_flight={("default", "other"): assumed},
    )
    assert devices_of(result) == {"default/p0": [("p0-gpu", "n0/gpu-2")]}


def test_an_allocated_claim_pins_its_pod_to_the_node_it_reaches() -> None:
    shared = claim("shared", allocated=[("n1", "gpu-0")])
    result = decide(
        NODES, [make_podgroup("pg")], [pod("p0", "shared")], [slice_("n1", 1)], [shared]
    )
    placed = result.placements[0]
    assert placed.node == "n1"
    assert placed.claims == (ClaimPlan(claim="shared", uid="uid-shared"),)  # reserve only


def test_a_claim_allocated_on_another_node_refuses_the_rest() -> None:
    shared = claim("shared", allocated=[("n1", "gpu-0")])
    nodes = [make_node("n0", cpu="8").obj(), make_node("n1", cpu="1").obj()]
    result = decide(nodes, [make_podgroup("pg")], [pod("p0", "shared", cpu="2")], [], [shared])
    message = message_of(result)
    assert f"1 {NOT_ON_NODE}" in message and "1 Insufficient cpu" in message


def test_a_claim_shared_by_two_pods_of_a_gang_is_allocated_once() -> None:
    members = [pod("p0", "shared"), pod("p1", "shared")]
    result = decide(
        NODES, [make_podgroup("pg", min_member=2)], members, [slice_("n1", 1)], [claim("shared")]
    )
    by_pod = {p.pod: p for p in result.placements}
    assert {p.node for p in by_pod.values()} == {"n1"}
    allocating = [c for p in by_pod.values() for c in p.claims if c.allocates]
    assert len(allocating) == 1 and allocating[0].devices[0].device == "gpu-0"


def test_selectors_of_class_and_request_and_all_mode() -> None:
    slices = [slice_("n0", 2, model="t4"), slice_("n1", 3, model="a100", memory="80Gi")]
    big = exactly(
        "gpu", 1, 'device.capacity["gpu.caldera.dev"].memory.compareTo(quantity("64Gi")) >= 0'
    )
    every = exactly("all", mode="All")
    result = decide(
        NODES,
        [make_podgroup("pg")],
        [pod("p0", "big", "every")],
        slices,
        [claim("big", big), claim("every", every)],
        classes=[
            device_class(
                CLASS,
                f'device.driver == "{DRIVER}"',
                'device.attributes["gpu.caldera.dev"].model == "a100"',
            )
        ],
    )
    # "every" wants all three a100s of n1, so "big" finds none left there: no node fits.
    assert result.placements == ()
    result = decide(
        NODES,
        [make_podgroup("pg")],
        [pod("p0", "big")],
        slices,
        [claim("big", big)],
    )
    assert devices_of(result) == {"default/p0": [("big", "n1/gpu-0")]}


def test_match_attribute_keeps_a_claims_devices_alike() -> None:
    mixed = [slice_("n0", 1, model="t4")]
    mixed[0]["spec"]["devices"].append(
        {"name": "gpu-9", "attributes": {"model": {"string": "a100"}, "index": {"int": 9}}}
    )
    mixed[0]["spec"]["devices"].append(
        {"name": "gpu-8", "attributes": {"model": {"string": "a100"}, "index": {"int": 8}}}
    )
    pair = claim(
        "pair",
        exactly("gpu", 2),
        constraints=[{"matchAttribute": "gpu.caldera.dev/model"}],
    )
    result = decide(NODES, [make_podgroup("pg")], [pod("p0", "pair")], mixed, [pair])
    assert devices_of(result) == {"default/p0": [("pair", "n0/gpu-9"), ("pair", "n0/gpu-8")]}


def test_first_available_takes_the_first_subrequest_that_fits() -> None:
    request = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": CLASS, "count": 4},
            {"name": "small", "deviceClassName": CLASS, "count": 1},
        ],
    }
    result = decide(
        NODES, [make_podgroup("pg")], [pod("p0", "c")], [slice_("n0", 2)], [claim("c", request)]
    )
    plans = result.placements[0].claims
    assert [d.request for d in plans[0].devices] == ["gpu/small"]


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        (
            {"classes": [], "claims": [claim("c")]},
            "spec.devices.requests[0].exactly.deviceClassName: "
            'DeviceClass "gpu.caldera.dev" not found',
        ),
        (
            {
                "classes": [device_class()],
                "claims": [claim("c", exactly("gpu", 1, "device.driver =="))],
            },
            "spec.devices.requests[0].exactly.selectors[0]: compile error",
        ),
        ({"classes": [device_class()], "claims": []}, 'resourceclaim "c" not found'),
    ],
)
def test_bad_input_is_named_and_the_job_waits(objects: dict[str, list[Obj]], expected: str) -> None:
    result = decide(
        NODES,
        [make_podgroup("pg")],
        [pod("p0", "c")],
        [slice_("n0", 1)],
        objects["claims"],
        classes=objects["classes"],
    )
    assert result.placements == ()
    assert expected in message_of(result)


def test_a_template_claim_not_made_yet_waits() -> None:
    waiting = pod("p0", "")
    result = decide(NODES, [make_podgroup("pg")], [waiting], [slice_("n0", 1)], [])
    assert result.placements == ()
    assert "to be created from its template" in message_of(result)


def test_a_claim_made_for_another_pod_is_refused() -> None:
    result = decide(
        NODES, [make_podgroup("pg")], [pod("p0", "c")], [slice_("n0", 1)], [claim("c", owner="p9")]
    )
    assert "was not created for this pod" in message_of(result)


def test_runtime_errors_do_not_match_and_are_told() -> None:
    world = DeviceWorld.parse([slice_("n0", 1)], [], [])
    device = world.devices[0]
    assert accepts(['device.attributes["other.dev"].model == "x"'], device) not in (True, False)
    assert accepts(['device.attributes["gpu.caldera.dev"].index == 0'], device) is True


def test_device_quota_dimensions_count_a_pods_own_claims_and_each_nodes_devices() -> None:
    world = DeviceWorld.parse(
        [slice_("n0", 2)], [device_class()], [claim("mine", exactly("gpu", 2), owner="p0")]
    )
    snap = snapshot(
        NODES,
        [(make_podgroup("pg"), [])],
        pods=[pod("p0", "mine")],
        queues=[make_queue()],
        devices=world,
    )
    dimension = device_dimension(CLASS)
    assert snap.tasks[0].request.scalars[dimension] == 2000
    assert snap.node("n0").allocatable.scalars[dimension] == 2000
    assert dimension not in snap.node("n1").allocatable.scalars


def test_an_incomplete_pool_is_left_out() -> None:
    partial = slice_("n0", 2, resourceSliceCount=2)
    assert DeviceWorld.parse([partial], [], []).devices == ()


def test_claim_parse_reads_owner_and_reservations() -> None:
    obj = claim("c", owner="p0")
    obj["status"]["reservedFor"] = [{"resource": "pods", "name": "p0", "uid": "p0"}]
    parsed = parse_claim(obj)
    assert parsed.owner_pod == "p0" and parsed.reserved_for == ("p0",)


def running_pod(name: str, claim_name: str, node: str, group: str) -> Obj:
    obj = pod(name, claim_name, group=group)
    obj["spec"]["nodeName"] = node
    obj["status"]["phase"] = "Running"
    return obj


def test_reclaim_takes_devices_back_down_to_the_deserved_share() -> None:
    """Queue `a` holds all four GPUs of the node; `b`, as deserving, gets two back: two of
    `a`'s pods are evicted and `b`'s gang waits (pipelined) for their claims to go."""
    node = [make_node("n0", cpu="64", memory="256Gi").obj()]
    held = [claim(f"a{i}-gpu", owner=f"a{i}", allocated=[("n0", f"gpu-{i}")]) for i in range(4)]
    running = [running_pod(f"a{i}", f"a{i}-gpu", "n0", "ga") for i in range(4)]
    asking = [claim(f"b{i}-gpu", owner=f"b{i}") for i in range(2)]
    waiting = [pod(f"b{i}", f"b{i}-gpu", group="gb") for i in range(2)]
    groups = [
        {**make_podgroup("ga", min_member=1, queue="a"), "status": {"phase": "Running"}},
        make_podgroup("gb", min_member=2, queue="b"),
    ]
    result = decide(
        node,
        groups,
        [*running, *waiting],
        [slice_("n0", 4)],
        [*held, *asking],
        queues=[make_queue("a"), make_queue("b")],
    )
    assert sorted(e.pod for e in result.evictions) == ["default/a2", "default/a3"]
    assert result.placements == ()  # pipelined behind the victims, bound once they are gone


def test_a_queue_capability_in_devices_stops_its_jobs_at_the_quota() -> None:
    capped = make_queue("default", capability={device_dimension(CLASS): "1"})
    members = [pod("p0", "p0-gpu", group="g0"), pod("p1", "p1-gpu", group="g1")]
    result = decide(
        NODES,
        [make_podgroup("g0"), make_podgroup("g1")],
        members,
        [slice_("n0", 4)],
        [claim("p0-gpu", owner="p0"), claim("p1-gpu", owner="p1")],
        queues=[capped],
    )
    assert [p.pod for p in result.placements] == ["default/p0"]
