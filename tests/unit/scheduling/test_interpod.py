"""Rules about other pods: inter-pod (anti-)affinity, topology spread, host ports, volume counts.

Each expectation is worked out by hand from kube-scheduler's InterPodAffinity,
PodTopologySpread, NodePorts and NodeVolumeLimits rules. Most sessions pack (most-allocated
scoring), so a placement that spreads is the rule's doing, not the scorer's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduling.actions.registry import run_session
from scheduling.api.podterms import HostPort, LabelSelector, PodAffinityTerm
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import NodeName, PodKey, Snapshot
from scheduling.cache.volumes import Storage
from scheduling.framework.session_config import SessionConfig, parse_actions
from scheduling.framework.state import SessionState
from scheduling.plugins import (
    interpodaffinity,
    nodeports,
    podview,
    predicates,
    scoring,
    topologyspread,
    volumelimits,
)
from scheduling.plugins.scoring import ScoringConfig
from tests.unit.scheduling.builders import make_node, make_pod, make_podgroup, snapshot

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
PACK = SessionConfig(
    scoring=ScoringConfig(least_allocated=0, most_allocated=1, balanced_allocation=0)
)


def term(key: str = HOST, **match: str) -> Obj:
    return {"labelSelector": {"matchLabels": match}, "topologyKey": key}


def pod(
    name: str,
    group: str | None = "g",
    labels: dict[str, str] | None = None,
    on: str | None = None,
    **spec: Any,
) -> Obj:
    builder = make_pod(name, group=group).spec(**spec)
    if on is not None:
        builder = builder.on(on)
    obj = builder.obj()
    obj["metadata"]["labels"] = dict(labels or {})
    return obj


def anti(*terms: Obj) -> Obj:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def near(*terms: Obj) -> Obj:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def ports(*numbers: int) -> list[Obj]:
    return [
        {
            "name": "main",
            "image": "busybox",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "ports": [{"containerPort": n, "hostPort": n} for n in numbers],
        }
    ]


def zoned(*zones: str) -> list[Obj]:
    """Nodes n0, n1, ... with the given zone labels ("" : no zone label)."""
    nodes = []
    for i, zone in enumerate(zones):
        node = make_node(f"n{i}")
        nodes.append((node.label(ZONE, zone) if zone else node).obj())
    return nodes


def session(nodes: list[Obj], pods: list[Obj], min_member: int | None = None) -> SessionResult:
    members = sum(1 for p in pods if "nodeName" not in p["spec"] and _group(p) == "g")
    group = make_podgroup("g", min_member=members if min_member is None else min_member)
    return run_session(snapshot(nodes, gangs=[(group, pods)]), PACK)


def _group(obj: Obj) -> object:
    return obj["metadata"]["annotations"].get("scheduling.k8s.io/group-name")


def placed(result: SessionResult) -> dict[str, str]:
    return {p.split("/")[1]: n for p, n in sorted(result.node_of.items())}


def one_per_node(i: int) -> Obj:
    return pod(f"g-{i}", labels={"app": "g"}, affinity=anti(term(app="g")))


def test_required_anti_affinity_puts_one_replica_per_node() -> None:
    result = session(zoned("", "", ""), [one_per_node(i) for i in range(3)])
    assert placed(result) == {"g-0": "n0", "g-1": "n1", "g-2": "n2"}


def test_four_anti_affine_replicas_on_three_nodes_place_none() -> None:
    result = session(zoned("", "", ""), [one_per_node(i) for i in range(4)])
    assert result.node_of == {}
    assert result.why_not == {
        "default/g": "1/4 tasks in gang unschedulable: 0/3 nodes are available: "
        "3 node(s) didn't match pod anti-affinity rules"
    }


def test_without_the_rule_the_same_gang_packs() -> None:
    pods = [pod(f"g-{i}", labels={"app": "g"}) for i in range(3)]
    assert set(placed(session(zoned("", "", ""), pods)).values()) == {"n0"}


def test_affinity_follows_an_existing_pod_into_its_zone() -> None:
    db = pod("db", group=None, labels={"app": "db"}, on="n2")
    web = pod("g-0", labels={"app": "web"}, affinity=near(term(ZONE, app="db")))
    result = session(zoned("a", "a", "b", "b"), [db, web])
    assert placed(result) == {"g-0": "n2"}  # zone b; packing picks the node the db is on


def test_affinity_to_a_pod_nowhere_fails_with_kube_reason() -> None:
    web = pod("g-0", labels={"app": "web"}, affinity=near(term(ZONE, app="db")))
    result = session(zoned("a", "b"), [web])
    assert result.why_not == {
        "default/g": "1/1 tasks in gang unschedulable: 0/2 nodes are available: "
        "2 node(s) didn't match pod affinity rules"
    }


def test_first_pod_of_a_self_affine_group_goes_anywhere_and_the_next_joins_it() -> None:
    spread_out = SessionConfig()  # least-allocated: without the rule the two would split
    pods = [pod(f"g-{i}", labels={"app": "g"}, affinity=near(term(app="g"))) for i in range(2)]
    result = run_session(
        snapshot(zoned("", ""), gangs=[(make_podgroup("g", min_member=2), pods)]), spread_out
    )
    assert placed(result) == {"g-0": "n0", "g-1": "n0"}


def test_an_existing_pods_anti_affinity_refuses_a_matching_newcomer() -> None:
    guard = pod("guard", group=None, on="n0", affinity=anti(term(app="web")))
    result = session(zoned("", ""), [guard, pod("g-0", labels={"app": "web"})])
    assert placed(result) == {"g-0": "n1"}  # packing would have chosen n0
    alone = session(zoned(""), [guard, pod("g-0", labels={"app": "web"})])
    assert alone.why_not == {
        "default/g": "1/1 tasks in gang unschedulable: 0/1 nodes are available: "
        "1 node(s) didn't satisfy existing pods anti-affinity rules"
    }


def test_an_existing_pods_anti_affinity_ignores_other_namespaces() -> None:
    guard = pod("guard", group=None, on="n0", affinity=anti(term(app="web")))
    guard["metadata"]["namespace"] = "other"
    result = session(zoned(""), [guard, pod("g-0", labels={"app": "web"})])
    assert placed(result) == {"g-0": "n0"}


def spread(max_skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> list[Obj]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "s"}},
            **extra,
        }
    ]


def test_spread_max_skew_one_across_two_zones() -> None:
    # zone a: n0, n1; zone b: n2. Counts (a, b) before each pod: (0,0) any -> n0; (1,0) a
    # would make skew 2 -> n2; (1,1) any -> n0 (packing, name); (2,1) a skew 2 -> n2.
    pods = [
        pod(f"g-{i}", labels={"app": "s"}, topologySpreadConstraints=spread()) for i in range(4)
    ]
    result = session(zoned("a", "a", "b"), pods)
    assert Counter(placed(result).values()) == {"n0": 2, "n2": 2}


def test_spread_counts_existing_pods_and_skips_a_node_without_the_label() -> None:
    old = [pod(f"old-{i}", group=None, labels={"app": "s"}, on="n0") for i in range(2)]
    new = pod("g-0", labels={"app": "s"}, topologySpreadConstraints=spread())
    result = session(zoned("a", "b", ""), [*old, new])
    assert placed(result) == {"g-0": "n1"}
    # One domain only: 2 + 1 - 2 = 1 is no skew, so zone a still takes it; n1 has no zone.
    alone = snapshot(zoned("a", ""), gangs=[(make_podgroup("g"), [*old, new])])
    state = _state(alone)
    task = state.tasks[PodKey("default/g-0")]
    reasons = [predicates.check(task, n, pods=state.pods) for n in state.nodes.values()]
    assert reasons == [(), (topologyspread.SPREAD_LABEL_MISSING,)]


def test_spread_min_domains_above_the_domains_seen_makes_the_minimum_zero() -> None:
    # One zone only, minDomains 2: the global minimum is 0, so a zone holding one matching pod
    # already has skew 1 + 1 - 0 = 2 > 1.
    old = pod("old", group=None, labels={"app": "s"}, on="n0")
    new = pod("g-0", labels={"app": "s"}, topologySpreadConstraints=spread(minDomains=2))
    result = session(zoned("a"), [old, new])
    assert result.why_not == {
        "default/g": "1/1 tasks in gang unschedulable: 0/1 nodes are available: "
        "1 node(s) didn't match pod topology spread constraints"
    }


def test_host_port_taken_by_an_existing_pod() -> None:
    taken = pod("web", group=None, on="n0", containers=ports(8080))
    result = session(zoned("", ""), [taken, pod("g-0", containers=ports(8080))])
    assert placed(result) == {"g-0": "n1"}


def test_host_port_conflict_between_two_pods_of_one_gang() -> None:
    pods = [pod(f"g-{i}", containers=ports(8080)) for i in range(2)]
    assert placed(session(zoned("", ""), pods)) == {"g-0": "n0", "g-1": "n1"}
    alone = session(zoned(""), pods)
    assert alone.why_not == {
        "default/g": "1/2 tasks in gang unschedulable: 0/1 nodes are available: "
        "1 node(s) didn't have free ports for the requested pod ports"
    }


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"),
    [
        (("", "TCP"), ("", "TCP"), True),
        (("", "TCP"), ("", "UDP"), False),
        (("10.0.0.1", "TCP"), ("", "TCP"), True),
        (("10.0.0.1", "TCP"), ("10.0.0.2", "TCP"), False),
        (("10.0.0.1", "TCP"), ("10.0.0.1", ""), True),
    ],
)
def test_host_port_conflict_rule(
    mine: tuple[str, str], theirs: tuple[str, str], conflict: bool
) -> None:
    a = HostPort(host_port=80, host_ip=mine[0], protocol=mine[1])
    b = HostPort(host_port=80, host_ip=theirs[0], protocol=theirs[1])
    assert a.conflicts(b) is conflict


@pytest.mark.parametrize(
    ("term_fields", "namespace", "matches"),
    [
        ({}, "default", True),  # no namespaces: the owner's namespace
        ({}, "other", False),
        ({"namespaces": ["other"]}, "other", True),
        ({"namespaces": ["other"]}, "default", False),
        ({"namespaceSelector": {}}, "anywhere", True),  # {}: every namespace
        ({"namespaceSelector": {"matchLabels": {"team": "x"}}}, "other", False),
    ],
)
def test_term_namespaces(term_fields: Obj, namespace: str, matches: bool) -> None:
    parsed = PodAffinityTerm.model_validate({**term(app="x"), **term_fields})
    assert parsed.matches("default", namespace, {"app": "x"}) is matches


def test_a_missing_selector_selects_nothing_and_an_empty_one_everything() -> None:
    assert not PodAffinityTerm(topology_key=HOST).matches("ns", "ns", {"a": "b"})
    empty = PodAffinityTerm(topology_key=HOST, label_selector=LabelSelector())
    assert empty.matches("ns", "ns", {})


def test_parsing_reads_terms_ports_and_merges_match_label_keys() -> None:
    constraint = {**spread()[0], "matchLabelKeys": ["rev"]}
    obj = pod(
        "g-0",
        labels={"app": "s", "rev": "7"},
        affinity=anti(term(app="g")),
        topologySpreadConstraints=[constraint],
        containers=ports(80),
    )
    snap = snapshot(zoned(""), gangs=[(make_podgroup("g"), [obj])])
    task = snap.tasks[0]
    assert task.labels == {"app": "s", "rev": "7"}
    assert task.pod_affinity is not None and len(task.pod_affinity.required_anti) == 1
    assert task.host_ports == (HostPort(host_port=80),)
    selector = task.spread[0].label_selector
    assert selector is not None and selector.match_labels == {"app": "s", "rev": "7"}


def test_every_pod_on_a_node_is_in_the_snapshot_and_pending_ones_are_not() -> None:
    pods = [pod("web", group=None, labels={"a": "b"}, on="n0"), pod("g-0")]
    snap = snapshot(zoned(""), gangs=[(make_podgroup("g"), pods)])
    assert [(p.key, p.node, p.labels) for p in snap.pods] == [("default/web", "n0", {"a": "b"})]


def _state(snap: Snapshot) -> SessionState:
    return SessionState(snap)


def _view(state: SessionState) -> dict[str, list[str]]:
    return {n: sorted(pods) for n, pods in state.pods.on_node.items() if pods}


def test_view_moves_with_the_session_and_undo_is_exact() -> None:
    members = [one_per_node(0), one_per_node(1)]
    victim = pod("v", group=None, labels={"app": "g"}, on="n1")
    snap = snapshot(
        zoned("", ""), gangs=[(make_podgroup("g", min_member=2), members)], pods=[victim]
    )
    state = _state(snap)
    before = _view(state)
    assert before == {"n1": ["default/v"]}
    state.allocate(PodKey("default/g-0"), NodeName("n0"))
    assert _view(state) == {"n0": ["default/g-0"], "n1": ["default/v"]}
    task = state.tasks[PodKey("default/g-1")]
    # n0 holds its sibling, n1 a pod it repels: both refuse it.
    reasons = [
        predicates.check(task, state.nodes[NodeName(n)], pods=state.pods) for n in ("n0", "n1")
    ]
    assert reasons == [(interpodaffinity.ANTI_AFFINITY_MISMATCH,)] * 2
    state.deallocate(PodKey("default/g-0"))
    state.pipeline(PodKey("default/g-0"), NodeName("n1"))
    state.unpipeline(PodKey("default/g-0"))
    assert _view(state) == before


def assert_eviction_clears_and_undo_restores(
    holder: Obj, new: Obj, reason: str, **options: Any
) -> None:
    """`holder` (r-0, running on n0) refuses `new` (g-0) n0 for `reason`; evicting it lets
    g-0 in, and undoing the eviction refuses it again."""
    group = make_podgroup("r", min_member=1)
    group["status"]["phase"] = "Running"
    gangs = [(group, [holder]), (make_podgroup("g"), [new])]
    state = _state(snapshot(zoned(""), gangs=gangs, **options))
    node, task = state.nodes[NodeName("n0")], state.tasks[PodKey("default/g-0")]
    assert predicates.other_pods(task, node, state.pods) == reason
    before = state.evict(PodKey("default/r-0"))
    assert predicates.other_pods(task, node, state.pods) is None
    state.unevict(PodKey("default/r-0"), before)
    assert predicates.other_pods(task, node, state.pods) == reason


def test_evicting_frees_the_port_and_unevicting_restores_it() -> None:
    holder = pod("r-0", group="r", on="n0", containers=ports(80))
    new = pod("g-0", containers=ports(80))
    assert_eviction_clears_and_undo_restores(holder, new, nodeports.PORTS_TAKEN)


def test_a_session_without_these_rules_keeps_the_view_off() -> None:
    snap = snapshot(
        zoned("", ""), gangs=[(make_podgroup("g"), [pod("g-0"), pod("x", None, on="n0")])]
    )
    state = _state(snap)
    assert not state.pods.active and state.pods.on_node == {}
    state.allocate(PodKey("default/g-0"), NodeName("n1"))
    assert state.pods.on_node == {}


def _scored(pods: list[Obj], zones: tuple[str, ...]) -> tuple[SessionState, Any]:
    snap = snapshot(zoned(*zones), gangs=[(make_podgroup("g"), pods)])
    state = _state(snap)
    return state, state.tasks[PodKey("default/g-0")]


def test_preferred_affinity_score_normalised_over_candidates() -> None:
    # Preferred: weight 10 towards app=db in the zone, weight 4 away from app=noisy on the host.
    # Raw: n0 (zone a, db on n1, noisy on n0) 10 - 4 = 6; n1 (zone a) 10; n2 (zone b) 0.
    # Normalised (s - min) * 100 / (max - min): 60, 100, 0.
    affinity = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": term(ZONE, app="db")}
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 4, "podAffinityTerm": term(app="noisy")}
            ]
        },
    }
    pods = [
        pod("g-0", affinity=affinity),
        pod("db", None, labels={"app": "db"}, on="n1"),
        pod("noisy", None, labels={"app": "noisy"}, on="n0"),
    ]
    state, task = _scored(pods, ("a", "a", "b"))
    nodes = [state.nodes[NodeName(n)] for n in ("n0", "n1", "n2")]
    assert interpodaffinity.scores(task, nodes, state.pods) == {"n0": 60, "n1": 100, "n2": 0}


def test_existing_pods_required_affinity_scores_with_the_hard_weight() -> None:
    # An existing pod requiring app=web in its zone pulls a web pod there (weight 1): raw 1/0.
    fan = pod("fan", None, on="n0", affinity=near(term(ZONE, app="web")))
    state, task = _scored([pod("g-0", labels={"app": "web"}), fan], ("a", "b"))
    nodes = [state.nodes[NodeName(n)] for n in ("n0", "n1")]
    assert interpodaffinity.scores(task, nodes, state.pods) == {"n0": 100, "n1": 0}


def test_schedule_anyway_spread_score() -> None:
    # Zones a (n0, n1) and b (n2); matching pods: 3 in a, 1 in b; two domains: weight ln(4).
    # Raw: a = round(3 * 1.386) = 4, b = round(1.386) = 1; normalised 100 * (4 + 1 - s) // 4:
    # a 25, b 100.
    old = [
        pod(f"o-{i}", None, labels={"app": "s"}, on=n)
        for i, n in enumerate(("n0", "n1", "n1", "n2"))
    ]
    soft = pod("g-0", labels={"app": "s"}, topologySpreadConstraints=spread(when="ScheduleAnyway"))
    state, task = _scored([soft, *old], ("a", "a", "b"))
    nodes = [state.nodes[NodeName(n)] for n in ("n0", "n1", "n2")]
    scores = topologyspread.scores(task, nodes, state.pods, predicates.inclusion)
    assert scores == {"n0": 25, "n1": 25, "n2": 100}
    extra = scoring.extra_scores(task, nodes, state.pods, (2, 2), predicates.inclusion)
    assert extra == {"n0": 50, "n1": 50, "n2": 200}


def test_schedule_anyway_spread_steers_a_packing_session() -> None:
    old = pod("o", None, labels={"app": "s"}, on="n0")
    soft = pod("g-0", labels={"app": "s"}, topologySpreadConstraints=spread(when="ScheduleAnyway"))
    result = session(zoned("a", "b"), [old, soft])
    assert placed(result) == {"g-0": "n1"}


CLASSES = [{"metadata": {"name": "low"}, "value": 1}, {"metadata": {"name": "high"}, "value": 9}]
PREEMPT = SessionConfig(actions=parse_actions("enqueue, allocate, backfill, reclaim, preempt"))


def _port_holder(group: str | None) -> Obj:
    holder = pod(f"{group or 'web'}-0", group=group, on="n0", containers=ports(80))
    holder["spec"]["priorityClassName"] = "low"
    return holder


def _preempting(holder: Obj, groups: list[Obj]) -> SessionResult:
    wanting = pod("high-0", group="high", containers=ports(80), priorityClassName="high")
    gangs = [
        (g, [p for p in (holder, wanting) if _group(p) == g["metadata"]["name"]]) for g in groups
    ]
    snap = snapshot(
        zoned(""),
        gangs=gangs,
        pods=[holder] if _group(holder) is None else [],
        priority_classes=CLASSES,
    )
    return run_session(snap, PREEMPT)


def test_preempt_evicts_the_lower_priority_pod_holding_the_port() -> None:
    low = make_podgroup("low", min_member=1, phase="Running", priorityClassName="low")
    high = make_podgroup("high", min_member=1, priorityClassName="high")
    result = _preempting(_port_holder("low"), [low, high])
    assert [e.pod for e in result.evictions] == ["default/low-0"]


def test_preempt_evicts_nobody_when_a_foreign_pod_holds_the_port() -> None:
    high = make_podgroup("high", min_member=1, priorityClassName="high")
    result = _preempting(_port_holder(None), [high])
    assert result.evictions == ()
    assert (
        "1 node(s) didn't have free ports for the requested pod ports"
        in result.why_not["default/high"]
    )


def test_counts_kept_up_to_date_equal_counts_made_afresh() -> None:
    spec: dict[str, Any] = {
        "affinity": {**anti(term(app="g")), **near(term(ZONE, app="g"))},
        "topologySpreadConstraints": spread(),
    }
    members = [pod(f"g-{i}", labels={"app": "g"}, **spec) for i in range(4)]
    others = [
        pod("s-0", None, labels={"app": "s"}, on="n0"),
        pod("guard", None, labels={"app": "g"}, on="n2", affinity=anti(term(ZONE, app="g"))),
    ]
    group = make_podgroup("g", min_member=4)
    state = _state(snapshot(zoned("a", "a", "b", "b"), gangs=[(group, members)], pods=others))
    task = state.tasks[PodKey("default/g-3")]

    def same() -> None:
        kept = state.pods.prepared(task, predicates.inclusion)
        fresh = podview._prepare(state.pods, task, predicates.inclusion)
        assert (kept.affinity, kept.anti, kept.existing) == (
            fresh.affinity,
            fresh.anti,
            fresh.existing,
        )
        assert [(s.counts, s.minimum) for s in kept.spread] == [
            (s.counts, s.minimum) for s in fresh.spread
        ]

    same()
    state.allocate(PodKey("default/g-0"), NodeName("n0"))
    same()
    state.pipeline(PodKey("default/g-1"), NodeName("n3"))
    same()
    state.unpipeline(PodKey("default/g-1"))
    state.deallocate(PodKey("default/g-0"))
    same()
    # Back to the start: only the guard (app=g, zone b) matches the affinity term.
    assert state.pods.prepared(task, predicates.inclusion).affinity == {(ZONE, "b"): 1}


# Volume counts (NodeVolumeLimits) ---------------------------------------------------------

DRIVER = "csi.example.com"


def with_claims(obj: Obj, *claims: str) -> Obj:
    obj["spec"]["volumes"] = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims
    ]
    return obj


def csi_storage(limits: dict[str, dict[str, int]], *claims: str, driver: str = DRIVER) -> Storage:
    """Each claim bound to its own CSI PV of `driver`; each node's CSINode counts."""
    pvcs = [
        {"metadata": {"namespace": "default", "name": c}, "spec": {"volumeName": f"pv-{c}"}}
        for c in claims
    ]
    pvs = [
        {"metadata": {"name": f"pv-{c}"}, "spec": {"csi": {"driver": driver, "volumeHandle": c}}}
        for c in claims
    ]
    csi_nodes = [
        {
            "metadata": {"name": node},
            "spec": {"drivers": [{"name": d, "allocatable": {"count": n}} for d, n in per.items()]},
        }
        for node, per in limits.items()
    ]
    return Storage.parse(pvcs, pvs, [], csi_nodes=csi_nodes)


