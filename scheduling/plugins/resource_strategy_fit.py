"""Volcano's resource-strategy-fit plugin: node scores per resource, each packing
(MostAllocated) or spreading (LeastAllocated) with its own weight, plus the optional sra score.

The plugin's arguments (`StrategyFitConfig`, read by `framework.arguments` at load) name a
strategy and a weight per resource (`resources`; an exact name, or a prefix ending in one `*`,
the longest prefix winning; default cpu and memory LeastAllocated, weight 1) and the plugin's
weight (`resourceStrategyFitWeight`, default 10). A pod may ask for its own strategy with
`volcano.sh/resource-strategy-scoring-type` and weights with `volcano.sh/resource-strategy-weight`
(a JSON map), read into `TaskInfo.fit_type`/`fit_weights`. For each resource the pod requests:
MostAllocated scores (used + request) / allocatable, LeastAllocated its complement, times the
resource's weight; the sum over the weights is scaled to 0-100 and by the plugin weight. A
resource that would overflow the node zeroes the whole score (resource_strategy_fit.go).

`sra` (scarce resource avoidance): nodes holding fewer of the listed scarce resources score
higher, so pods that do not need them keep off the nodes that have them (sra.go). The
`proportional` predicate is not built: `enable: true` is refused where the configuration loads.

Volcano's floats are exact fractions here, so a replayed session ranks nodes identically.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from scheduling.api.snapshot import NodeInfo, TaskInfo
from scheduling.api.vectors import EPSILON, Number

MAX_NODE_SCORE: Final = 100  # kube-scheduler's framework.MaxNodeScore
DEFAULT_WEIGHT: Final = 10  # DefaultResourceStrategyFitPluginWeight


class Strategy(StrEnum):
    """kube-scheduler's ScoringStrategyType values the plugin acts on."""

    MOST_ALLOCATED = "MostAllocated"
    LEAST_ALLOCATED = "LeastAllocated"


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class ResourceRule(_Args):
    """One `resources` entry. Volcano turns a weight <= 0 into 1 and an unknown type into
    LeastAllocated; Caldera refuses both rather than run what the file does not say."""

    type: Strategy = Strategy.LEAST_ALLOCATED
    weight: int = Field(default=1, ge=1)


class Sra(_Args):
    """`sra`: on with `enable`; `resources` the scarce ones (comma-separated), each with its
    `resourceWeight` (default 1); `weight` the score's weight (0, Volcano's default, scores
    nothing)."""

    enable: bool = False
    resources: str = ""
    weight: int = Field(default=0, ge=0)
    resource_weight: dict[str, int] = Field(default_factory=dict, alias="resourceWeight")

    @property
    def listed(self) -> tuple[str, ...]:
        return tuple(name for name in (p.strip() for p in self.resources.split(",")) if name)

    @model_validator(mode="after")
    def _weights_of_listed(self) -> Sra:
        unlisted = sorted(set(self.resource_weight) - set(self.listed))
        if unlisted:
            raise ValueError(
                f"resourceWeight names {unlisted}, which sra.resources does not list "
                f"({list(self.listed) or 'none'}); Volcano reads no other"
            )
        negative = sorted(k for k, v in self.resource_weight.items() if v < 0)
        if negative:
            raise ValueError(f"resourceWeight of {negative} must be >= 0")
        return self

    def weight_of(self, name: str) -> int:
        return self.resource_weight.get(name, 1)


class Proportional(_Args):
    """`proportional`: accepted only off, since its predicate is not built."""

    enable: bool = False
    resources: str = ""
    resource_proportion: dict[str, float] = Field(default_factory=dict, alias="resourceProportion")

    @field_validator("enable")
    @classmethod
    def _off(cls, value: bool) -> bool:
        if value:
            raise ValueError(
                "the proportional predicate (idle cpu and memory kept in proportion to a "
                "scarce resource) is not built in Caldera; set enable: false or drop it"
            )
        return value


def _default_resources() -> dict[str, ResourceRule]:
    return {"cpu": ResourceRule(), "memory": ResourceRule()}


def _valid_pattern(name: str) -> bool:
    """isValidWildcardPattern: no `*`, or one trailing `*` after a prefix."""
    return "*" not in name or (name != "*" and name.endswith("*") and name.count("*") == 1)


