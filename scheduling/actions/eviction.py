"""Making room on one node by evicting: shared by reclaim and preempt.

For one pending task and one node: evict the allowed victim units in victim order until the
task fits the node's future idle room (idle plus what is being released, less what others wait
for), then pipeline the task there. The trial runs in a statement of its own and joins the
job's statement only if the task got its place, so a node that cannot be freed enough evicts
nobody. A unit whose eviction would break a disruption budget is passed by (the pdb plugin,
checked against the session's evictions so far). The task is pipelined, not bound: it waits
for the victims to be gone, and a later session binds it once the room is really free.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduling.actions.victims import POINTS, Unit
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import PREEMPTABLE, NodeName, TaskInfo
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.plugins import predicates

Fits = Callable[[SessionState, TaskInfo, NodeName], bool]
Allowed = Callable[[SessionState, Unit], bool]


def anyone(state: SessionState, unit: Unit) -> bool:
    """No check left while evicting: the victim rule has already chosen."""
    return True


def fits_future_idle(state: SessionState, task: TaskInfo, node: NodeName) -> bool:
    """Reclaim's test: the request fits the room that will be free on the node, its claims
    get devices there once the victims' own claims are gone, and the pods staying there let
    it in (host ports, volume counts, spread, pod affinity: evicting may clear those)."""
    current = state.nodes[node]
    if predicates.resources_fit(task, current):
        return False
    if state.devices.refusal(task, current, future=True) is not None:
        return False
    return predicates.other_pods(task, current, state.pods) is None


def try_node(
    state: SessionState,
    statement: Statement,
    task: TaskInfo,
    node: NodeName,
    victims: Sequence[Unit],
    reason: EvictReason,
    fits: Fits,
    allowed: Allowed,
) -> bool:
    """Evict units until `task` fits on `node`, then pipeline it there; False: no room made."""
    trial = Statement(state)
    for unit in victims:
        if fits(state, task, node):
            break
        if not allowed(state, unit) or not state.within_budgets(unit.tasks, POINTS[reason]):
            continue  # the victim rule, or a disruption budget (pdb), keeps the unit
        for victim in unit.tasks:
            if state.tasks[victim].status in PREEMPTABLE:  # not already evicted by this job
                trial.evict(victim, reason, task.key)
    if not fits(state, task, node):
        trial.discard()
        return False
    trial.pipeline(task.key, node)
    statement.merge(trial)
    return True
