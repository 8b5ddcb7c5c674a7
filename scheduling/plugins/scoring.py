"""Which feasible node is best for a task (the nodeorder and binpack plugins).

Each strategy scores 0-100 like kube-scheduler's plugins and the weighted sum decides; Volcano
breaks ties at random, Caldera by node name, so a replayed session places pods identically.
Least-allocated spreads, balanced allocation evens out cpu against memory, preferred node
affinity and PreferNoSchedule taints steer; all are on by default with nodeorder's weights.
Binpack and most-allocated pack, which the Helm chart's configuration turns on;
resource-strategy-fit packs or spreads per resource (`resource_strategy_fit`). Node affinity
and taint toleration are normalized over the candidate nodes, so only `node_scores` and
`best_node` (which see them all) add them; `total_score` is the part each node scores alone.
Least/most-allocated and the normalizations use kube's integer arithmetic, balanced allocation
kube's float64 steps (deterministic IEEE doubles, truncated to an integer as kube does);
binpack, a float in Volcano, is an exact fraction here; `score` turns the sum into a float.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping, Sequence
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from scheduling.api.constraints import TaintEffect
from scheduling.api.snapshot import NodeInfo, NodeName, TaskInfo
from scheduling.api.vectors import CPU, MEMORY, Number
from scheduling.plugins import (
    interpodaffinity,
    nodegroup,
    predicates,
    resource_strategy_fit,
    topologyspread,
)
from scheduling.plugins.podview import Inclusion, PodView

MAX_SCORE: Final = 100
GPU: Final = "nvidia.com/gpu"  # nodeorder balances it with cpu and memory when requested
_SPREAD_RESOURCES: Final = (CPU, MEMORY)  # kube's default resources, weight 1 each


class ScoringConfig(BaseModel):
    """Plugin weights, as `nodeorder` and `binpack` arguments name them; nodeorder's defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    least_allocated: int = Field(default=1, ge=0)  # leastrequested.weight
    most_allocated: int = Field(default=0, ge=0)  # mostrequested.weight
    balanced_allocation: int = Field(default=1, ge=0)  # balancedresource.weight
    node_affinity: int = Field(default=2, ge=0)  # nodeaffinity.weight
    taint_toleration: int = Field(default=3, ge=0)  # tainttoleration.weight
    # Scored by `interpodaffinity` and `topologyspread` over the session's pods (`pods=`).
    pod_affinity: int = Field(default=2, ge=0)  # podaffinity.weight
    pod_topology_spread: int = Field(default=2, ge=0)  # podtopologyspread.weight
    binpack: int = Field(default=0, ge=0)  # binpack.weight (1 in the Helm chart)
    binpack_cpu: int = Field(default=1, ge=0)
    binpack_memory: int = Field(default=1, ge=0)
    binpack_resources: dict[str, int] = Field(default_factory=dict)  # extended resource weights
    # resource-strategy-fit's arguments; None: the plugin does not score nodes.
    strategy_fit: resource_strategy_fit.StrategyFitConfig | None = None
    # task-topology.weight; 0: the plugin scores no node. Its scores need the job's buckets,
    # so allocate adds them (`tasktopology.JobBuckets.scores`), not `total_score`.
    task_topology: int = Field(default=0, ge=0)

    def binpack_weight(self, name: str) -> int | None:
        """The resource's binpack weight; None: binpack ignores the resource."""
        if name == CPU:
            return self.binpack_cpu
        if name == MEMORY:
            return self.binpack_memory
        return self.binpack_resources.get(name)


# nodeorder's weight arguments and the ScoringConfig field each sets.
NODEORDER_WEIGHTS: Final = {
    "leastrequested.weight": "least_allocated",
    "mostrequested.weight": "most_allocated",
    "balancedresource.weight": "balanced_allocation",
    "nodeaffinity.weight": "node_affinity",
    "tainttoleration.weight": "taint_toleration",
    "podaffinity.weight": "pod_affinity",
    "podtopologyspread.weight": "pod_topology_spread",
}


