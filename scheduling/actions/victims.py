"""Who may be evicted for whom: reclaim's and preempt's victims, by one of two rules.

`SessionConfig.whole_gang_victims` picks the rule (`choose`).

Volcano's (False): the action's own filter (reclaim: running, preemptable pods of other,
reclaimable queues; preempt: bound or running preemptable pods of other jobs of the queue, or
of the preemptor's own job, a best-effort preemptor displacing only best-effort pods), then the
plugins' Reclaimable/Preemptable answers tier by tier with their enable* switches
(`framework.victim_tiers`). Each victim goes on its own, in victim order, until the task fits.

Caldera's (True, the default), which differs from Volcano's in two ways:
- Volcano takes the first tier's answer. With the default tiers, when gang finds a task to
  spare, tier 1 decides and proportion (reclaim) is never asked, so a queue below its share
  may lose spare tasks; when gang finds none, tier 1 ends before conformance is asked and
  proportion (or drf, for preempt) alone decides in tier 2, breaking gangs below minMember and
  taking critical or kube-system pods. Caldera asks every rule every time and ignores the
  tiers' enablePreemptable/enableReclaimable switches: conformance (never a system-critical pod
  or one in kube-system); priority (preempt only: the victim's job has a lower priority than
  the preemptor's, or, within one job, the victim task has the lower priority); proportion or
  capacity (reclaim only: a victim's queue gives up a task only while it holds more than its
  deserved share, capacity: and keeps its guarantee, checked against the live books as the
  units are evicted); drf with enableHierarchy (reclaim only: the reclaimer's queue would
  still come first by hierarchical share with the unit gone, `plugins.hdrf`); cdp, when
  listed (no pod within its cooldown, so neither is its gang evicted whole).
- gang: a victim job keeps its gang. Tasks beyond its minMember (and its roles' minima) may go
  one by one; the rest only together, as one unit holding every running task of the job (the
  gang-aware bundles of Volcano's gangreclaim/gangpreempt actions: a gang either keeps minMember
  tasks or loses them all, never runs broken).

Units are ordered the way Volcano builds its victim queue: units that break no gang first,
then the victim queue served last first (lowest priority, highest share), then within a queue
the job ordered last first (lowest priority, ready, largest share, newest), then the task
ordered last first.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from models.keys import JobKey
from scheduling.api import jobs
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import PREEMPTABLE, NodeName, PodKey, TaskInfo, TaskStatus
from scheduling.framework import ordering, victim_tiers
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point
from scheduling.plugins import cdp

# The point each action asks the plugins at, in Volcano's rule.
POINTS: Final[Mapping[EvictReason, Point]] = {
    EvictReason.RECLAIM: Point.RECLAIMABLE,
    EvictReason.PREEMPT: Point.PREEMPTABLE,
    # Under Caldera's rule pdb's budgets hold for the gang actions too, asked as reclaim and
    # preempt ask them (Volcano's pdb registers no UnifiedEvictable: its gang actions take none).
    EvictReason.GANG_RECLAIM: Point.RECLAIMABLE,
    EvictReason.GANG_PREEMPT: Point.PREEMPTABLE,
}


class Unit(BaseModel):
    """Tasks evicted together: one spare task, or every running task of a gang."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job: JobKey
    tasks: tuple[PodKey, ...]
    whole: bool  # True: the whole gang goes (it has no task to spare)


def _status_ok(task: TaskInfo, kind: EvictReason) -> bool:
    """Reclaim takes Running pods only; preempt Bound ones too (Volcano's status filters)."""
    statuses = {TaskStatus.RUNNING} if kind is EvictReason.RECLAIM else PREEMPTABLE
    return task.status in statuses and task.preemptable


def _evictable(task: TaskInfo, kind: EvictReason) -> bool:
    return _status_ok(task, kind) and victim_tiers.conformant(task)


def cooling(state: SessionState, task: TaskInfo, kind: EvictReason) -> bool:
    """cdp under Caldera's rule: it runs, is asked at the action's point, and the task is
    within its cooldown at the session's clock."""
    return "cdp" in state.config.speakers(POINTS[kind]) and cdp.cooling(task, state.snapshot.now)


def _filtered(
    state: SessionState, preemptor: TaskInfo, victim: TaskInfo, kind: EvictReason, same_job: bool
) -> bool:
    """The action's own filter (reclaimForTask's reclaimees, preempt's filter functions):
    reclaim, another queue that lets itself be reclaimed; preempt, another job of the same
    queue or, with `same_job`, the preemptor's own job. A best-effort preemptor only ever
    displaces best-effort pods."""
    if not _status_ok(victim, kind) or (victim.job == preemptor.job) != same_job:
        return False
    mine, theirs = state.jobs[preemptor.job], state.jobs[victim.job]
    if kind is EvictReason.RECLAIM:
        return theirs.queue != mine.queue and state.queues[theirs.queue].reclaimable
    if preemptor.best_effort and not victim.best_effort:
        return False
    return same_job or theirs.queue == mine.queue


def _lower(state: SessionState, preemptor: TaskInfo, victim: TaskInfo) -> bool:
    """Caldera's priority rule: a lower-priority job, or in one job a lower-priority task."""
    if victim.job == preemptor.job:
        return victim.priority < preemptor.priority
    return state.jobs[victim.job].priority < state.jobs[preemptor.job].priority


