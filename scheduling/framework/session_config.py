"""How a session runs: which actions, in what order, and the plugin arguments they read.

The defaults are Volcano's built-in configuration (actions enqueue, allocate, backfill;
overcommit factor 1.2; nodeorder's least-allocated spreading) plus the reclaim action, so a
scheduler started without a configuration behaves like vc-scheduler without a config file,
except that queue weights also hold once the cluster is full. `conf` reads the same settings from
a volcano-scheduler.conf.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduling.api.backlog import DEFAULT_LISTED
from scheduling.plugins.scoring import ScoringConfig

DEFAULT_OVERCOMMIT: Final = Fraction(6, 5)


class Action(StrEnum):
    ENQUEUE = "enqueue"
    ALLOCATE = "allocate"
    BACKFILL = "backfill"
    RECLAIM = "reclaim"
    PREEMPT = "preempt"


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
    # Job order: by priority (the priority plugin), by lowest dominant share (drf).
    job_priority: bool = True
    drf_order: bool = True
    # The overcommit plugin's vote at enqueue: the cluster, times the factor, has the room.
    overcommit: bool = True
    # The capacity plugin shares the cluster instead of proportion (queues' explicit
    # `deserved`); `hierarchy` is its enableHierarchy argument (parent queues bound subtrees).
    capacity: bool = False
    hierarchy: bool = False
    # network-topology-aware: jobs' networkTopology keeps gangs within HyperNodes. None: the
    # plugin is off and, as in Volcano, a job's topology places it anywhere.
    network_topology: TopologyConfig | None = Field(default_factory=TopologyConfig)
    # Caldera's own: the waiting jobs each queue's backlog digest lists (the rest are counted),
    # what `caldera queue pending` shows; 0 lists none.
    pending_listed: int = Field(default=DEFAULT_LISTED, ge=0)

    @field_validator("overcommit_factor")
    @classmethod
    def _at_least_one(cls, value: Fraction) -> Fraction:
        """Volcano resets a factor below 1 to the default rather than rejecting it."""
        return value if value >= 1 else DEFAULT_OVERCOMMIT