def _spread(task: TaskInfo, node: NodeInfo, most: bool) -> int:
    """kube's least/most-allocated scorer: integer per-resource scores, integer mean.

    Nodes without a resource are left out of the mean, as kube skips zero allocatable.
    """
    total, weights = 0, 0
    for name in _SPREAD_RESOURCES:
        have = node.allocatable.get(name)
        if have <= 0:
            continue
        want = node.nonzero_used.get(name) + task.nonzero_request.get(name)
        if most:
            total += int(min(want, have) * MAX_SCORE // have)
        else:
            total += 0 if want > have else int((have - want) * MAX_SCORE // have)
        weights += 1
    return total // weights if weights else 0


def least_allocated(task: TaskInfo, node: NodeInfo) -> int:
    """(allocatable - requested) * 100 / allocatable over cpu and memory; spreads pods."""
    return _spread(task, node, most=False)


def most_allocated(task: TaskInfo, node: NodeInfo) -> int:
    """requested * 100 / allocatable over cpu and memory (requested capped); packs pods."""
    return _spread(task, node, most=True)


def _fraction(used: Number, have: Number) -> float:
    fraction = float(used) / float(have)
    return 1.0 if fraction > 1 else fraction


def _balance2(first: float, second: float) -> int:
    """`_balance` of two fractions: their std is half their difference."""
    return int((1 - abs((first - second) / 2)) * MAX_SCORE)


def _balance(fractions: Sequence[float]) -> int:
    """(1 - std) * 100 of the fill fractions, truncated, in kube's order of float steps."""
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        total = 0.0
        for fraction in fractions:  # not sum(): the running sum must round as kube's does
            total += fraction
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares += (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * MAX_SCORE)


def balanced_allocation(task: TaskInfo, node: NodeInfo) -> int:
    """kube's balanced allocation: how much placing the pod evens out the node's fill.

    Fill is used (real requests, not the request-less defaults) over allocatable, capped at 1,
    over cpu, memory and, when the pod asks for it, the GPU; a resource the node lacks is left
    out. The balance after placing is compared with the balance before: 75 means unchanged,
    towards 100 better balanced, towards 50 worse. A pod requesting none of them scores 0, as
    kube skips the plugin for it.
    """
    request, have, used = task.request, node.allocatable, node.used
    gpu = request.scalars.get(GPU, 0)
    if not request.milli_cpu and not request.memory and not gpu:
        return 0
    half = MAX_SCORE // 2
    if not gpu and have.milli_cpu != 0 and have.memory != 0:  # the usual case, without lists
        cpu, memory = used.milli_cpu, used.memory
        with_pod = _balance2(
            _fraction(cpu + request.milli_cpu, have.milli_cpu),
            _fraction(memory + request.memory, have.memory),
        )
        without = _balance2(_fraction(cpu, have.milli_cpu), _fraction(memory, have.memory))
        return half + (half + with_pod - without) // 2
    before: list[float] = []
    after: list[float] = []
    if have.milli_cpu != 0:
        before.append(_fraction(used.milli_cpu, have.milli_cpu))
        after.append(_fraction(used.milli_cpu + request.milli_cpu, have.milli_cpu))
    if have.memory != 0:
        before.append(_fraction(used.memory, have.memory))
        after.append(_fraction(used.memory + request.memory, have.memory))
    if gpu and (gpus := have.scalars.get(GPU, 0)) != 0:
        before.append(_fraction(used.scalars.get(GPU, 0), gpus))
        after.append(_fraction(used.scalars.get(GPU, 0) + gpu, gpus))
    return half + (half + _balance(after) - _balance(before)) // 2  # never negative: // is kube's


def binpack(task: TaskInfo, node: NodeInfo, config: ScoringConfig) -> Fraction:
    """Volcano's BinPackingScore: weighted fill after placing, over the resources requested.

    A resource with no configured weight is skipped; one that would overflow makes the whole
    score 0; the result is scaled by 100 and the plugin weight.
    """
    total: Number = 0
    weights = 0
    for name, request in task.request.dimensions():
        weight = config.binpack_weight(name)
        if request == 0 or weight is None:
            continue
        capacity = node.allocatable.get(name)
        if capacity != 0 and weight != 0:
            after = request + node.used.get(name)
            if after > capacity:
                return Fraction(0)
            total += Fraction(after * weight) / capacity
        weights += weight
    return Fraction(total) / weights * MAX_SCORE * config.binpack if weights else Fraction(0)


def preferred_affinity(task: TaskInfo, node: NodeInfo) -> int:
    """NodeAffinity's raw score: the summed weights of the preferred terms the node matches."""
    return sum(
        term.weight
        for term in task.preferred_affinity
        if term.weight and predicates.term_matches(term.preference, node)
    )


def untolerated_taints(task: TaskInfo, node: NodeInfo) -> int:
    """TaintToleration's raw score: the node's PreferNoSchedule taints the pod does not tolerate.

    Only tolerations with effect PreferNoSchedule or none can tolerate them (`tolerates`
    compares the effect), as kube keeps only those.
    """
    return sum(
        1
        for taint in node.taints
        if taint.effect == TaintEffect.PREFER_NO_SCHEDULE
        and not any(predicates.tolerates(t, taint) for t in task.tolerations)
    )


def normalize(scores: Sequence[int], reverse: bool = False) -> list[int]:
    """kube's DefaultNormalizeScore: scale to 0-100 by the highest; `reverse`: 100 minus that.

    All zero stays zero, or is 100 everywhere when reversed (no node is worse than another).
    """
    top = max((s for s in scores if s > 0), default=0)
    if top == 0:
        return [MAX_SCORE] * len(scores) if reverse else list(scores)
    if reverse:
        return [MAX_SCORE - MAX_SCORE * s // top for s in scores]
    return [MAX_SCORE * s // top for s in scores]


def total_score(task: TaskInfo, node: NodeInfo, config: ScoringConfig) -> Number:
    """The weighted sum of the enabled strategies a node scores alone, exact; higher is better."""
    value: Number = 0
    if config.least_allocated:
        value += least_allocated(task, node) * config.least_allocated
    if config.most_allocated:
        value += most_allocated(task, node) * config.most_allocated
    if config.balanced_allocation:
        value += balanced_allocation(task, node) * config.balanced_allocation
    if config.binpack:
        value += binpack(task, node, config)
    if config.strategy_fit is not None:
        value += resource_strategy_fit.score(task, node, config.strategy_fit)
    if task.node_groups is not None:  # the nodegroup plugin's score, unweighted as in Volcano
        value += nodegroup.score(task, node)
    return value


def score(task: TaskInfo, node: NodeInfo, config: ScoringConfig) -> float:
    return float(total_score(task, node, config))


def _has_prefer_no_schedule(nodes: Sequence[NodeInfo]) -> bool:
    return any(
        taint.effect == TaintEffect.PREFER_NO_SCHEDULE for node in nodes for taint in node.taints
    )


def extra_scores(
    task: TaskInfo,
    nodes: list[NodeInfo],
    view: PodView | None,
    weights: tuple[int, int],
    inclusion: Inclusion,
) -> dict[NodeName, int] | None:
    """Weighted InterPodAffinity plus PodTopologySpread scores per node; None: neither
    applies, so nodes score as without them."""
    if view is None or not view.active or len(nodes) < 2:
        return None
    affinity_weight, spread_weight = weights
    found: MutableMapping[NodeName, int] = {}
    if affinity_weight:
        for name, s in interpodaffinity.scores(task, nodes, view).items():
            found[name] = found.get(name, 0) + affinity_weight * s
    if spread_weight:
        for name, s in topologyspread.scores(task, nodes, view, inclusion).items():
            found[name] = found.get(name, 0) + spread_weight * s
    return dict(found) or None


def _pod_scores(
    task: TaskInfo, nodes: Sequence[NodeInfo], config: ScoringConfig, pods: PodView | None
) -> Mapping[NodeName, Number] | None:
    """InterPodAffinity and PodTopologySpread, weighted; None: no pod in the session uses them."""
    if pods is None or not pods.active:
        return None
    weights = (config.pod_affinity, config.pod_topology_spread)
    return extra_scores(task, list(nodes), pods, weights, predicates.inclusion)


def node_scores(
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    config: ScoringConfig,
    extra: Mapping[NodeName, Number] | None = None,
    pods: PodView | None = None,
) -> list[Number]:
    """Each candidate's full weighted sum, in `nodes` order, normalized over these nodes.

    `extra`: already weighted scores computed elsewhere, by node (a missing node adds 0).
    `pods`: the session's pods on nodes, for the scores about other pods.
    Without preferred terms node affinity adds nothing; without a PreferNoSchedule taint on
    any candidate every node gets the full taint score, so neither is computed per node.
    """
    weight = config.taint_toleration
    tainted = bool(weight) and _has_prefer_no_schedule(nodes)
    base = MAX_SCORE * weight if weight and not tainted else 0
    totals: list[Number] = [base + total_score(task, node, config) for node in nodes]
    if config.node_affinity and task.preferred_affinity:
        raw = [preferred_affinity(task, node) for node in nodes]
        for i, value in enumerate(normalize(raw)):
            totals[i] += value * config.node_affinity
    if tainted:
        raw = [untolerated_taints(task, node) for node in nodes]
        for i, value in enumerate(normalize(raw, reverse=True)):
            totals[i] += value * weight
    for scores in (extra, _pod_scores(task, nodes, config, pods)):
        if scores:
            for i, node in enumerate(nodes):
                totals[i] += scores.get(node.name, 0)
    return totals


def best_node(
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    config: ScoringConfig,
    extra: Mapping[NodeName, Number] | None = None,
    pods: PodView | None = None,
) -> NodeInfo:
    """The highest score; ties go to the first name (Volcano picks one at random)."""
    if not nodes:
        raise ValueError("best_node: no candidate nodes")
    if len(nodes) == 1:
        return nodes[0]
    totals = node_scores(task, nodes, config, extra, pods)
    best = 0
    for i in range(1, len(nodes)):
        if totals[i] > totals[best] or (
            totals[i] == totals[best] and nodes[i].name < nodes[best].name
        ):
            best = i
    return nodes[best]


def ranked(
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    config: ScoringConfig,
    extra: Mapping[NodeName, Number] | None = None,
    pods: PodView | None = None,
) -> list[NodeInfo]:
    """The candidates best first, ties by name: the order preempt tries nodes in."""
    totals = node_scores(task, nodes, config, extra, pods)
    order = sorted(range(len(nodes)), key=lambda i: (-totals[i], nodes[i].name))
    return [nodes[i] for i in order]
