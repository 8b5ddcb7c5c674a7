"""nodeorder's balanced allocation, preferred node affinity and PreferNoSchedule taint scores
(C7.9), their normalization over the candidate nodes, and how they decide the best node."""

from __future__ import annotations

from typing import Any

import pytest

from models.keys import JobKey
from scheduling.api.snapshot import NodeName
from scheduling.cache.tasks import task_info
from scheduling.plugins import scoring
from scheduling.plugins.scoring import ScoringConfig
from tests.unit.scheduling.builders import NodeBuilder, PodBuilder, make_node, make_pod

GPU = scoring.GPU
PREFER = "PreferNoSchedule"


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def prefer(pod: PodBuilder, *terms: tuple[int, dict[str, Any]]) -> PodBuilder:
    """The pod with preferred node affinity terms, each (weight, preference)."""
    preferred = [{"weight": weight, "preference": term} for weight, term in terms]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    return pod.spec(affinity=affinity)


ZONE_A = {"matchExpressions": [expr("zone", "In", "a")]}
ZONE_B = {"matchExpressions": [expr("zone", "In", "b")]}
SSD = {"matchExpressions": [expr("disk", "In", "ssd")]}
GPU_NODE = make_node("n1").resource(GPU, "4")

BALANCED = [
    pytest.param(make_pod("p"), make_node("n1"), [], 50 + (50 + 93 - 100) // 2, id="empty-node"),
    pytest.param(
        make_pod("p").request(memory="3Gi"),
        make_node("n1"),
        [make_pod("r", cpu="2")],
        50 + (50 + 87 - 81) // 2,
        id="placing-evens-out-the-node",
    ),
    pytest.param(
        make_pod("p"),
        make_node("n1"),
        [make_pod("r", cpu="3500m")],
        50 + (50 + 62 - 62) // 2,
        id="fraction-capped-at-one",
    ),
    pytest.param(make_pod("p", cpu=""), make_node("n1"), [], 0, id="best-effort-scores-zero"),
    pytest.param(
        make_pod("p", cpu="").request(memory="2Gi"),
        make_node("n1"),
        [],
        50 + (50 + 87 - 100) // 2,
        id="real-requests-not-defaults",
    ),
    pytest.param(
        make_pod("p"),
        make_node("n1"),
        [make_pod("r", cpu="")],
        50 + (50 + 93 - 100) // 2,
        id="request-less-running-pod-uses-nothing",
    ),
    pytest.param(
        make_pod("p").request(**{GPU: "1"}),
        GPU_NODE,
        [],
        50 + (50 + 94 - 100) // 2,
        id="gpu-requested-three-resources",
    ),
    pytest.param(
        make_pod("p"), GPU_NODE, [], 50 + (50 + 93 - 100) // 2, id="gpu-not-requested-left-out"
    ),
    pytest.param(
        make_pod("p").request(**{GPU: "1"}),
        make_node("n1"),
        [],
        50 + (50 + 93 - 100) // 2,
        id="gpu-node-lacks-left-out",
    ),
    pytest.param(
        make_pod("p"),
        make_node("n1", memory="0"),
        [],
        50 + (50 + 100 - 100) // 2,
        id="one-resource",
    ),
]


@pytest.mark.parametrize(("pod", "node", "running", "expected"), BALANCED)
def test_balanced_allocation(
    pod: PodBuilder, node: NodeBuilder, running: list[PodBuilder], expected: int
) -> None:
    """With pod and without: (1 - std of the fill fractions) * 100, truncated, then
    50 + (50 + after - before) / 2 in integers."""
    info = node.info(*(p.on("n1").info() for p in running))
    assert scoring.balanced_allocation(pod.info(), info) == expected


LABELLED = make_node("n1").label("zone", "a").label("disk", "ssd")
NAME_FIELD = {"matchFields": [expr("metadata.name", "In", "n1")]}

AFFINITY = [
    pytest.param(prefer(make_pod("p")), LABELLED, 0, id="no-terms"),
    pytest.param(prefer(make_pod("p"), (5, ZONE_A), (3, SSD)), LABELLED, 8, id="weights-summed"),
    pytest.param(prefer(make_pod("p"), (5, ZONE_A), (7, ZONE_B)), LABELLED, 5, id="unmatched"),
    pytest.param(prefer(make_pod("p"), (0, ZONE_A)), LABELLED, 0, id="zero-weight"),
    pytest.param(prefer(make_pod("p"), (4, {})), LABELLED, 0, id="empty-term-matches-none"),
    pytest.param(prefer(make_pod("p"), (6, NAME_FIELD)), LABELLED, 6, id="node-name-field"),
    pytest.param(
        prefer(
            make_pod("p"),
            (2, {"matchExpressions": [expr("zone", "In", "a"), *SSD["matchExpressions"]]}),
        ),
        LABELLED,
        2,
        id="every-expression-of-a-term",
    ),
]


@pytest.mark.parametrize(("pod", "node", "expected"), AFFINITY)
def test_preferred_affinity_raw(pod: PodBuilder, node: NodeBuilder, expected: int) -> None:
    """Before normalization the score is the summed weights of the matching terms."""
    assert scoring.preferred_affinity(pod.info(), node.info()) == expected


TAINTS = [
    pytest.param(make_pod("p"), make_node("n1").taint("k", "v", PREFER), 1, id="untolerated"),
    pytest.param(
        make_pod("p").tolerate("k", "v"),
        make_node("n1").taint("k", "v", PREFER).taint("j", "", PREFER),
        1,
        id="one-of-two-tolerated",
    ),
    pytest.param(make_pod("p"), make_node("n1").taint("k", "v"), 0, id="no-schedule-not-counted"),
    pytest.param(
        make_pod("p").tolerate("k", "v", effect="NoSchedule"),
        make_node("n1").taint("k", "v", PREFER),
        1,
        id="other-effect-toleration-ignored",
    ),
    pytest.param(
        make_pod("p").tolerate(operator="Exists"),
        make_node("n1").taint("k", "v", PREFER).taint("j", "", PREFER),
        0,
        id="empty-effect-exists-tolerates-all",
    ),
    pytest.param(
        make_pod("p").tolerate("k", "v", effect=PREFER),
        make_node("n1").taint("k", "v", PREFER),
        0,
        id="prefer-effect-toleration",
    ),
]


@pytest.mark.parametrize(("pod", "node", "expected"), TAINTS)
def test_untolerated_taints_raw(pod: PodBuilder, node: NodeBuilder, expected: int) -> None:
    """Only PreferNoSchedule taints count; the filter has already refused the others."""
    assert scoring.untolerated_taints(pod.info(), node.info()) == expected


NORMALIZE = [
    pytest.param([0, 0, 0], False, [0, 0, 0], id="all-zero"),
    pytest.param([0, 0, 0], True, [100, 100, 100], id="all-zero-reversed"),
    pytest.param([1, 2, 4], False, [25, 50, 100], id="scaled-by-max"),
    pytest.param([1, 2, 4], True, [75, 50, 0], id="reversed"),
    pytest.param([1, 3], False, [33, 100], id="integer-division"),
    pytest.param([1, 3], True, [67, 0], id="integer-division-reversed"),
    pytest.param([0, 5], False, [0, 100], id="zero-stays-zero"),
    pytest.param([7], False, [100], id="single"),
    pytest.param([], True, [], id="no-nodes"),
]


@pytest.mark.parametrize(("raw", "reverse", "expected"), NORMALIZE)
def test_normalize(raw: list[int], reverse: bool, expected: list[int]) -> None:
    """Scores are scaled to 0-100 by the highest; with max 0 nothing is scaled."""
    assert scoring.normalize(raw, reverse) == expected


EMPTY_NODE = 81 + 71  # least allocated and balanced allocation for make_pod("p")


@pytest.mark.parametrize(
    ("pod", "nodes", "config", "expected"),
    [
        pytest.param(
            make_pod("p"),
            [make_node("a"), make_node("b")],
            ScoringConfig(),
            [EMPTY_NODE + 300, EMPTY_NODE + 300],
            id="no-taint-full-taint-score-everywhere",
        ),
        pytest.param(
            make_pod("p"),
            [make_node("a").taint("k", "", PREFER), make_node("b")],
            ScoringConfig(),
            [EMPTY_NODE, EMPTY_NODE + 300],
            id="tainted-node-loses-taint-score",
        ),
        pytest.param(
            prefer(make_pod("p"), (1, ZONE_A), (3, SSD)),
            [make_node("a").label("zone", "a"), make_node("b").label("disk", "ssd")],
            ScoringConfig(),
            [EMPTY_NODE + 300 + 2 * 33, EMPTY_NODE + 300 + 2 * 100],
            id="affinity-normalized-and-weighted",
        ),
        pytest.param(
            prefer(make_pod("p"), (1, ZONE_A)),
            [make_node("a").label("zone", "a"), make_node("b")],
            ScoringConfig(node_affinity=0, taint_toleration=0, balanced_allocation=0),
            [81, 81],
            id="zero-weights-disable",
        ),
    ],
)
def test_node_scores(
    pod: PodBuilder, nodes: list[NodeBuilder], config: ScoringConfig, expected: list[int]
) -> None:
    """Each node's sum, with the normalized scores weighted (affinity 2, taints 3)."""
    assert scoring.node_scores(pod.info(), [n.info() for n in nodes], config) == expected


def test_best_node_preferred_affinity_decides() -> None:
    """Equal nodes tie to the first name; a preferred term on the other one wins it."""
    nodes = [make_node("a").info(), make_node("b").label("zone", "b").info()]
    assert scoring.best_node(make_pod("p").info(), nodes, ScoringConfig()).name == "a"
    task = prefer(make_pod("p"), (1, ZONE_B)).info()
    assert scoring.best_node(task, nodes, ScoringConfig()).name == "b"
    assert scoring.best_node(task, nodes, ScoringConfig(node_affinity=0)).name == "a"


def test_best_node_prefer_no_schedule_taint_decides() -> None:
    """A PreferNoSchedule taint turns the tie away from its node unless the pod tolerates it."""
    nodes = [make_node("a").taint("k", "v", PREFER).info(), make_node("b").info()]
    assert scoring.best_node(make_pod("p").info(), nodes, ScoringConfig()).name == "b"
    tolerant = make_pod("p").tolerate("k", "v").info()
    assert scoring.best_node(tolerant, nodes, ScoringConfig()).name == "a"
    assert (
        scoring.best_node(make_pod("p").info(), nodes, ScoringConfig(taint_toleration=0)).name
        == "a"
    )


def test_best_node_adds_extra_scores() -> None:
    """Scores computed elsewhere (pod affinity, topology spread) are added per node."""
    nodes = [make_node("a").info(), make_node("b").info()]
    extra = {NodeName("b"): 1}
    assert scoring.best_node(make_pod("p").info(), nodes, ScoringConfig(), extra=extra).name == "b"
    assert scoring.best_node(make_pod("p").info(), nodes, ScoringConfig(), extra={}).name == "a"


def test_ranked_orders_by_score_then_name() -> None:
    """Preempt tries nodes best first: the tainted node last, the others by name."""
    nodes = [
        make_node("c").info(),
        make_node("a").taint("k", "", PREFER).info(),
        make_node("b").info(),
    ]
    ranked = scoring.ranked(make_pod("p").info(), nodes, ScoringConfig())
    assert [n.name for n in ranked] == ["b", "c", "a"]


def test_task_info_reads_preferred_affinity() -> None:
    """The pod's preferred terms are kept with their weights for scoring."""
    pod = prefer(make_pod("p"), (5, ZONE_A)).obj()
    (term,) = task_info(pod, JobKey("default/pg")).preferred_affinity
    assert term.weight == 5
    assert [(r.key, r.operator, r.values) for r in term.preference.match_expressions] == [
        ("zone", "In", ("a",))
    ]
    assert task_info(make_pod("p").obj(), JobKey("default/pg")).preferred_affinity == ()
