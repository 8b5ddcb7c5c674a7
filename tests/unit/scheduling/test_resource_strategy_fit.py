"""The resource-strategy-fit plugin: per-resource MostAllocated/LeastAllocated node scores.

Cases from Volcano's `pkg/scheduler/plugins/resource-strategy-fit/resource_strategy_fit_test.go`:
Test_calculateWeight (arguments read; the invalid wildcard patterns Volcano drops with a
warning are refused here), TestScore (every case, same numbers), Test_mostRequestedScore /
Test_leastRequestedScore (overflow), Test_findResourceConfigWithPrefix, and
TestResourceStrategyFitPlugin's first session (extended resources over four nodes); then
`sra_test.go`'s idea (nodes without the scarce resource preferred) and whole allocate sessions
after TestAllocate (MostAllocated packs, LeastAllocated spreads).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import pytest

from models.keys import JobKey
from scheduling.actions.registry import run_session
from scheduling.api.snapshot import NodeInfo, NodeName, PodKey, TaskInfo
from scheduling.api.vectors import Resources
from scheduling.cache import tasks
from scheduling.framework import arguments, conf
from scheduling.plugins import resource_strategy_fit as rsf
from scheduling.plugins.resource_strategy_fit import ResourceRule, StrategyFitConfig
from tests.unit.scheduling.builders import gang, make_nodes, make_pod, running, snapshot

MOST, LEAST = rsf.Strategy.MOST_ALLOCATED, rsf.Strategy.LEAST_ALLOCATED
GPU: Final = "nvidia.com/gpu"
FOO: Final = "example.com/foo"


def fit(weight: int, **rules: tuple[rsf.Strategy, int]) -> StrategyFitConfig:
    resources = {k: ResourceRule(type=t, weight=w) for k, (t, w) in rules.items()}
    return StrategyFitConfig(weight=weight, resources=resources)


def least(weight: int, cpu: int, memory: int) -> StrategyFitConfig:
    return fit(weight, cpu=(LEAST, cpu), memory=(LEAST, memory))


def most(weight: int, cpu: int, memory: int) -> StrategyFitConfig:
    return fit(weight, cpu=(MOST, cpu), memory=(MOST, memory))


def task(cpu: int, memory: int, **annotations: str) -> TaskInfo:
    """buildTaskInfo: milli-CPU and memory as Volcano's test gives them."""
    weights = annotations.get("weights")
    return TaskInfo(
        key=PodKey("c1/p"),
        job=JobKey("c1/pg"),
        request=Resources.of(milli_cpu=cpu, memory=memory),
        fit_type=annotations.get("type", ""),
        fit_weights=rsf_weights(weights) if weights is not None else None,
    )


def rsf_weights(text: str) -> dict[str, int] | None:
    """The weights annotation as the cache reads it off a pod."""
    pod = make_pod("p").annotate(tasks.FIT_TYPE, "LeastAllocated")
    return pod.annotate(tasks.FIT_WEIGHTS, text).info().fit_weights


def node(used_cpu: int, used_memory: int, cpu: int, memory: int) -> NodeInfo:
    """buildNodeInfo."""
    return NodeInfo(
        name=NodeName("n"),
        allocatable=Resources.of(milli_cpu=cpu, memory=memory),
        used=Resources.of(milli_cpu=used_cpu, memory=used_memory),
    )


