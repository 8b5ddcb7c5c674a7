"""The configuration's tiers as the session asks them: which plugin speaks at which point.

Volcano's framework (`pkg/scheduler/framework/session_plugins.go`) asks the plugins of each
extension point tier by tier, in the order the configuration lists them, skipping a plugin
whose `enable*` switch for that point is false. Votes (`JobEnqueueable`, `JobPipelined`) stop
at the first Reject; a tier in which some plugin Permits decides, and later tiers are not
asked; no Permit anywhere is a yes. Orders (`JobOrder`) take the first plugin that tells two
jobs apart. `Tiers` keeps the list and the switches; `decide` and `speakers` are those two
walks, so every action asks the same way.

`REGISTERED` is what each of Volcano's plugins registers (its `ssn.Add*Fn` calls at HEAD),
`SWITCHES` which points each `enable*` switch turns off. `conf` uses both to refuse a switch
Caldera would not honour.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

from scheduling.api.votes import Vote


class Point(StrEnum):
    """An extension point a plugin registers, named as Volcano's `ssn.Add<Point>Fn`."""

    JOB_ORDER = "JobOrder"
    TASK_ORDER = "TaskOrder"
    QUEUE_ORDER = "QueueOrder"
    JOB_READY = "JobReady"
    JOB_PIPELINED = "JobPipelined"
    JOB_VALID = "JobValid"
    JOB_ENQUEUEABLE = "JobEnqueueable"
    JOB_STARVING = "JobStarving"
    PREEMPTABLE = "Preemptable"
    RECLAIMABLE = "Reclaimable"
    UNIFIED_EVICTABLE = "UnifiedEvictable"  # gangpreempt's and gangreclaim's victims; no switch
    PREEMPTIVE = "Preemptive"
    OVERUSED = "Overused"
    ALLOCATABLE = "Allocatable"
    PREDICATE = "Predicate"
    NODE_ORDER = "NodeOrder"
    VICTIM_TASKS = "VictimTasks"
    HYPER_NODE_ORDER = "HyperNodeOrder"
    HYPER_NODE_GRADIENT = "HyperNodeGradient"
    SUB_JOB_ORDER = "SubJobOrder"
    SUB_JOB_READY = "SubJobReady"
    SUB_JOB_PIPELINED = "SubJobPipelined"


P = Point
# The points each `enable*` switch of a plugin entry turns off (`isEnabled(plugin.<Switch>)`
# in session_plugins.go); switches Volcano reads outside the plugins (enableBestNode,
# enableTargetJob, enableReservedNodes, enabledClusterOrder) gate points no plugin of HEAD
# registers.
SWITCHES: Final[Mapping[str, frozenset[Point]]] = {
    "enableJobOrder": frozenset({P.JOB_ORDER}),
    "enableJobReady": frozenset({P.JOB_READY}),
    "enableJobPipelined": frozenset({P.JOB_PIPELINED}),
    "enableTaskOrder": frozenset({P.TASK_ORDER}),
    "enablePreemptable": frozenset({P.PREEMPTABLE}),
    "enableReclaimable": frozenset({P.RECLAIMABLE}),
    "enablePreemptive": frozenset({P.PREEMPTIVE}),
    "enableQueueOrder": frozenset({P.QUEUE_ORDER}),
    "enablePredicate": frozenset({P.PREDICATE}),
    "enableNodeOrder": frozenset({P.NODE_ORDER}),
    "enableJobEnqueued": frozenset({P.JOB_ENQUEUEABLE}),
    "enabledVictim": frozenset({P.VICTIM_TASKS}),
    "enableJobStarving": frozenset({P.JOB_STARVING}),
    "enabledOverused": frozenset({P.OVERUSED}),
    "enabledAllocatable": frozenset({P.ALLOCATABLE}),
    "enabledHyperNodeOrder": frozenset({P.HYPER_NODE_ORDER}),
    "enabledHyperNodeGradient": frozenset({P.HYPER_NODE_GRADIENT}),
    "enabledSubJobReady": frozenset({P.SUB_JOB_READY}),
    "enabledSubJobPipelined": frozenset({P.SUB_JOB_PIPELINED}),
    "enabledSubJobOrder": frozenset({P.SUB_JOB_ORDER}),
    "enableBestNode": frozenset(),
    "enableTargetJob": frozenset(),
    "enableReservedNodes": frozenset(),
    "enabledClusterOrder": frozenset(),
}


def _points(*points: Point) -> frozenset[Point]:
    return frozenset(points)


