"""Placements addressed to the workflow that binds them; assumptions confirmed; pods pending."""

from __future__ import annotations

from typing import Any

import pytest

from models.keys import JobKey
from models.signals.scheduler import ClaimPlan, DeviceResult, PlacedPod, VolumePlan
from scheduling.api.devices import DeviceWorld
from scheduling.api.result import Placement, SessionResult
from scheduling.api.snapshot import NodeName, PodKey
from scheduling.cache.observed import ObservedPod
from scheduling.cache.placements import (
    GangPlacements,
    by_job_workflow,
    confirmed,
    in_flight,
    job_workflow,
    still_pending,
)
from scheduling.cache.volumes import Storage
from tests.unit.scheduling.builders import gang, make_node, running, snapshot
from tests.unit.scheduling.cache_builders import (
    batch_owner,
    claim,
    group,
    other_owner,
    pod,
    pv,
    vcjob_owner,
)

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
NO_STORAGE = Storage.parse([], [], [])

WORKFLOWS = [
    pytest.param([vcjob_owner("j")], "vcjob/ns/j", id="volcano-job"),
    pytest.param([batch_owner("b")], "job/ns/b", id="batch-job"),
    pytest.param([batch_owner("b"), vcjob_owner("j")], "job/ns/b", id="first-job-owner"),
    pytest.param([other_owner("x"), vcjob_owner("j")], "vcjob/ns/j", id="other-kinds-skipped"),
    pytest.param([other_owner("j", kind="Job")], None, id="job-of-another-api"),
    pytest.param([], None, id="no-owner"),
]


@pytest.mark.parametrize(("owners", "expected"), WORKFLOWS)
def test_job_workflow(owners: list[Obj], expected: str | None) -> None:
    assert job_workflow(group("pg", owners=owners, namespace="ns")) == expected


@pytest.mark.parametrize(
    ("name", "owners", "expected"),
    [
        pytest.param("podgroup-rs-uid", [other_owner("rs")], "podgroup/ns/rs-uid", id="workload"),
        pytest.param("podgroup-rs-uid", [], None, id="workload-name-without-owner"),
        pytest.param("hand-made", [other_owner("rs")], None, id="other-name"),
    ],
)
def test_job_workflow_of_a_workload_podgroup(
    name: str, owners: list[Obj], expected: str | None
) -> None:
    """The PodGroup made for pods Caldera did not create keys its gang by its PodGroupWorkflow."""
    assert job_workflow(group(name, owners=owners, namespace="ns")) == expected


def place(name: str, job: str, node: str = "n1") -> Placement:
    return Placement(
        pod=PodKey(f"default/{name}"), node=NodeName(node), job=JobKey(f"default/{job}")
    )


def placed(name: str, node: str = "n1") -> PlacedPod:
    return PlacedPod(pod=name, uid=f"uid-{name}", node=node)


def gang_of(workflow: str, *pods: PlacedPod) -> GangPlacements:
    return GangPlacements(job_workflow_id=workflow, namespace="default", placements=pods)


GROUPS = [
    group("a", owners=[vcjob_owner("a")]),
    group("b", owners=[batch_owner("b")]),
    group("orphan"),
]
PODS = [pod("a-0"), pod("a-1"), pod("b-0"), pod("orphan-0")]

ADDRESSED = [
    pytest.param([], [], id="nothing-placed"),
    pytest.param(
        [place("a-0", "a", "n1"), place("a-1", "a", "n2")],
        [gang_of("vcjob/default/a", placed("a-0", "n1"), placed("a-1", "n2"))],
        id="one-gang-in-placement-order",
    ),
    pytest.param(
        [place("b-0", "b"), place("a-0", "a"), place("a-1", "a")],
        [
            gang_of("job/default/b", placed("b-0")),
            gang_of("vcjob/default/a", placed("a-0"), placed("a-1")),
        ],
        id="gangs-in-first-placed-order",
    ),
    pytest.param([place("orphan-0", "orphan")], [], id="no-job-owns-the-group"),
    pytest.param([place("a-9", "a")], [], id="pod-gone"),
    pytest.param([place("x-0", "x")], [], id="group-gone"),
]