SCORE_CASES = [
    pytest.param(task(100, 100), node(200, 200, 500, 500), least(10, 1, 1), 400, id="test1"),
    pytest.param(task(100, 100), node(200, 200, 400, 400), least(10, 1, 1), 250, id="test2"),
    pytest.param(task(100, 100), node(200, 200, 500, 500), most(10, 1, 1), 600, id="test3"),
    pytest.param(task(100, 100), node(200, 200, 400, 400), most(10, 1, 1), 750, id="test4"),
    pytest.param(
        task(100, 100),
        node(200, 200, 500, 500),
        fit(10, cpu=(LEAST, 2), memory=(MOST, 1)),
        Fraction(1400, 3),
        id="test5",
    ),
    pytest.param(
        task(100, 100),
        node(200, 200, 500, 500),
        fit(10, cpu=(LEAST, 1), memory=(MOST, 2)),
        Fraction(1600, 3),
        id="test6",
    ),
    pytest.param(
        task(0, 100),
        node(200, 200, 500, 500),
        fit(10, cpu=(LEAST, 1), memory=(MOST, 2)),
        600,
        id="test7-cpu-not-requested",
    ),
    pytest.param(
        task(100, 100),
        node(200, 200, 0, 400),
        fit(10, cpu=(LEAST, 1), memory=(MOST, 2)),
        500,
        id="test8-no-cpu-allocatable-scores-0-keeps-its-weight",
    ),
    pytest.param(
        task(100, 100), node(200, 200, 500, 500), fit(10, memory=(MOST, 2)), 600, id="test9"
    ),
    pytest.param(
        task(100, 100, type="LeastAllocated", weights='{"cpu": 2, "memory": 1}'),
        node(200, 200, 500, 500),
        least(10, 1, 1),
        400,
        id="pod-level-scoring-least-allocated",
    ),
    pytest.param(
        task(100, 100, type="MostAllocated", weights='{"cpu": 1, "memory": 2}'),
        node(200, 200, 500, 500),
        least(10, 1, 1),
        600,
        id="pod-level-scoring-most-allocated",
    ),
    pytest.param(
        task(100, 100, type="LeastAllocated", weights="invalid-json"),
        node(200, 200, 500, 500),
        least(10, 1, 1),
        0,
        id="pod-level-scoring-invalid-json",
    ),
    pytest.param(
        task(100, 100, type="LeastAllocated"),
        node(200, 200, 500, 500),
        least(10, 1, 1),
        0,
        id="pod-level-scoring-weights-missing",
    ),
    pytest.param(
        task(100, 100, type="LeastAllocated", weights='{"cpu": 2}'),
        node(200, 200, 500, 500),
        least(10, 1, 1),
        400,
        id="pod-level-scoring-missing-resource-weight",
    ),
    pytest.param(task(0, 0), node(200, 200, 500, 500), least(10, 1, 1), 0, id="zero-requested"),
    pytest.param(
        task(100, 100), node(500, 500, 500, 500), least(10, 1, 1), 0, id="node-fully-allocated"
    ),
    pytest.param(
        task(100, 100),
        node(200, 200, 500, 500),
        fit(10, cpu=(LEAST, 3), memory=(MOST, 1)),
        450,
        id="mixed-scoring-strategies",
    ),
    pytest.param(task(100, 100), node(200, 200, 500, 500), least(20, 5, 5), 800, id="high-weight"),
]


@pytest.mark.parametrize(("t", "n", "config", "expected"), SCORE_CASES)
def test_score(t: TaskInfo, n: NodeInfo, config: StrategyFitConfig, expected: Fraction) -> None:
    assert rsf.strategy_score(t, n, config) == expected


def test_pod_weights_read_only_as_a_json_map_of_whole_numbers() -> None:
    assert rsf_weights('{"cpu": 2}') == {"cpu": 2}
    assert rsf_weights('{"cpu": 2.5}') is None
    assert rsf_weights("[1]") is None
    assert rsf_weights("") is None


# --- arguments (Test_calculateWeight) ---------------------------------------------------------