class StrategyFitConfig(_Args):
    """The plugin's arguments, as Volcano's configuration spells them."""

    weight: int = Field(default=DEFAULT_WEIGHT, ge=0, alias="resourceStrategyFitWeight")
    resources: dict[str, ResourceRule] = Field(default_factory=_default_resources)
    sra: Sra = Sra()
    proportional: Proportional = Proportional()

    @field_validator("resources")
    @classmethod
    def _patterns(cls, value: dict[str, ResourceRule]) -> dict[str, ResourceRule]:
        """Volcano drops an invalid pattern with a warning; Caldera refuses it. Empty (as
        absent) is cpu and memory LeastAllocated."""
        bad = sorted(name for name in value if not _valid_pattern(name))
        if bad:
            raise ValueError(
                f"{bad}: a resource is a name or a prefix ending in a single '*' "
                "(e.g. 'nvidia.com/*'); '*' alone is not a default strategy"
            )
        return dict(sorted(value.items())) or _default_resources()

    def rule_for(self, name: str) -> ResourceRule | None:
        """findResourceConfigWithPrefix: the exact name, else the longest matching prefix;
        None: the plugin does not score the resource."""
        exact = self.resources.get(name)
        if exact is not None:
            return exact
        best: tuple[int, ResourceRule] | None = None
        for pattern, rule in self.resources.items():
            prefix = pattern.removesuffix("*")
            longer = best is None or len(prefix) > best[0]
            if pattern.endswith("*") and name.startswith(prefix) and longer:
                best = (len(prefix), rule)
        return best[1] if best else None


def _requested(task: TaskInfo) -> list[tuple[str, Number]]:
    """Resource.ResourceNames: the dimensions the pod asks at least minResource of."""
    return [(name, value) for name, value in task.request.dimensions() if value >= EPSILON]


def _resource_score(
    strategy: str, request: Number, used: Number, capacity: Number, weight: int
) -> Fraction | None:
    """most/leastRequestedScore; None: the node would overflow. An unknown strategy (only a
    pod's annotation can name one) scores 0 and still counts its weight, as in Volcano."""
    if strategy not in (Strategy.MOST_ALLOCATED, Strategy.LEAST_ALLOCATED):
        return Fraction(0)
    if weight == 0 or capacity == 0:
        return Fraction(0)
    after = request + used
    if after > capacity:
        return None
    filled = after if strategy == Strategy.MOST_ALLOCATED else capacity - after
    return Fraction(filled * weight) / Fraction(capacity)


def strategy_score(task: TaskInfo, node: NodeInfo, config: StrategyFitConfig) -> Fraction:
    """Score: the pod's strategy (its annotations, else the configured rules) over the
    resources it requests, 0-100 times the plugin weight; 0 when a resource would overflow or
    the pod names a type without readable weights."""
    pod_weights = task.fit_weights if task.fit_type else None  # None: the configured rules
    if task.fit_type and pod_weights is None:
        return Fraction(0)
    total, weights = Fraction(0), 0
    for name, request in _requested(task):
        strategy: str
        if pod_weights is not None:
            if name not in pod_weights:
                continue
            strategy, weight = task.fit_type, pod_weights[name]
        else:
            rule = config.rule_for(name)
            if rule is None:
                continue
            strategy, weight = rule.type, rule.weight
        have, used = node.allocatable.get(name), node.used.get(name)
        score = _resource_score(strategy, request, used, have, weight)
        if score is None:
            return Fraction(0)
        total += score
        weights += weight
    if weights:
        total /= weights
    return total * MAX_NODE_SCORE * config.weight


def sra_score(task: TaskInfo, node: NodeInfo, sra: Sra) -> Fraction:
    """sraScore: 0 on a node lacking a resource the pod requests; else 1 minus the weighted
    share of the scarce resources the node has, times 100 and sra's weight."""
    if any(node.allocatable.get(name) == 0 for name, _ in _requested(task)):
        return Fraction(0)
    listed = sra.listed
    weight_sum = sum(sra.weight_of(name) for name in listed)
    held = sum(sra.weight_of(name) for name in listed if node.allocatable.get(name) > 0)
    score = Fraction(0)
    if weight_sum > 0:
        score = 1 - Fraction(held, weight_sum)
    return score * MAX_NODE_SCORE * sra.weight


def score(task: TaskInfo, node: NodeInfo, config: StrategyFitConfig) -> Fraction:
    """The plugin's nodeOrderFn: its strategy score (weight above 0) plus sra's (enabled,
    weight above 0)."""
    value = Fraction(0)
    if config.weight > 0:
        value += strategy_score(task, node, config)
    if config.sra.enable and config.sra.weight > 0:
        value += sra_score(task, node, config.sra)
    return value
