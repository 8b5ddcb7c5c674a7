"""plan(): Volcano's label discovery and HyperNode reconcile, by value, on small clusters.

Topology `rack` here: `e/spine` (tier 2) over `e/leaf` (tier 1) over the node itself."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from controllers.hypernode import config, discovery
from controllers.hypernode.discovery import NodeCount, Plan, Update
from controllers.hypernode.members import NodeLabels
from models.topology import SOURCE_LABEL, HyperNode, HyperNodeSpec, HyperNodeStatus

LEAF, SPINE = "e/leaf", "e/spine"
CONF = config.load(
    "networkTopologyDiscovery:\n"
    "  - source: label\n    enabled: true\n    config:\n      networkTopologyTypes:\n"
    f"        rack:\n          - nodeLabel: {SPINE}\n          - nodeLabel: {LEAF}\n"
    "          - nodeLabel: kubernetes.io/hostname\n"
)
OFF = config.load("networkTopologyDiscovery: [{source: label, enabled: false}]")
NAME = re.compile(r"^hypernode-rack-tier(\d)-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def node(name: str, leaf: str | None = None, spine: str | None = None) -> NodeLabels:
    labels = {"kubernetes.io/hostname": name}
    if leaf is not None:
        labels[LEAF] = leaf
    if spine is not None:
        labels[SPINE] = spine
    return NodeLabels(name=name, labels=labels)


def hyper_node(
    name: str,
    labels: dict[str, str],
    tier: int = 1,
    members: list[str] | None = None,
    count: int | None = None,
    tier_name: str | None = None,
) -> HyperNode:
    kind = "Node" if tier == 1 else "HyperNode"
    doc: dict[str, Any] = {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "tier": tier,
            "tierName": tier_name,
            "members": [
                {"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members or []
            ],
        },
    }
    if count is not None:
        doc["status"] = {"nodeCount": count}
    return HyperNode.model_validate(doc)


def ours(key: str, value: str) -> dict[str, str]:
    return {key: value, SOURCE_LABEL: "label"}


def run(
    nodes: list[NodeLabels],
    existing: list[HyperNode] | None = None,
    seed: int = 7,
    conf: config.DiscoveryConfig = CONF,
) -> Plan:
    return discovery.plan(conf, nodes, existing or [], random.Random(seed))


def by_label(plan: Plan) -> dict[str, HyperNode]:
    """Created HyperNodes by their `key=value` label."""
    out = {}
    for hn in plan.creates:
        labels = dict(hn.metadata.labels or {})
        assert labels.pop(SOURCE_LABEL) == "label"
        ((key, value),) = labels.items()
        out[f"{key}={value}"] = hn
    return out


def members(hn: HyperNode) -> list[tuple[str, str]]:
    return [
        (str(m.type), m.selector.exact_match.name)
        for m in hn.spec.members or []
        if m.selector.exact_match
    ]


def settled(plan: Plan) -> list[HyperNode]:
    """The cluster after a plan of creates only was carried out (counts written)."""
    counts = {c.name: c.node_count for c in plan.counts}
    return [
        hn.model_copy(update={"status": HyperNodeStatus(node_count=counts[hn.metadata.name or ""])})
        for hn in plan.creates
    ]


CLUSTER = [
    node("n0", "l1", "s1"),
    node("n1", "l1", "s1"),
    node("n2", "l2", "s1"),
    node("n3", "l3", "s2"),
]


def test_tiers_members_names_and_labels_follow_volcano() -> None:
    plan = run(CLUSTER)
    hns = by_label(plan)
    assert sorted(hns) == [f"{LEAF}=l1", f"{LEAF}=l2", f"{LEAF}=l3", f"{SPINE}=s1", f"{SPINE}=s2"]
    for key, hn in hns.items():
        match = NAME.match(hn.metadata.name or "")
        assert match is not None, hn.metadata.name
        tier = 1 if key.startswith(LEAF) else 2
        assert (int(match.group(1)), hn.spec.tier, hn.spec.tier_name) == (
            tier,
            tier,
            LEAF if tier == 1 else SPINE,
        )
    name = {k: hn.metadata.name for k, hn in hns.items()}
    assert members(hns[f"{LEAF}=l1"]) == [("Node", "n0"), ("Node", "n1")]
    assert members(hns[f"{LEAF}=l3"]) == [("Node", "n3")]
    assert members(hns[f"{SPINE}=s1"]) == sorted(
        [("HyperNode", name[f"{LEAF}=l1"]), ("HyperNode", name[f"{LEAF}=l2"])]
    )
    assert members(hns[f"{SPINE}=s2"]) == [("HyperNode", name[f"{LEAF}=l3"])]
    assert plan.creates == tuple(sorted(plan.creates, key=lambda h: h.metadata.name or ""))
    assert (plan.updates, plan.deletes, plan.discovered) == ((), (), 5)
    counts = {c.name: c.node_count for c in plan.counts}
    assert counts == {
        name[f"{LEAF}=l1"]: 2,
        name[f"{LEAF}=l2"]: 1,
        name[f"{LEAF}=l3"]: 1,
        name[f"{SPINE}=s1"]: 2,
        name[f"{SPINE}=s2"]: 1,
    }


def test_same_seed_gives_the_same_plan_and_another_seed_other_names() -> None:
    assert run(CLUSTER, seed=1) == run(list(reversed(CLUSTER)), seed=1)
    first = {hn.metadata.name for hn in run(CLUSTER, seed=1).creates}
    assert first != {hn.metadata.name for hn in run(CLUSTER, seed=2).creates}


def test_settled_cluster_plans_nothing_whatever_the_seed() -> None:
    existing = settled(run(CLUSTER))
    assert run(CLUSTER, existing, seed=99) == Plan(discovered=5)


def test_relabelled_node_moves_and_the_empty_hypernode_goes() -> None:
    first = run(CLUSTER)
    name = {k: hn.metadata.name or "" for k, hn in by_label(first).items()}
    moved = [*CLUSTER[:2], node("n2", "l1", "s1"), CLUSTER[3]]
    plan = run(moved, settled(first), seed=3)
    l1, s1 = name[f"{LEAF}=l1"], name[f"{SPINE}=s1"]
    assert plan.creates == ()
    assert [u.name for u in plan.updates] == sorted([l1, s1])
    update = {u.name: u for u in plan.updates}
    assert [
        m.selector.exact_match.name for m in update[l1].spec.members or [] if m.selector.exact_match
    ] == ["n0", "n1", "n2"]
    assert update[l1].labels == ours(LEAF, "l1")
    assert [
        m.selector.exact_match.name for m in update[s1].spec.members or [] if m.selector.exact_match
    ] == [l1]
    assert plan.deletes == (name[f"{LEAF}=l2"],)
    assert plan.counts == tuple(
        sorted(
            [NodeCount(name=l1, node_count=3), NodeCount(name=s1, node_count=1)],
            key=lambda c: c.name,
        )
    )


def test_only_the_label_source_stale_hypernodes_are_deleted() -> None:
    existing = [
        *settled(run(CLUSTER)),
        hyper_node("stale", ours(LEAF, "gone"), members=["n9"], count=1),
        hyper_node("ufm-made", {SOURCE_LABEL: "ufm"}, members=["n0", "n1"], count=2),
        hyper_node("by-hand", {}, members=["n0"]),  # never counted
    ]
    plan = run(CLUSTER, existing)
    assert (plan.creates, plan.updates, plan.deletes) == ((), (), ("stale",))
    assert plan.counts == (NodeCount(name="by-hand", node_count=1),)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param([node("n0", spine="s1")], [], id="no-tier1-label-stops-there"),
        pytest.param([node("n0", leaf="l1")], [f"{LEAF}=l1"], id="no-tier2-label-tier1-only"),
        pytest.param([node("n0")], [], id="no-labels"),
    ],
)
def test_a_node_missing_a_tier_label_stops_at_that_tier(
    nodes: list[NodeLabels], expected: list[str]
) -> None:
    assert sorted(by_label(run(nodes))) == expected


def test_existing_hypernode_is_reused_only_with_labels_and_name_prefix() -> None:
    existing = [
        hyper_node("hypernode-rack-tier1-aaaaa", ours(LEAF, "l1"), members=["n0"], count=1),
        hyper_node("hypernode-rack-tier1-other", {LEAF: "l3"}, members=["n3"]),  # no source label
        hyper_node("custom-l2", ours(LEAF, "l2"), members=["n2"], count=1),  # name not Volcano's
    ]
    plan = run(CLUSTER, existing)
    created = by_label(plan)
    assert f"{LEAF}=l1" not in created  # reused
    assert [u.name for u in plan.updates] == [
        "hypernode-rack-tier1-aaaaa"
    ]  # n1 joins, tierName set
    assert f"{LEAF}=l2" in created and plan.deletes == ("custom-l2",)
    assert f"{LEAF}=l3" in created  # the unlabelled one is not the label source's


def test_reused_hypernode_keeps_its_other_labels_without_an_update() -> None:
    first = settled(run(CLUSTER))
    marked = [
        hn.model_copy(
            update={
                "metadata": hn.metadata.model_copy(
                    update={"labels": {**(hn.metadata.labels or {}), "team": "a"}}
                )
            }
        )
        for hn in first
    ]
    assert run(CLUSTER, marked).updates == ()


def test_drawn_name_avoids_every_existing_hypernode() -> None:
    (taken,) = [hn.metadata.name for hn in run([node("n0", "l1")], seed=5).creates]
    assert taken is not None
    plan = run(
        [node("n0", "l1")],
        [hyper_node(taken, {SOURCE_LABEL: "ufm"}, members=["x"], count=1)],
        seed=5,
    )
    (created,) = plan.creates
    assert created.metadata.name != taken and NAME.match(created.metadata.name or "")


class _Stuck(random.Random):
    def choice(self, seq: Any) -> Any:
        return seq[0]


def test_names_exhausted_is_an_error() -> None:
    nodes = [node("n0", "l1"), node("n1", "l2")]
    with pytest.raises(discovery.DiscoveryError, match="e/leaf=l2 after 20 attempts"):
        discovery.plan(CONF, nodes, [], _Stuck())


def test_label_discovery_disabled_keeps_hypernodes_and_counts_them() -> None:
    existing = [
        hyper_node("hypernode-rack-tier1-aaaaa", ours(LEAF, "l1"), members=["n0", "n1"], count=1)
    ]
    assert run(CLUSTER, existing, conf=OFF) == Plan(
        counts=(NodeCount(name="hypernode-rack-tier1-aaaaa", node_count=2),)
    )


def test_types_sharing_a_label_key_share_its_hypernode() -> None:
    conf = config.load(
        "networkTopologyDiscovery:\n  - source: label\n    enabled: true\n    config:\n"
        "      networkTopologyTypes:\n"
        f"        a: [{{nodeLabel: {LEAF}}}, {{nodeLabel: h}}]\n"
        f"        b: [{{nodeLabel: {SPINE}}}, {{nodeLabel: {LEAF}}}, {{nodeLabel: h}}]\n"
    )
    plan = run([node("n0", "l1", "s1")], conf=conf)
    hns = by_label(plan)
    assert sorted(hns) == [f"{LEAF}=l1", f"{SPINE}=s1"]
    assert (hns[f"{LEAF}=l1"].metadata.name or "").startswith(
        "hypernode-a-tier1-"
    )  # "a" sorts first
    assert (hns[f"{SPINE}=s1"].metadata.name or "").startswith("hypernode-b-tier2-")


def test_type_name_is_cleaned_in_the_hypernode_name() -> None:
    conf = config.load(
        "networkTopologyDiscovery: [{source: label, enabled: true, config: "
        f"{{networkTopologyTypes: {{Rack_A: [{{nodeLabel: {LEAF}}}, {{nodeLabel: h}}]}}}}}}]"
    )
    (hn,) = run([node("n0", "l1")], conf=conf).creates
    assert re.match(r"^hypernode-rack-a-tier1-[a-z0-9]{5}$", hn.metadata.name or "")


def test_update_replaces_a_changed_spec() -> None:
    (hn,) = settled(run([node("n0", "l1")]))
    edited = hn.model_copy(
        update={"spec": HyperNodeSpec(tier=1, tier_name="hand-edited", members=hn.spec.members)}
    )
    plan = run([node("n0", "l1")], [edited])
    assert plan.updates == (
        Update(name=hn.metadata.name or "", spec=hn.spec, labels=ours(LEAF, "l1")),
    )
    assert plan.counts == ()