@pytest.mark.parametrize(("placements", "expected"), ADDRESSED)
def test_by_job_workflow(placements: list[Placement], expected: list[GangPlacements]) -> None:
    groups = {g.key: g for g in GROUPS}
    pods = {p.key: p for p in PODS}
    assert by_job_workflow(placements, groups, pods, NO_STORAGE) == expected


def test_a_placed_pod_carries_its_volume_plan() -> None:
    groups = {g.key: g for g in [group("a", owners=[vcjob_owner("a")])]}
    pods = {p.key: p for p in [pod("a-0", claims=["data"])]}
    storage = Storage.parse([claim("data")], [pv("pv1")], [])
    [entry] = by_job_workflow([place("a-0", "a")], groups, pods, storage)
    assert entry.placements == (
        PlacedPod(
            pod="a-0", uid="uid-a-0", node="n1", volumes=VolumePlan(static=[("data", "pv1")])
        ),
    )


CONFIRMED = [
    pytest.param({"default/a-0": "n1"}, [pod("a-0", node="n1")], ["default/a-0"], id="bound"),
    pytest.param({"default/a-0": "n1"}, [pod("a-0")], [], id="not-bound-yet"),
    pytest.param({"default/a-0": "n1"}, [], [], id="pod-gone"),
    pytest.param(
        {"default/b-0": "n1", "default/a-0": "n2"},
        [pod("a-0", node="n2"), pod("b-0", node="n1")],
        ["default/a-0", "default/b-0"],
        id="by-key",
    ),
]


@pytest.mark.parametrize(("assumed", "pods", "expected"), CONFIRMED)
def test_confirmed(assumed: dict[str, str], pods: list[ObservedPod], expected: list[str]) -> None:
    assert confirmed(assumed, {p.key: p for p in pods}) == expected


PENDING = [
    pytest.param([gang("a", 3)], 0, 3, id="none-placed"),
    pytest.param([gang("a", 3)], 2, 1, id="some-placed"),
    pytest.param([gang("a", 2), running("r", ["n0"])], 2, 0, id="running-pods-do-not-count"),
]


@pytest.mark.parametrize(("gangs", "placed_", "expected"), PENDING)
def test_still_pending(gangs: list[tuple[Obj, list[Obj]]], placed_: int, expected: int) -> None:
    session = snapshot([make_node("n0").obj()], gangs)
    pending = [t for t in session.tasks if t.node_name is None]
    result = SessionResult(
        placements=tuple(
            Placement(pod=t.key, node=NodeName("n0"), job=t.job) for t in pending[:placed_]
        )
    )
    assert still_pending(session, result) == expected


def test_a_pod_with_devices_stays_assumed_until_its_claims_show_them() -> None:
    """The claims' watch may lag the pods': until the cache shows the allocation, only the
    assumption keeps the devices taken."""
    plan = ClaimPlan(
        claim="gpu",
        uid="c1",
        devices=[DeviceResult(request="gpu", driver="d", pool="n1", device="g0")],
        node="n1",
    )
    assumed = {"default/a-0": "n1"}
    claims = {"default/a-0": [plan]}
    pods = {p.key: p for p in [pod("a-0", node="n1")]}
    unwritten = {"metadata": {"name": "gpu", "namespace": "default", "uid": "c1"}}
    written = {
        **unwritten,
        "status": {"allocation": {"devices": {"results": [{"device": "g0"}]}}},
    }
    lagging = DeviceWorld.parse([], [], [unwritten])
    assert confirmed(assumed, pods, claims, lagging) == []
    assert confirmed(assumed, pods, claims, DeviceWorld.parse([], [], [written])) == ["default/a-0"]
    assert confirmed(assumed, pods, claims, DeviceWorld.parse([], [], [])) == ["default/a-0"]
    assert in_flight(claims) == {("default", "gpu"): plan}
