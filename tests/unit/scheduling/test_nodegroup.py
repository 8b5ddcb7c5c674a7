"""The nodegroup plugin: queues' spec.affinity keeps their pods in node groups.

The table is Volcano's `pkg/scheduler/plugins/nodegroup/nodegroup_test.go` (TestNodeGroup): the
same five nodes (group1-4 and one unlabelled), queues, arguments and expected scores and
predicate outcomes; `None` stands for api.Success, a reason for UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import pytest

from models.scheduling import Queue
from scheduling.actions.registry import run_session
from scheduling.api.nodegroups import NODE_GROUP_LABEL, NodeGroupConfig, QueueGroups
from scheduling.api.snapshot import NodeName, PodKey
from scheduling.cache.objects import queue_info
from scheduling.framework import conf
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.plugins import nodegroup, predicates, scoring
from scheduling.plugins.nodegroup import AFFINITY_NOT_FOUND, LABEL_NOT_FOUND, UNSATISFIED
from tests.unit.scheduling.builders import gang, make_node, make_queue, snapshot

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
OK: Final = None


def _affinity(
    required: list[str] | None = None,
    preferred: list[str] | None = None,
    anti_required: list[str] | None = None,
    anti_preferred: list[str] | None = None,
) -> Obj:
    near: Obj = {}
    far: Obj = {}
    if required is not None:
        near["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if preferred is not None:
        near["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if anti_required is not None:
        far["requiredDuringSchedulingIgnoredDuringExecution"] = anti_required
    if anti_preferred is not None:
        far["preferredDuringSchedulingIgnoredDuringExecution"] = anti_preferred
    affinity: Obj = {}
    if near:
        affinity["nodeGroupAffinity"] = near
    if far:
        affinity["nodeGroupAntiAffinity"] = far
    return affinity


def _node(name: str, group: str | None, cpu: str = "4", memory: str = "16Gi") -> Obj:
    builder = make_node(name, cpu=cpu, memory=memory)
    return (builder.label(NODE_GROUP_LABEL, group) if group is not None else builder).obj()


NODES: Final = [
    _node("n1", "group1", cpu="2", memory="4Gi"),
    _node("n2", "group2"),
    _node("n3", "group3"),
    _node("n4", "group4"),
    _node("n5", None),
]
# Volcano's queues: q1 and root want group1/group3 (preferring group3), refuse group2/group4
# but only softly avoid group4; q2 prefers a group it does not require.
FULL: Final = _affinity(["group1", "group3"], ["group3"], ["group2", "group4"], ["group4"])
ROOT: Final = make_queue("root", affinity=FULL)
Q1: Final = make_queue("q1", parent="root", affinity=FULL)
Q2: Final = make_queue(
    "q2", parent="root", affinity=_affinity(["group1"], ["group3"], ["group2"], ["group4"])
)
Q3: Final = make_queue("q3", affinity=_affinity(preferred=["group1", "group3"]))
NO_AFFINITY: Final = make_queue("q-no-affinity", parent="root")
Q1_CHILD: Final = make_queue("q1-child", parent="q1")
NO_AFFINITY_CHILD: Final = make_queue("q-no-affinity-child", parent="q-no-affinity")
ROOT_NO_AFFINITY: Final = make_queue("root-no-affinity")


def _state(queues: list[Obj], queue: str, config: NodeGroupConfig | None) -> SessionState:
    """One pending 2-cpu pod `p` in `queue`, over the five nodes."""
    job = gang("pg", 1, cpu="2", queue=queue)
    return SessionState(snapshot(NODES, [job], queues=queues), SessionConfig(nodegroup=config))


TABLE: Final = [
    pytest.param(
        [Q1],
        "q1",
        NodeGroupConfig(),
        {"n1": 100, "n2": 0, "n3": 150, "n4": -1, "n5": 0},
        {"n1": OK, "n2": UNSATISFIED, "n3": OK, "n4": OK, "n5": LABEL_NOT_FOUND},
        id="soft-constraints-subset-of-hard",
    ),
    pytest.param(
        [Q2],
        "q2",
        NodeGroupConfig(),
        {"n1": 100, "n2": 0, "n3": 50, "n4": -1, "n5": 0},
        {"n1": OK, "n2": UNSATISFIED, "n3": OK, "n4": OK, "n5": LABEL_NOT_FOUND},
        id="soft-constraints-not-subset-of-hard",
    ),
    pytest.param(
        [ROOT_NO_AFFINITY],
        "root-no-affinity",
        NodeGroupConfig(strict=False),
        dict.fromkeys(("n1", "n2", "n3", "n4", "n5"), 0),
        {
            **dict.fromkeys(("n1", "n2", "n3", "n4"), AFFINITY_NOT_FOUND),
            "n5": OK,
        },
        id="no-affinity-not-strict-only-unlabelled-nodes",
    ),
    pytest.param(
        [ROOT, Q1, Q1_CHILD],
        "q1-child",
        NodeGroupConfig(hierarchy=True),
        {"n1": 100, "n2": 0, "n3": 150, "n4": -1, "n5": 0},
        {"n1": OK, "n2": UNSATISFIED, "n3": OK, "n4": OK, "n5": LABEL_NOT_FOUND},
        id="inherits-from-parent",
    ),
    pytest.param(
        [ROOT, NO_AFFINITY, NO_AFFINITY_CHILD],
        "q-no-affinity-child",
        NodeGroupConfig(hierarchy=True),
        {"n1": 100, "n2": 0, "n3": 150, "n4": -1, "n5": 0},
        {"n1": OK, "n2": UNSATISFIED, "n3": OK, "n4": OK, "n5": LABEL_NOT_FOUND},
        id="inherits-from-nearest-ancestor-with-affinity",
    ),
    pytest.param(
        [NO_AFFINITY],
        "q-no-affinity",
        NodeGroupConfig(),
        dict.fromkeys(("n1", "n2", "n3", "n4", "n5"), 0),
        {**dict.fromkeys(("n1", "n2", "n3", "n4"), AFFINITY_NOT_FOUND), "n5": LABEL_NOT_FOUND},
        id="queue-without-affinity-strict",
    ),
    pytest.param(
        [Q3],
        "q3",
        NodeGroupConfig(preferred_order=True),
        {"n1": 50, "n2": 0, "n3": 25, "n4": 0, "n5": 0},
        {"n1": OK, "n2": UNSATISFIED, "n3": OK, "n4": UNSATISFIED, "n5": LABEL_NOT_FOUND},
        id="preferred-order",
    ),
]


@pytest.mark.parametrize(("queues", "queue", "config", "scores", "refusals"), TABLE)
def test_volcano_table(
    queues: list[Obj],
    queue: str,
    config: NodeGroupConfig,
    scores: dict[str, int],
    refusals: dict[str, str | None],
) -> None:
    state = _state(queues, queue, config)
    task = state.tasks[PodKey("default/pg-worker-0")]
    for name, node in sorted(state.nodes.items()):
        assert nodegroup.score(task, node) == scores[name], name
        assert nodegroup.refusal(task, node) == refusals[name], name


def test_without_hierarchy_a_child_keeps_no_affinity() -> None:
    """enableHierarchy off: q1-child does not take q1's groups (Volcano's default)."""
    state = _state([ROOT, Q1, Q1_CHILD], "q1-child", NodeGroupConfig())
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.refusal(task, state.nodes[NodeName("n1")]) == AFFINITY_NOT_FOUND


def test_an_empty_affinity_stops_inheritance() -> None:
    """`affinity: {}` is the queue's own (empty) affinity: nothing is inherited, so it is
    treated as no affinity at all."""
    child = make_queue("child", parent="q1", affinity={})
    state = _state([ROOT, Q1, child], "child", NodeGroupConfig(hierarchy=True))
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.refusal(task, state.nodes[NodeName("n3")]) == AFFINITY_NOT_FOUND


def test_a_queue_in_a_parent_cycle_inherits_nothing_it_lacks() -> None:
    a = make_queue("a", parent="b")
    b = make_queue("b", parent="a")
    state = _state([a, b], "a", NodeGroupConfig(hierarchy=True))
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.refusal(task, state.nodes[NodeName("n1")]) == AFFINITY_NOT_FOUND


def test_repeated_preferred_groups_score_as_volcano_indexes_them() -> None:
    """Volcano's index map keeps a repeated group's last position and counts groups once."""
    queue = make_queue("q", affinity=_affinity(preferred=["group1", "group3", "group1"]))
    state = _state([queue], "q", NodeGroupConfig(preferred_order=True))
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.score(task, state.nodes[NodeName("n1")]) == 0  # index 2 of 2 groups
    assert nodegroup.score(task, state.nodes[NodeName("n3")]) == 25
    three = make_queue("q", affinity=_affinity(preferred=["group1", "group2", "group3"]))
    state = _state([three], "q", NodeGroupConfig(preferred_order=True))
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.score(task, state.nodes[NodeName("n2")]) == Fraction(100, 3)


def test_without_the_plugin_tasks_carry_no_rule() -> None:
    """A configuration without nodegroup places as before: no node is refused or scored."""
    state = _state([Q1], "q1", None)
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert task.node_groups is None
    assert predicates.check(task, state.nodes[NodeName("n5")]) == ()


def test_enable_switches_turn_each_half_off() -> None:
    off = _state([Q1], "q1", NodeGroupConfig(predicate=False))
    task = off.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.refusal(task, off.nodes[NodeName("n2")]) is None
    assert nodegroup.score(task, off.nodes[NodeName("n3")]) == 150
    off = _state([Q1], "q1", NodeGroupConfig(node_order=False))
    task = off.tasks[PodKey("default/pg-worker-0")]
    assert nodegroup.refusal(task, off.nodes[NodeName("n2")]) == UNSATISFIED
    assert nodegroup.score(task, off.nodes[NodeName("n3")]) == 0


def test_check_and_scores_include_the_plugin() -> None:
    state = _state([Q1], "q1", NodeGroupConfig())
    task = state.tasks[PodKey("default/pg-worker-0")]
    assert predicates.check(task, state.nodes[NodeName("n2")]) == (UNSATISFIED,)
    assert predicates.check(task, state.nodes[NodeName("n3")]) == ()
    plain = task.model_copy(update={"node_groups": None})
    config = scoring.ScoringConfig()
    for name, extra in (("n3", 150), ("n4", -1), ("n5", 0)):
        node = state.nodes[NodeName(name)]
        assert scoring.total_score(task, node, config) == (
            scoring.total_score(plain, node, config) + extra
        )


def test_queue_info_reads_the_affinity() -> None:
    parsed = queue_info(Queue.load(Q2))
    assert parsed.node_groups == QueueGroups(
        required=frozenset({"group1"}),
        preferred=("group3",),
        anti_required=frozenset({"group2"}),
        anti_preferred=frozenset({"group4"}),
    )
    assert queue_info(Queue.load(NO_AFFINITY)).node_groups is None
    empty = queue_info(Queue.load(make_queue("e", affinity={}))).node_groups
    assert empty is not None and empty.unset


def _placed(queue: Obj, pods: int, config: SessionConfig) -> dict[str, str]:
    """Where a session puts `pods` 1-cpu pods of one gang in `queue`, by pod."""
    nodes = [
        _node("a1", "a", cpu="2"),
        _node("b1", "b", cpu="2"),
        _node("c1", "c", cpu="8"),
        _node("plain", None, cpu="8"),
    ]
    job = gang("pg", pods, cpu="1", queue=queue["metadata"]["name"])
    result = run_session(snapshot(nodes, [job], queues=[queue]), config)
    return {p.pod: p.node for p in result.placements}


def test_allocate_keeps_pods_in_their_groups_and_prefers_as_asked() -> None:
    """Required a and b, preferring b, refusing c: b fills first, then a; c and the
    unlabelled node, though emptier, are never used."""
    queue = make_queue("q", affinity=_affinity(["a", "b"], ["b"], ["c"]))
    placed = _placed(queue, 4, SessionConfig(nodegroup=NodeGroupConfig()))
    assert sorted(placed.values()) == ["a1", "a1", "b1", "b1"]
    first = _placed(queue, 1, SessionConfig(nodegroup=NodeGroupConfig()))
    assert list(first.values()) == ["b1"]
    assert set(_placed(queue, 4, SessionConfig()).values()) >= {"c1", "plain"}


def test_the_configuration_switches_the_plugin_on() -> None:
    text = conf.CALDERA_DEFAULT + (
        "  - name: nodegroup\n"
        "    enableHierarchy: true\n"
        "    enableNodeOrder: false\n"
        "    arguments:\n"
        "      strict: 'false'\n"
        "      enablePreferredOrder: true\n"
    )
    loaded = conf.load(text)
    assert loaded.session.nodegroup == NodeGroupConfig(
        strict=False, preferred_order=True, hierarchy=True, node_order=False
    )
    assert conf.load(conf.CALDERA_DEFAULT).session.nodegroup is None
    with pytest.raises(ValueError, match="argument strict must be true or false"):
        conf.load(conf.CALDERA_DEFAULT + "  - name: nodegroup\n    arguments: {strict: maybe}\n")
    with pytest.raises(ValueError, match="nodegroup has no such argument"):
        conf.load(conf.CALDERA_DEFAULT + "  - name: nodegroup\n    arguments: {weight: 2}\n")
