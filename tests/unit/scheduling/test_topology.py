"""HyperNodes: the tree a session builds, and gangs kept within a tier by allocate."""

from __future__ import annotations

from typing import Any

import pytest

from models.keys import job_key
from models.topology import HyperNode
from scheduling.actions.registry import run_session
from scheduling.api import topology
from scheduling.api.result import SessionResult
from scheduling.api.topology import CLUSTER_TOP, JobTopology
from scheduling.framework.session_config import SessionConfig, TopologyConfig
from tests.unit.scheduling.builders import gang, make_node, running, snapshot

Obj = dict[str, Any]

# tier 2:        t0            t1
# tier 1:     s0     s1        s2
# nodes:    n0 n1  n2 n3     n4 n5
RACKS = {"s0": ("n0", "n1"), "s1": ("n2", "n3"), "s2": ("n4", "n5")}
SPINES = {"t0": ("s0", "s1"), "t1": ("s2",)}


def hyper_node(name: str, tier: int, members: list[Obj], **spec: Any) -> Obj:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members, **spec},
    }


def exact(kind: str, name: str) -> Obj:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def tree() -> list[Obj]:
    racks = [
        hyper_node(r, 1, [exact("Node", n) for n in nodes], tierName="rack")
        for r, nodes in RACKS.items()
    ]
    spines = [
        hyper_node(t, 2, [exact("HyperNode", r) for r in racks_], tierName="spine")
        for t, racks_ in SPINES.items()
    ]
    return [*racks, *spines]


def cluster(cpu: str = "8") -> list[Obj]:
    return [make_node(f"n{i}", cpu=cpu).obj() for i in range(6)]


def built(objects: list[Obj], nodes: dict[str, dict[str, str]] | None = None) -> topology.Topology:
    labels = nodes if nodes is not None else {f"n{i}": {} for i in range(6)}
    return topology.build([HyperNode.load(o) for o in objects], labels)


def placed(result: SessionResult) -> dict[str, str]:
    return {pod.split("/")[1]: node for pod, node in result.node_of.items()}


def rack_of(node: str) -> str:
    return next(r for r, nodes in RACKS.items() if node in nodes)


def spine_of(node: str) -> str:
    return next(t for t, racks in SPINES.items() if rack_of(node) in racks)


def test_the_tree_holds_nodes_through_children_under_one_root_a_tier_above() -> None:
    topo = built(tree())
    assert topo.ready and topo.top_tier == 3
    assert topo.by_name["t0"].nodes == ("n0", "n1", "n2", "n3")
    assert topo.by_name["s2"].parent == "t1" and topo.by_name["t1"].parent == CLUSTER_TOP
    assert topo.by_name[CLUSTER_TOP].nodes == tuple(f"n{i}" for i in range(6))
    assert topo.lca("s0", "s1") == "t0" and topo.lca("s0", "s2") == CLUSTER_TOP
    assert topo.lowest_of("n3") == "s1"
    assert topo.lowest_holding(["n0", "n3"]) == "t0"
    assert topo.tier_names == {"rack": 1, "spine": 2}
    assert topo.gradients(CLUSTER_TOP, 2) == [["s0", "s1", "s2"], ["t0", "t1"]]
    assert topo.gradients("t0", 3) == [["s0", "s1"], ["t0"]]


def test_members_by_regex_and_labels_and_unknown_or_deleting_ones_left_out() -> None:
    nodes = {"gpu-0": {"rack": "a"}, "gpu-1": {"rack": "b"}, "cpu-0": {"rack": "a"}}
    regex = hyper_node("h0", 1, [{"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu"}}}])
    label = hyper_node(
        "h1", 1, [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "a"}}}}]
    )
    ghost = hyper_node("h2", 1, [exact("Node", "gone")])
    going = hyper_node("h3", 1, [exact("Node", "cpu-0")])
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    topo = built([regex, label, ghost, going], nodes)
    assert topo.by_name["h0"].nodes == ("gpu-0", "gpu-1")
    assert topo.by_name["h1"].nodes == ("cpu-0", "gpu-0")
    assert topo.by_name["h2"].nodes == ()
    assert "h3" not in topo.by_name


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        pytest.param(
            [hyper_node("t9", 2, [exact("HyperNode", "s0")])],
            "HyperNode s0 already has a parent t0, and cannot set another parent t9",
            id="two-parents",
        ),
        pytest.param(
            [
                hyper_node("s9", 1, [exact("HyperNode", "u0")]),
                hyper_node("u0", 2, [exact("HyperNode", "s9")]),
            ],
            "cyclic dependency detected",
            id="cycle",
        ),
    ],
)
def test_a_broken_tree_is_not_ready(extra: list[Obj], problem: str) -> None:
    topo = built([*tree(), *extra])
    assert not topo.ready and problem in topo.problem