def volume_session(nodes: list[Obj], pods: list[Obj], storage: Storage) -> SessionResult:
    members = sum(1 for p in pods if "nodeName" not in p["spec"] and _group(p) == "g")
    group = make_podgroup("g", min_member=members)
    return run_session(snapshot(nodes, gangs=[(group, pods)], storage=storage), PACK)


def test_a_node_at_its_volume_count_is_passed_over() -> None:
    held = with_claims(pod("old", group=None, on="n0"), "old")
    new = with_claims(pod("g-0"), "new")
    result = volume_session(
        zoned("", ""), [held, new], csi_storage({"n0": {DRIVER: 1}}, "old", "new")
    )
    assert placed(result) == {"g-0": "n1"}


def test_a_gang_past_the_only_nodes_volume_count_waits_and_says_why() -> None:
    pods = [with_claims(pod(f"g-{i}"), f"c{i}") for i in range(2)]
    result = volume_session(zoned(""), pods, csi_storage({"n0": {DRIVER: 1}}, "c0", "c1"))
    assert result.why_not == {
        "default/g": "1/2 tasks in gang unschedulable: 0/1 nodes are available: "
        "1 node(s) exceed max volume count"
    }


@pytest.mark.parametrize(
    ("limits", "claims", "placed_count"),
    [
        pytest.param({"n0": {DRIVER: 1}}, ("shared", "shared"), 2, id="one-volume-shared"),
        pytest.param({"n0": {"other.io": 1}}, ("c0", "c1"), 2, id="other-driver-limited"),
        pytest.param({}, ("c0", "c1"), 2, id="no-csinode"),
        pytest.param({"n0": {DRIVER: 2}}, ("c0", "c1"), 2, id="within-count"),
        pytest.param({"n0": {DRIVER: 0}}, ("c0", "c1"), 0, id="count-zero"),
    ],
)
def test_volume_count_rule(
    limits: dict[str, dict[str, int]], claims: tuple[str, ...], placed_count: int
) -> None:
    pods = [with_claims(pod(f"g-{i}"), c) for i, c in enumerate(claims)]
    result = volume_session(zoned(""), pods, csi_storage(limits, *set(claims)))
    assert len(result.node_of) == placed_count


def test_evicting_frees_the_volume_count_and_unevicting_restores_it() -> None:
    holder = with_claims(pod("r-0", group="r", on="n0"), "held")
    new = with_claims(pod("g-0"), "new")
    storage = csi_storage({"n0": {DRIVER: 1}}, "held", "new")
    assert_eviction_clears_and_undo_restores(
        holder, new, volumelimits.VOLUME_COUNT, storage=storage
    )
