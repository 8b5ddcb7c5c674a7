"""Node scores (C7.9 least/most allocated, C7.10 binpack) and the deterministic best node."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduling.plugins import scoring
from scheduling.plugins.scoring import ScoringConfig
from tests.unit.scheduling.builders import NodeBuilder, PodBuilder, make_node, make_pod

GPU = "nvidia.com/gpu"


def _score(
    fn: str, pod: PodBuilder, node: NodeBuilder, *running: PodBuilder, **config: object
) -> Fraction:
    task, info = pod.info(), node.info(*(p.on("n1").info() for p in running))
    if fn == "binpack":
        return scoring.binpack(task, info, ScoringConfig.model_validate(config))
    return getattr(scoring, fn)(task, info)  # type: ignore[no-any-return]


TWO = make_pod("r", cpu="2").request(memory="2Gi")
BIG = make_pod("r", cpu="3500m")
GPU_POD = make_pod("p").request(**{GPU: "1"})
GPU_RUNNING = make_pod("r", cpu="").request(**{GPU: "1"})
GPU_NODE = make_node("n1", cpu="4", memory="8Gi").resource(GPU, "4")

CASES = [
    pytest.param(
        "least_allocated",
        make_pod("p"),
        make_node("n1"),
        [],
        {},
        81,
        id="least-empty-node",
    ),
    pytest.param(
        "least_allocated",
        make_pod("p"),
        make_node("n1"),
        [TWO],
        {},
        43,
        id="least-loaded-node",
    ),
    pytest.param(
        "least_allocated",
        make_pod("p", cpu=""),
        make_node("n1"),
        [],
        {},
        (97 + 97) // 2,
        id="least-request-less-pod-uses-defaults",
    ),
    pytest.param(
        "least_allocated",
        make_pod("p"),
        make_node("n1"),
        [BIG],
        {},
        (0 + 75) // 2,
        id="least-over-capacity-scores-zero",
    ),
    pytest.param(
        "most_allocated",
        make_pod("p"),
        make_node("n1"),
        [],
        {},
        (25 + 12) // 2,
        id="most-empty-node",
    ),
    pytest.param(
        "binpack",
        make_pod("p"),
        make_node("n1"),
        [TWO],
        {"binpack": 1},
        Fraction(5625, 100),
        id="binpack-fill-after",
    ),
    pytest.param(
        "binpack",
        make_pod("p"),
        make_node("n1"),
        [TWO],
        {"binpack": 2},
        Fraction(1125, 10),
        id="binpack-weight",
    ),
    pytest.param(
        "binpack",
        make_pod("p"),
        make_node("n1"),
        [BIG],
        {"binpack": 1},
        Fraction(0),
        id="binpack-overflow-zero",
    ),
    pytest.param(
        "binpack",
        GPU_POD,
        GPU_NODE,
        [GPU_RUNNING],
        {"binpack": 1, "binpack_resources": {GPU: 2}},
        Fraction(34375, 1000),
        id="binpack-extended-weighted",
    ),
    pytest.param(
        "binpack",
        GPU_POD,
        GPU_NODE,
        [GPU_RUNNING],
        {"binpack": 1},
        Fraction(1875, 100),
        id="binpack-unweighted-resource-skipped",
    ),
    pytest.param(
        "binpack",
        make_pod("p"),
        make_node("n1"),
        [],
        {"binpack": 1, "binpack_cpu": 0},
        Fraction(125, 10),
        id="binpack-zero-weight-resource-ignored",
    ),
]


@pytest.mark.parametrize(("fn", "pod", "node", "running", "config", "expected"), CASES)
def test_strategy_scores(
    fn: str,
    pod: PodBuilder,
    node: NodeBuilder,
    running: list[PodBuilder],
    config: dict[str, object],
    expected: Fraction,
) -> None:
    assert _score(fn, pod, node, *running, **config) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(ScoringConfig(), 81.0 + 71.0, id="default-least-and-balanced"),
        pytest.param(ScoringConfig(least_allocated=2, balanced_allocation=0), 162.0, id="weighted"),
        pytest.param(
            ScoringConfig(least_allocated=0, balanced_allocation=0, binpack=1),
            18.75,
            id="binpack-only",
        ),
        pytest.param(ScoringConfig(binpack=1), 81.0 + 71.0 + 18.75, id="helm-default"),
        pytest.param(
            ScoringConfig(least_allocated=0, balanced_allocation=0, most_allocated=1),
            18.0,
            id="most-only",
        ),
    ],
)
def test_score_sums_enabled_strategies(config: ScoringConfig, expected: float) -> None:
    assert scoring.score(make_pod("p").info(), make_node("n1").info(), config) == expected


def test_best_node_prefers_higher_score_then_name() -> None:
    task = make_pod("p").info()
    busy = make_node("a").info(make_pod("r", cpu="2").on("a").info())
    idle_b, idle_c = make_node("c").info(), make_node("b").info()
    assert scoring.best_node(task, [busy, idle_b, idle_c], ScoringConfig()).name == "b"
    packing = ScoringConfig(least_allocated=0, binpack=1)
    assert scoring.best_node(task, [idle_b, busy, idle_c], packing).name == "a"