def on_nodes(state: SessionState) -> dict[NodeName, list[PodKey]]:
    """Tasks that could be victims (bound or running), by node, by key; taken once per action,
    as no task becomes bound or running within a session."""
    found: dict[NodeName, list[PodKey]] = {}
    for key in sorted(state.tasks):
        task = state.tasks[key]
        if task.status in PREEMPTABLE and task.node_name is not None:
            found.setdefault(task.node_name, []).append(key)
    return found


def candidates(
    state: SessionState,
    preemptor: TaskInfo,
    on_node: Sequence[PodKey],
    kind: EvictReason,
    same_job: bool = False,
) -> list[TaskInfo]:
    """Caldera's rule: the tasks of one node (`on_nodes`) the preemptor may displace, before
    the gang and queue rules. `same_job` picks preempt's second phase (the own job)."""
    found = []
    for key in on_node:
        task = state.tasks[key]
        if not _filtered(state, preemptor, task, kind, same_job) or not _evictable(task, kind):
            continue
        if cooling(state, task, kind):
            continue
        if kind is EvictReason.RECLAIM or _lower(state, preemptor, task):
            found.append(task)
    return found


def choose(
    state: SessionState,
    config: SessionConfig,
    preemptor: TaskInfo,
    on_node: Sequence[PodKey],
    kind: EvictReason,
    same_job: bool = False,
) -> list[Unit] | None:
    """The victim units of one node, in victim order, by the configured rule; None: the node
    has no candidate at all (reclaim then passes it by)."""
    if config.whole_gang_victims:
        found = candidates(state, preemptor, on_node, kind, same_job)
        return units(state, found, kind, own_job=same_job) if found else None
    tasks = [state.tasks[k] for k in on_node]
    singles = [
        Unit(job=t.job, tasks=(t.key,), whole=False)
        for t in tasks
        if _filtered(state, preemptor, t, kind, same_job)
    ]
    if not singles:
        return None
    ordered = [state.tasks[u.tasks[0]] for u in _victim_order(state, singles)]
    chosen = victim_tiers.victims_for(state, config.tiers, POINTS[kind], preemptor, ordered)
    return [Unit(job=t.job, tasks=(t.key,), whole=False) for t in chosen]


def _victim_order(state: SessionState, units: list[Unit]) -> list[Unit]:
    """Volcano's victim queue; stable sorts from the finest key to the coarsest."""
    first = {u: state.tasks[u.tasks[0]] for u in units}
    units = sorted(units, key=lambda u: ordering.task_order(first[u]), reverse=True)
    units.sort(key=lambda u: ordering.job_order(state, u.job), reverse=True)
    units.sort(key=lambda u: ordering.queue_order(state, state.jobs[u.job].queue), reverse=True)
    units.sort(key=lambda u: u.whole)
    return units


def _whole_job(state: SessionState, job: JobKey, kind: EvictReason) -> tuple[PodKey, ...] | None:
    """Every running task of the job, if each may be evicted; None: one of them may not."""
    held = [t for t in state.tasks_of(job) if t.status in PREEMPTABLE]
    if not all(_evictable(t, kind) and not cooling(state, t, kind) for t in held):
        return None
    return tuple(t.key for t in sorted(held, key=ordering.task_order, reverse=True))


def units(
    state: SessionState, found: Sequence[TaskInfo], kind: EvictReason, own_job: bool = False
) -> list[Unit]:
    """The candidates grouped into units the gang rule allows, in victim order.

    `own_job`: the candidates belong to the preemptor's own job, which trades one task for
    another and so keeps its count; each goes on its own.
    """
    if own_job:
        return _victim_order(state, [Unit(job=t.job, tasks=(t.key,), whole=False) for t in found])
    by_job: dict[JobKey, list[TaskInfo]] = {}
    for task in found:
        by_job.setdefault(task.job, []).append(task)
    out: list[Unit] = []
    for key, local in sorted(by_job.items()):
        job, tasks = state.jobs[key], state.tasks_of(key)
        spare = jobs.ready_task_num(tasks) - job.min_member
        roles = _role_spares(state, key)
        rest = []
        for task in sorted(local, key=ordering.task_order, reverse=True):
            if spare > 0 and roles.get(task.role, 1) > 0:
                out.append(Unit(job=key, tasks=(task.key,), whole=False))
                spare -= 1
                if task.role in roles:
                    roles[task.role] -= 1
            else:
                rest.append(task)
        if rest and (whole := _whole_job(state, key, kind)) is not None:
            out.append(Unit(job=key, tasks=whole, whole=True))
    return _victim_order(state, out)


def _role_spares(state: SessionState, key: JobKey) -> Counter[str]:
    """Per role with a minimum, how many ready tasks it can lose (when roles are checked)."""
    job = state.jobs[key]
    if job.min_member < job.min_task_member_total:
        return Counter()
    ready = jobs.roles_ready(state.tasks_of(key))
    return Counter({role: ready[role] - need for role, need in job.min_task_member.items()})


def over_deserved(state: SessionState, unit: Unit, reclaimer: TaskInfo | None = None) -> bool:
    """The queue plugin's reclaimable vote, over a unit: its queue holds more than its
    deserved share before each of the unit's tasks is taken away (`SessionState`)."""
    queue = state.jobs[unit.job].queue
    held = [state.tasks[k] for k in unit.tasks if state.tasks[k].status in PREEMPTABLE]
    # drf's hierarchy: the reclaimer's queue must still come first with the unit gone.
    hdrf = state.hdrf
    if hdrf is not None and reclaimer is not None and held and not hdrf.yields(reclaimer, held):
        return False
    return state.queue_gives_up(queue, held, reclaimer)  # evicted ones already went