# What each of Volcano's plugins registers (`git grep 'ssn.Add.*Fn(' pkg/scheduler/plugins`),
# PrePredicate folded into Predicate and BatchNodeOrder into NodeOrder, as their switches are.
REGISTERED: Final[Mapping[str, frozenset[Point]]] = {
    "binpack": _points(P.NODE_ORDER),
    "capacity": _points(
        P.ALLOCATABLE,
        P.JOB_ENQUEUEABLE,
        P.PREDICATE,
        P.PREEMPTIVE,
        P.QUEUE_ORDER,
        P.RECLAIMABLE,
        P.UNIFIED_EVICTABLE,
    ),
    "cdp": _points(P.PREEMPTABLE, P.RECLAIMABLE),
    "conformance": _points(P.PREEMPTABLE, P.RECLAIMABLE, P.UNIFIED_EVICTABLE),
    "deviceshare": _points(P.NODE_ORDER, P.PREDICATE),
    "drf": _points(P.JOB_ORDER, P.PREEMPTABLE, P.QUEUE_ORDER, P.RECLAIMABLE),
    "extender": _points(
        P.NODE_ORDER,
        P.JOB_ENQUEUEABLE,
        P.JOB_READY,
        P.OVERUSED,
        P.PREDICATE,
        P.PREEMPTABLE,
        P.RECLAIMABLE,
    ),
    "gang": _points(
        P.JOB_ORDER,
        P.JOB_PIPELINED,
        P.JOB_READY,
        P.JOB_STARVING,
        P.JOB_VALID,
        P.PREEMPTABLE,
        P.RECLAIMABLE,
        P.SUB_JOB_ORDER,
        P.SUB_JOB_PIPELINED,
        P.SUB_JOB_READY,
        P.UNIFIED_EVICTABLE,
    ),
    "network-topology-aware": _points(P.NODE_ORDER, P.HYPER_NODE_GRADIENT, P.HYPER_NODE_ORDER),
    "nodegroup": _points(P.NODE_ORDER, P.PREDICATE),
    "nodeorder": _points(P.NODE_ORDER),
    "numaaware": _points(P.NODE_ORDER, P.PREDICATE),
    "overcommit": _points(P.JOB_ENQUEUEABLE),
    "pdb": _points(P.PREEMPTABLE, P.RECLAIMABLE, P.VICTIM_TASKS),
    "predicates": _points(P.NODE_ORDER, P.PREDICATE),
    "priority": _points(
        P.JOB_ORDER,
        P.JOB_STARVING,
        P.PREEMPTABLE,
        P.SUB_JOB_ORDER,
        P.TASK_ORDER,
        P.UNIFIED_EVICTABLE,
    ),
    "proportion": _points(
        P.ALLOCATABLE,
        P.JOB_ENQUEUEABLE,
        P.OVERUSED,
        P.PREDICATE,
        P.PREEMPTIVE,
        P.QUEUE_ORDER,
        P.RECLAIMABLE,
    ),
    "rescheduling": _points(P.VICTIM_TASKS),
    "resource-strategy-fit": _points(P.NODE_ORDER, P.PREDICATE),
    "resourcequota": _points(P.JOB_ENQUEUEABLE),
    "sla": _points(P.JOB_ENQUEUEABLE, P.JOB_ORDER, P.JOB_PIPELINED),
    "task-topology": _points(P.NODE_ORDER, P.TASK_ORDER),
    "tdm": _points(
        P.JOB_ORDER,
        P.JOB_PIPELINED,
        P.JOB_STARVING,
        P.NODE_ORDER,
        P.PREDICATE,
        P.PREEMPTABLE,
        P.VICTIM_TASKS,
    ),
    "usage": _points(P.NODE_ORDER, P.PREDICATE),
}


class PluginOn(BaseModel):
    """One plugin of a tier, with the points its switches turned off."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    off: frozenset[Point] = frozenset()

    def speaks(self, point: Point) -> bool:
        return point in REGISTERED.get(self.name, frozenset()) and point not in self.off


Tiers = tuple[tuple[PluginOn, ...], ...]


def tiers_of(*names: Iterable[str]) -> Tiers:
    """Tiers of plugins with every switch on, one iterable of names per tier."""
    return tuple(tuple(PluginOn(name=n) for n in tier) for tier in names)


def speakers(tiers: Tiers, point: Point) -> tuple[str, ...]:
    """The plugins asked at `point`, in tier and list order (an order's tie-breakers)."""
    return tuple(p.name for tier in tiers for p in tier if p.speaks(point))


def decide(tiers: Tiers, point: Point, votes: Mapping[str, Callable[[], Vote]]) -> tuple[bool, str]:
    """Volcano's JobEnqueueable/JobPipelined walk: (the answer, the plugin that decided; ""
    when nobody did). A plugin Caldera has no vote for (`votes` lacks it) is not asked."""
    for tier in tiers:
        permitted = ""
        for plugin in tier:
            vote = votes.get(plugin.name)
            if vote is None or not plugin.speaks(point):
                continue
            answer = vote()
            if answer is Vote.REJECT:
                return False, plugin.name
            if answer is Vote.PERMIT and not permitted:
                permitted = plugin.name
        if permitted:
            return True, permitted
    return True, ""