def test_tier_limits_by_number_by_name_and_soft_mode_up_to_the_root() -> None:
    topo = built(tree())
    assert topo.tier_limit(JobTopology(highest_tier=1)) == 1
    assert topo.tier_limit(JobTopology(highest_tier_name="spine")) == 2
    assert topo.tier_limit(JobTopology(highest_tier_name="nope")) is None
    assert topo.tier_limit(JobTopology(hard=False)) == 3
    assert topo.tier_limit(JobTopology()) is None


def session(
    gangs: list[tuple[Obj, list[Obj]]],
    hyper_nodes: list[Obj] | None = None,
    config: SessionConfig | None = None,
    cpu: str = "8",
) -> SessionResult:
    objects = tree() if hyper_nodes is None else hyper_nodes
    return run_session(snapshot(cluster(cpu), gangs=gangs, hyper_nodes=objects), config)


def limited(name: str, size: int, tier: int | None = None, mode: str = "hard", **kw: Any) -> Any:
    topology_spec: Obj = {"mode": mode}
    if tier is not None:
        topology_spec["highestTierAllowed"] = tier
    return gang(name, size, networkTopology=topology_spec, **kw)


def test_a_hard_tier_1_gang_stays_in_one_rack() -> None:
    result = session([limited("a", 2, tier=1, cpu="8")])
    nodes = placed(result).values()
    assert len(nodes) == 2 and len({rack_of(n) for n in nodes}) == 1


def test_a_gang_too_big_for_any_rack_waits_under_tier_1_and_stays_in_one_spine_under_2() -> None:
    waiting = session([limited("a", 3, tier=1, cpu="8")])
    assert placed(waiting) == {}
    assert (
        "no HyperNode of tier 1 or lower has room for the gang"
        in waiting.why_not[job_key("default", "a")]
    )
    spread = session([limited("a", 3, tier=2, cpu="8")])
    nodes = list(placed(spread).values())
    assert len(nodes) == 3 and {spine_of(n) for n in nodes} == {"t0"}


def test_soft_mode_prefers_one_rack_and_falls_back_to_the_whole_cluster() -> None:
    small = session([limited("a", 2, mode="soft", cpu="8")])
    assert len({rack_of(n) for n in placed(small).values()}) == 1
    big = session([limited("a", 6, mode="soft", cpu="8")])
    assert sorted(placed(big).values()) == [f"n{i}" for i in range(6)]


def test_the_fuller_rack_of_a_tier_is_chosen() -> None:
    busy = running("busy", ["n3"], cpu="4")
    result = session([busy, limited("a", 2, tier=1, cpu="4")])
    assert {rack_of(n) for n in placed(result).values() if n} == {"s1"}


def test_a_job_with_pods_in_a_rack_adds_the_rest_there() -> None:
    held = running("a", ["n2"], cpu="1", networkTopology={"mode": "hard", "highestTierAllowed": 1})
    group, pods = held
    group["spec"]["minMember"] = 1
    more = [*pods, *limited("a", 3, tier=1, cpu="1")[1][1:]]
    result = session([(group, more)])
    assert {rack_of(n) for n in placed(result).values()} == {"s1"}


def test_within_a_spine_a_gang_fills_the_rack_it_started_in_before_the_next() -> None:
    """n1 is a little used, so spreading alone would take n2 and n3 before it."""
    busy = running("busy", ["n1"], cpu="1")
    gangs = [busy, limited("a", 3, tier=2, cpu="7")]
    near = {n for p, n in placed(session(gangs)).items() if p.startswith("a-")}
    assert near == {"n0", "n1", "n2"}
    far = session(gangs, config=SessionConfig(network_topology=TopologyConfig(weight=0)))
    assert {n for p, n in placed(far).items() if p.startswith("a-")} == {"n0", "n2", "n3"}


def test_without_network_topology_aware_a_tier_limit_places_the_gang_anywhere() -> None:
    config = SessionConfig(network_topology=None)
    result = session([limited("a", 3, tier=1, cpu="8")], config=config)
    assert len(placed(result)) == 3


def test_a_broken_tree_holds_topology_jobs_and_no_others() -> None:
    broken = [*tree(), hyper_node("t9", 2, [exact("HyperNode", "s0")])]
    result = session([limited("a", 1, tier=1), gang("b", 1)], hyper_nodes=broken)
    assert list(placed(result)) == ["b-worker-0"]
    assert "HyperNodes are not ready for scheduling" in result.why_not[job_key("default", "a")]


def test_no_hyper_nodes_at_all_is_one_tier_1_root() -> None:
    result = session([limited("a", 3, tier=1, cpu="8")], hyper_nodes=[])
    assert len(placed(result)) == 3
    assert placed(session([limited("b", 1, tier=0)], hyper_nodes=[])) == {}


def test_pods_without_a_topology_go_to_the_fuller_rack_when_hyper_nodes_exist() -> None:
    busy = running("busy", ["n3"], cpu="4")
    packed = session([busy, gang("a", 1, cpu="1")])
    assert placed(packed)["a-worker-0"] == "n2"
    off = SessionConfig(network_topology=TopologyConfig(normal_pods=False))
    assert placed(session([busy, gang("a", 1, cpu="1")], config=off))["a-worker-0"] == "n0"
