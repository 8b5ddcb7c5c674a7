"""Which feasible node is best for a task (the nodeorder and binpack plugins).

Each strategy scores 0-100 like kube-scheduler's plugins and the weighted sum decides; Volcano
breaks ties at random, Caldera by node name, so a replayed session places pods identically.
Least-allocated spreads (the built-in default); binpack and most-allocated pack, which the Helm
chart's configuration turns on. Least/most-allocated use kube's integer arithmetic; binpack,
a float in Volcano, is an exact fraction here; `score` turns the sum into a float at the end.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from scheduling.resources import CPU, MEMORY, Number
from scheduling.snapshot import NodeInfo, TaskInfo

MAX_SCORE: Final = 100
_SPREAD_RESOURCES: Final = (CPU, MEMORY)  # kube's default resources, weight 1 each


class ScoringConfig(BaseModel):
    """Plugin weights, as `nodeorder` and `binpack` arguments name them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    least_allocated: int = Field(default=1, ge=0)  # leastrequested.weight
    most_allocated: int = Field(default=0, ge=0)  # mostrequested.weight
    binpack: int = Field(default=0, ge=0)  # binpack.weight (1 in the Helm chart)
    binpack_cpu: int = Field(default=1, ge=0)
    binpack_memory: int = Field(default=1, ge=0)
    binpack_resources: dict[str, int] = Field(default_factory=dict)  # extended resource weights

    def binpack_weight(self, name: str) -> int | None:
        """The resource's binpack weight; None: binpack ignores the resource."""
        if name == CPU:
            return self.binpack_cpu
        if name == MEMORY:
            return self.binpack_memory
        return self.binpack_resources.get(name)


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


def total_score(task: TaskInfo, node: NodeInfo, config: ScoringConfig) -> Number:
    """The weighted sum of the enabled strategies, exact; higher is better."""
    value: Number = 0
    if config.least_allocated:
        value += least_allocated(task, node) * config.least_allocated
    if config.most_allocated:
        value += most_allocated(task, node) * config.most_allocated
    if config.binpack:
        value += binpack(task, node, config)
    return value


def score(task: TaskInfo, node: NodeInfo, config: ScoringConfig) -> float:
    return float(total_score(task, node, config))


def best_node(task: TaskInfo, nodes: list[NodeInfo], config: ScoringConfig) -> NodeInfo:
    """The highest score; ties go to the first name (Volcano picks one at random)."""
    return min(nodes, key=lambda n: (-total_score(task, n, config), n.name))