RULES: Final = {
    "cpu": {"type": "MostAllocated", "weight": 1},
    "memory": {"type": "LeastAllocated", "weight": 2},
}
READ_CASES = [
    pytest.param(
        {"resourceStrategyFitWeight": 10, "resources": RULES},
        fit(10, cpu=(MOST, 1), memory=(LEAST, 2)),
        id="test1",
    ),
    pytest.param({"resources": RULES}, fit(10, cpu=(MOST, 1), memory=(LEAST, 2)), id="test2"),
    pytest.param({"resourceStrategyFitWeight": 10}, least(10, 1, 1), id="test3-defaults"),
    pytest.param({"resources": {}}, least(10, 1, 1), id="empty-resources-are-the-defaults"),
    pytest.param(
        {"resources": {"nvidia.com/gpu/*": {"type": "MostAllocated", "weight": 3}}},
        fit(10, **{"nvidia.com/gpu/*": (MOST, 3)}),
        id="test5-valid-wildcard",
    ),
    pytest.param(
        {"resources": {"cpu": {"weight": 2}}}, fit(10, cpu=(LEAST, 2)), id="type-defaults-least"
    ),
]


@pytest.mark.parametrize(("given", "expected"), READ_CASES)
def test_arguments_read(given: dict[str, Any], expected: StrategyFitConfig) -> None:
    assert arguments.strategy_fit(given) == expected


REFUSED_CASES = [
    pytest.param({"resources": {"*": {"type": "MostAllocated"}}}, "'*'", id="test4-star-alone"),
    pytest.param({"resources": {"cloudml.gpu**": {}}}, "single '*'", id="test5-two-stars"),
    pytest.param({"resources": {"cloudml.*.gpu": {}}}, "single '*'", id="test6-inner-star"),
    pytest.param({"resources": {"*test*resource*": {}}}, "single '*'", id="test7-many-stars"),
    pytest.param({"resources": {"cpu": {"type": "Most"}}}, "resources.cpu.type", id="bad-type"),
    pytest.param({"resources": {"cpu": {"weight": 0}}}, "resources.cpu.weight", id="weight-0"),
    pytest.param({"resources": {"cpu": {"wieght": 1}}}, "wieght", id="unknown-inner-key"),
    pytest.param({"resourceStrategyFitWeight": -1}, "resourceStrategyFitWeight", id="negative"),
    pytest.param(
        {"sra": {"enable": True, "resources": "a", "resourceWeight": {"b": 1}}},
        "['b']",
        id="sra-weight-unlisted",
    ),
    pytest.param({"proportional": {"enable": True}}, "not built", id="proportional-on"),
]


@pytest.mark.parametrize(("given", "message"), REFUSED_CASES)
def test_arguments_refused(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="resource-strategy-fit") as error:
        arguments.strategy_fit(given)
    assert message in str(error.value)


def test_unknown_top_level_key_refused_at_load() -> None:
    text = (
        conf.CALDERA_DEFAULT + "  - name: resource-strategy-fit\n    arguments:\n      weight: 3\n"
    )
    with pytest.raises(ValueError, match="has no such argument"):
        conf.load(text)


def test_inner_keys_checked_even_with_node_order_off() -> None:
    text = conf.CALDERA_DEFAULT + (
        "  - name: resource-strategy-fit\n    enableNodeOrder: false\n"
        "    arguments:\n      resources:\n        '*': {}\n"
    )
    with pytest.raises(ValueError, match=r"tiers\.1\.plugins"):
        conf.load(text)


# --- findResourceConfigWithPrefix ----------------------------------------------------------

PREFIX_CASES = [
    pytest.param(
        "nvidia.com/gpu",
        {GPU: (MOST, 3), "nvidia.com/*": (LEAST, 1)},
        (MOST, 3),
        id="exact_match_priority",
    ),
    pytest.param(
        "nvidia.com/gpu/v100",
        {"nvidia.com/gpu/*": (MOST, 2), "nvidia.com/*": (LEAST, 1)},
        (MOST, 2),
        id="longest_prefix_match",
    ),
    pytest.param(FOO, {"nvidia.com/gpu/*": (MOST, 2)}, None, id="no_match_found"),
    pytest.param(
        "cloudml.gpu/tensorflow/v2",
        {
            "cloudml.gpu/tensorflow/*": (MOST, 3),
            "cloudml.gpu/*": (LEAST, 2),
            "cloudml/*": (MOST, 1),
        },
        (MOST, 3),
        id="multiple_valid_wildcards_longest_match",
    ),
]


