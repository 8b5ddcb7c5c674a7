"""How a session runs: which actions, in what order, and the plugin arguments they read.

The defaults are Volcano's built-in configuration (actions enqueue, allocate, backfill;
overcommit factor 1.2; nodeorder's least-allocated spreading) plus the reclaim action, so a
scheduler started without a configuration behaves like vc-scheduler without a config file,
except that queue weights also hold once the cluster is full. `conf` reads the same settings from
a volcano-scheduler.conf.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from fractions import Fraction
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from scheduling.api.backlog import DEFAULT_LISTED
from scheduling.api.nodegroups import NodeGroupConfig
from scheduling.framework.tiers import Point, Tiers, speakers, tiers_of
from scheduling.plugins.extender import ExtenderConfig
from scheduling.plugins.scoring import ScoringConfig

DEFAULT_OVERCOMMIT: Final = Fraction(6, 5)


class Action(StrEnum):
    ENQUEUE = "enqueue"
    ALLOCATE = "allocate"
    BACKFILL = "backfill"
    RECLAIM = "reclaim"
    PREEMPT = "preempt"
    GANG_RECLAIM = "gangreclaim"
    GANG_PREEMPT = "gangpreempt"


# Volcano's built-in list plus reclaim: weights mean little if the queue that came first keeps
# the cluster. preempt (within a queue, by priority) is there to be named, as Volcano's CI
# configuration does.
DEFAULT_ACTIONS: Final = (Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL, Action.RECLAIM)


def parse_actions(text: str) -> tuple[Action, ...]:
    """Volcano's `actions: "enqueue, allocate, backfill, reclaim"` string, in its order.

    An unknown or repeated name is an error naming it, as vc-scheduler refuses to load such a
    configuration.
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    known = {a.value: a for a in Action}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"actions: unknown action(s) {unknown}, known: {sorted(known)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"actions: each action may appear once, repeated: {repeated}")
    if not names:
        raise ValueError("actions: at least one action is needed")
    return tuple(known[n] for n in names)


class TopologyConfig(BaseModel):
    """network-topology-aware's arguments: `weight` of its node scores, the resource weights
    of its HyperNode binpack (`hypernode.binpack.cpu`, `.memory`, `.resources`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: int = Field(default=1, ge=0)
    binpack: dict[str, int] = Field(default_factory=lambda: {"cpu": 1, "memory": 1})
    # Pods without a network topology are scored by their HyperNodes' fill too
    # (`hypernode.binpack.normal-pod.enable`), tier t weighing `fading`^(t-1).
    normal_pods: bool = True
    fading: Fraction = Fraction(4, 5)


class SessionConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    actions: tuple[Action, ...] = DEFAULT_ACTIONS
    overcommit_factor: Fraction = DEFAULT_OVERCOMMIT  # overcommit-factor
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    # The plugins by tier with their switches: who orders jobs and who votes at enqueue and
    # pipelining, in the configuration's order (`tiers`). Without it, the default tiers
    # (`default_tiers`), with capacity in proportion's place when `capacity` is set.
    tiers: Tiers = ()
    # The capacity plugin shares the cluster instead of proportion (queues' explicit
    # `deserved`); `hierarchy` is its enableHierarchy argument (parent queues bound subtrees).
    capacity: bool = False
    hierarchy: bool = False
    # drf's enableHierarchy: queues ordered, and reclaim's victims judged, by hierarchical
    # dominant shares over their `volcano.sh/hierarchy` tree (`plugins.hdrf`).
    drf_hierarchy: bool = False
    # network-topology-aware: jobs' networkTopology keeps gangs within HyperNodes. None: the
    # plugin is off and, as in Volcano, a job's topology places it anywhere.
    network_topology: TopologyConfig | None = Field(default_factory=TopologyConfig)
    # nodegroup: queues' spec.affinity keeps their pods in node groups. None: the plugin is off.
    nodegroup: NodeGroupConfig | None = None
    # sla's `sla-waiting-time` argument: every job without its own waits at most this long
    # before it is enqueued and reserves room regardless. None: only jobs that set their own.
    sla_waiting: timedelta | None = None
    # Caldera's own: the waiting jobs each queue's backlog digest lists (the rest are counted),
    # what `caldera queue pending` shows; 0 lists none.
    pending_listed: int = Field(default=DEFAULT_LISTED, ge=0)
    # Caldera's own: how reclaim and preempt choose victims. True: Caldera's rule, which asks
    # every victim rule every time and evicts a gang without spare tasks whole or not at all
    # (`actions.victims`); the tiers' enablePreemptable/enableReclaimable switches are not
    # read. False: Volcano's, the plugins asked tier by tier (`framework.victim_tiers`).
    whole_gang_victims: bool = True
    # gangpreempt's and gangreclaim's `allowWholeBundle: false` (their `configurations`):
    # those actions then evict only tasks a victim gang can spare, never a whole gang.
    no_whole_bundles: frozenset[Action] = frozenset()
    # The extender plugin's arguments (`plugins.extender`); None: the plugin is off.
    extender: ExtenderConfig | None = None
    _speakers: dict[Point, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _default_tiers(cls, data: Any) -> Any:
        """No tiers given: the default ones, sharing queues by the plugin `capacity` names."""
        if isinstance(data, dict) and not data.get("tiers"):
            return {**data, "tiers": default_tiers(capacity=bool(data.get("capacity")))}
        return data

    def runs(self, plugin: str) -> bool:
        return any(p.name == plugin for tier in self.tiers for p in tier)

    def speakers(self, point: Point) -> tuple[str, ...]:
        """The plugins asked at `point` in tier order, worked out once per configuration."""
        if point not in self._speakers:
            self._speakers[point] = speakers(self.tiers, point)
        return self._speakers[point]

    @field_validator("overcommit_factor")
    @classmethod
    def _at_least_one(cls, value: Fraction) -> Fraction:
        """Volcano resets a factor below 1 to the default rather than rejecting it."""
        return value if value >= 1 else DEFAULT_OVERCOMMIT


def default_tiers(capacity: bool = False) -> Tiers:
    """The tiers of `conf.CALDERA_DEFAULT`: Volcano's built-in list with network topology."""
    return tiers_of(
        ("priority", "gang", "conformance"),
        (
            "overcommit",
            "drf",
            "predicates",
            "capacity" if capacity else "proportion",
            "nodeorder",
            "network-topology-aware",
        ),
    )