@pytest.mark.parametrize(("name", "rules", "expected"), PREFIX_CASES)
def test_rule_for(
    name: str, rules: dict[str, tuple[rsf.Strategy, int]], expected: tuple[rsf.Strategy, int] | None
) -> None:
    found = fit(10, **rules).rule_for(name)
    assert (None if found is None else (found.type, found.weight)) == expected


# --- TestResourceStrategyFitPlugin, first session -------------------------------------------


def ext_node(name: str, **scalars: int) -> NodeInfo:
    """4 CPUs, 4Gi and extended resources, nothing used (scalars in milli-units)."""
    return NodeInfo(
        name=NodeName(name),
        allocatable=Resources.of(4000, 4 * 2**30, 10, {k: v * 1000 for k, v in scalars.items()}),
    )


def ext_task(memory_gi: int, **scalars: int) -> TaskInfo:
    request = Resources.of(1000, memory_gi * 2**30, 1, {k: v * 1000 for k, v in scalars.items()})
    return TaskInfo(key=PodKey("c1/p"), job=JobKey("c1/pg1"), request=request)


EXT: Final = fit(10, **{GPU: (MOST, 1), FOO: (LEAST, 1)})
NODES: Final = [
    ext_node("n1", **{GPU: 10}),
    ext_node("n2", **{GPU: 5}),
    ext_node("n3", **{FOO: 10}),
    ext_node("n4", **{FOO: 5}),
]
PLUGIN_CASES = [
    pytest.param(ext_task(1, **{FOO: 2}), [0, 0, 800, 600], id="c1/p1"),
    pytest.param(ext_task(1, **{FOO: 3}), [0, 0, 700, 400], id="c1/p2"),
    pytest.param(ext_task(10, **{GPU: 2}), [200, 400, 0, 0], id="c1/p3"),
    pytest.param(ext_task(1, **{GPU: 3}), [300, 600, 0, 0], id="c1/p4"),
]


@pytest.mark.parametrize(("t", "expected"), PLUGIN_CASES)
def test_extended_resources_scored_per_rule(t: TaskInfo, expected: list[int]) -> None:
    assert [rsf.score(t, n, EXT) for n in NODES] == expected


# --- sra -------------------------------------------------------------------------------------


def test_sra_prefers_nodes_without_the_scarce_resource() -> None:
    config = StrategyFitConfig.model_validate(
        {"resourceStrategyFitWeight": 0, "sra": {"enable": True, "resources": GPU, "weight": 10}}
    )
    cpu_only = ext_task(1)
    scores = [rsf.score(cpu_only, n, config) for n in NODES]
    assert scores == [0, 0, 1000, 1000]
    assert rsf.score(ext_task(1, **{GPU: 1}), NODES[2], config) == 0  # lacks what it asks


# --- whole sessions (TestAllocate) ------------------------------------------------------------


def fit_conf(strategy: str) -> str:
    return conf.CALDERA_DEFAULT.replace("  - name: nodeorder\n", "") + (
        "  - name: resource-strategy-fit\n    arguments:\n      resources:\n"
        f"        cpu:\n          type: {strategy}\n"
    )


@pytest.mark.parametrize(
    ("strategy", "expected"), [("MostAllocated", "n1"), ("LeastAllocated", "n0")]
)
def test_allocate_packs_or_spreads(strategy: str, expected: str) -> None:
    """One 2-CPU pod already on n1; a new one joins it (MostAllocated) or keeps off (Least)."""
    jobs = [running("r", ["n1"], cpu="2"), gang("new", 1, cpu="2")]
    result = run_session(
        snapshot(make_nodes(3, cpu="8"), gangs=jobs), conf.load(fit_conf(strategy)).session
    )
    assert {p.pod: p.node for p in result.placements} == {"default/new-worker-0": expected}
