"""What gangpreempt and gangreclaim share (Volcano master's actions/utils simulate.go and the
two actions' Execute): a starving gang takes room by evicting whole victim bundles.

The legacy actions (`preempt`, `reclaim`) free room task by task, node by node. The gang-level
ones look at the starving gang as a whole: its pending tasks (`pending`) ask for their sum
(`need`); the victim bundles (`bundles`) are added in victim order until the room that is idle
or being released plus what they free covers that sum; then a dry run evicts them and
pipelines every pending task onto its best node (nodes with idle room first, then nodes where
room is being released), each task within its queue's allocatable share. The plan is kept
only if the gang is then pipelined (minMember tasks hold or wait for a node); otherwise the
next, larger prefix of bundles is tried, and when none works nobody is evicted for that gang.
Queues are served once each in queue order and their starving gangs in job order.

Which candidates may go (`allowed`) is decided by one of the two rules of
`SessionConfig.whole_gang_victims`:
- Volcano's (False): the plugins' UnifiedEvictable functions asked tier by tier (no `enable*`
  switch gates them): priority (gangpreempt: a lower-priority job; gangreclaim: anyone), gang
  (anyone: the bundles already keep gangs), conformance (never a critical pod or one in
  kube-system), capacity (gangreclaim: a queue above deserved that keeps its guarantee). A
  whole bundle is the victim job's candidates, all of them.
- Caldera's (True, the default): every rule asked every time (conformance; priority for
  gangpreempt; for gangreclaim the victim queue's share, as reclaim asks it: a task goes
  while its queue holds more than its deserved share, counted down bundle by bundle), and a
  whole bundle goes only if it is every running task of its job, so a gang is never left
  running below minAvailable even when one of its tasks may not be evicted.

Jobs with a hard network topology are not served: Volcano looks for their room HyperNode by
HyperNode, which Caldera does not model here; allocate places them as before.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from models.keys import JobKey, QueueName
from scheduling.actions import bundles, reclaim
from scheduling.actions.bundles import Bundle
from scheduling.actions.victims import POINTS, cooling
from scheduling.api import jobs
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import PREEMPTABLE, NodeInfo, PodKey, TaskInfo, TaskStatus
from scheduling.api.vectors import Missing, Resources, total
from scheduling.framework import ordering, victim_tiers
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.framework.tiers import Point
from scheduling.plugins import capacity as capacity_plugin
from scheduling.plugins import extender, predicates, scoring

Select = Callable[[SessionState, SessionConfig, JobKey, Resources], list[Bundle]]
# A UnifiedEvictable function: (state, kind, the starving gang's stand-in task, candidates).
Unified = Callable[[SessionState, EvictReason, TaskInfo, Sequence[TaskInfo]], list[TaskInfo]]


def pending(state: SessionState, key: JobKey) -> list[TaskInfo]:
    """CollectPendingTasksForGangEviction: the gang's pending tasks that ask for something,
    in task order. Gated tasks wait for their gates; a task whose pod says
    preemptionPolicy Never evicts nobody, so a gang that needs one never evicts either."""
    found = [
        t
        for t in state.tasks_of(key)
        if t.status is TaskStatus.PENDING and not t.gated and not t.request.is_empty()
    ]
    return sorted(found, key=ordering.task_order)


def _priority(
    state: SessionState, kind: EvictReason, evictor: TaskInfo, found: Sequence[TaskInfo]
) -> list[TaskInfo]:
    if kind is EvictReason.GANG_RECLAIM:  # reclaim is about shares, not priority
        return list(found)
    mine = state.jobs[evictor.job].priority
    return [t for t in found if state.jobs[t.job].priority < mine]


def _anyone(
    state: SessionState, kind: EvictReason, evictor: TaskInfo, found: Sequence[TaskInfo]
) -> list[TaskInfo]:
    return list(found)


def _conformance(
    state: SessionState, kind: EvictReason, evictor: TaskInfo, found: Sequence[TaskInfo]
) -> list[TaskInfo]:
    return victim_tiers.conformance(state, evictor, found)


def _capacity(
    state: SessionState, kind: EvictReason, evictor: TaskInfo, found: Sequence[TaskInfo]
) -> list[TaskInfo]:
    if kind is EvictReason.GANG_PREEMPT:
        return list(found)
    return victim_tiers.capacity(state, evictor, found)


# The plugins Caldera runs that register an UnifiedEvictable function at Volcano's HEAD.
UNIFIED: Final[Mapping[str, Unified]] = {
    "priority": _priority,
    "gang": _anyone,
    "conformance": _conformance,
    "capacity": _capacity,
}


def _by_tiers(
    state: SessionState,
    config: SessionConfig,
    kind: EvictReason,
    evictor: TaskInfo,
    found: Sequence[TaskInfo],
) -> set[PodKey]:
    """Session.UnifiedEvictable: the victims walk of `victim_tiers` at its own point, over the
    plugins with such a function (no switch turns it off)."""

    def ask(fn: Unified) -> Callable[[], tuple[PodKey, ...]]:
        return lambda: tuple(t.key for t in fn(state, kind, evictor, found))

    answers = {name: ask(fn) for name, fn in UNIFIED.items()}
    return set(victim_tiers.victims_by_tiers(config.tiers, Point.UNIFIED_EVICTABLE, answers))


def _every_rule(
    state: SessionState,
    config: SessionConfig,
    kind: EvictReason,
    evictor: TaskInfo,
    found: Sequence[TaskInfo],
) -> set[PodKey]:
    """Caldera's rule, task by task: conformance, cdp's cooldown (when listed), and for
    gangpreempt priority (the queue's share is asked of whole bundles, `_within_shares`)."""
    allowed = victim_tiers.conformance(state, evictor, found)
    allowed = [t for t in allowed if not cooling(state, t, kind)]
    if kind is EvictReason.GANG_PREEMPT:
        allowed = _priority(state, kind, evictor, allowed)
    return {t.key for t in allowed}


def _gives(
    state: SessionState, queue: QueueName, held: Resources, task: TaskInfo, evictor: TaskInfo
) -> bool:
    """The victim queue, holding `held`, may lose `task` (`SessionState.queue_gives_up`)."""
    if state.capacity is not None:
        return capacity_plugin.gives_up(state.capacity, held, queue, [task], evictor)
    return not held.less_equal(state.deserved_of(queue), Missing.ZERO)


def _within_shares(state: SessionState, found: Sequence[Bundle], evictor: TaskInfo) -> list[Bundle]:
    """Caldera's rule for gangreclaim: in victim order, a bundle's tasks go while their
    queue holds more than its deserved share (capacity: and keeps its guarantee), counted
    down by the bundles kept before it; a whole bundle all or nothing, as `victims.units`."""
    held: dict[QueueName, Resources] = {}
    out = []
    for bundle in found:
        queue = state.jobs[bundle.job].queue
        now = held.get(queue, state.allocated_of(queue))
        kept: list[PodKey] = []
        for key in bundle.tasks:
            if not _gives(state, queue, now, state.tasks[key], evictor):
                break
            now = now.sub(state.tasks[key].request)
            kept.append(key)
        if not kept or (bundle.kind is bundles.Kind.WHOLE and len(kept) < len(bundle.tasks)):
            continue
        held[queue] = now
        out.append(bundles.apply_allowed(state, [bundle], set(kept))[0])
    return out


def _complete(state: SessionState, bundle: Bundle) -> bool:
    """A whole bundle holds every task of its job that holds a node (Caldera's rule)."""
    held = {t.key for t in state.tasks_of(bundle.job) if t.status in PREEMPTABLE}
    return bundle.kind is bundles.Kind.SAFE or held == set(bundle.tasks)


def choose(
    state: SessionState,
    config: SessionConfig,
    kind: EvictReason,
    key: JobKey,
    candidates: Sequence[TaskInfo],
    need: Resources,
    victim_order: Callable[[Bundle], object],
    whole_allowed: bool,
) -> list[Bundle]:
    """selectDomainBundles after the action's own filter: bundle the candidates by victim job,
    order them, keep the tasks the rule allows (a whole bundle all or nothing), order again."""
    by_job: dict[JobKey, list[TaskInfo]] = {}
    for task in candidates:
        by_job.setdefault(task.job, []).append(task)
    found = [b for job, local in sorted(by_job.items()) for b in bundles.create(state, job, local)]
    if not found:
        return []
    found = bundles.ordered(found, need, victim_order)
    flat = [state.tasks[k] for k in bundles.flatten(found)]
    # The starving gang's stand-in: its first pending task, asking for the whole need.
    evictor = pending(state, key)[0].model_copy(update={"request": need})
    rule = _every_rule if config.whole_gang_victims else _by_tiers
    allowed = rule(state, config, kind, evictor, flat)
    valid = bundles.apply_allowed(state, found, allowed)
    valid = bundles.ordered(valid, need, victim_order)
    if config.whole_gang_victims:
        point = POINTS[kind]
        valid = [
            b for b in valid if _complete(state, b) and state.within_budgets(tuple(b.tasks), point)
        ]
        if kind is EvictReason.GANG_RECLAIM:
            valid = _within_shares(state, valid, evictor)
    return [b for b in valid if whole_allowed or b.kind is bundles.Kind.SAFE]


def _best(state: SessionState, config: SessionConfig, task: TaskInfo) -> NodeInfo | None:
    """prioritizeNodesForSimulate: of the nodes that pass every predicate with the room that
    will be free, those with idle room first, else those where room is being released."""
    feasible = [
        node
        for name, node in sorted(state.nodes.items())
        if not predicates.check(task, node, pods=state.pods)
        and state.devices.refusal(task, node, future=True) is None
    ]
    feasible = extender.passing(state.extender, task, feasible)
    idle = [n for n in feasible if predicates.fits_idle(task, n)]
    candidates = idle or feasible
    if not candidates:
        return None
    extra = extender.with_scores(state.extender, task, candidates, None)
    if isinstance(extra, extender.Failure):
        return None
    return scoring.best_node(task, candidates, config.scoring, extra, state.pods)


def _plan(
    state: SessionState,
    config: SessionConfig,
    statement: Statement,
    key: JobKey,
    victims: Sequence[PodKey],
    kind: EvictReason,
) -> bool:
    """BuildNominationPlanInDomain: evict `victims`, pipeline every pending task; kept (merged
    into `statement`) only if the gang is then pipelined, else undone."""
    tasks = pending(state, key)
    queue = state.jobs[key].queue
    trial = Statement(state)
    point = POINTS[kind]
    for victim in victims:
        if config.whole_gang_victims and not state.within_budgets((victim,), point):
            trial.discard()  # bundles that each fit a budget can break it together
            return False
        trial.evict(victim, kind, tasks[0].key)
    for task in tasks:
        node = _best(state, config, task) if state.queue_allocatable(queue, task.request) else None
        if node is None:
            trial.discard()
            return False
        trial.pipeline(task.key, node.name)
    if not jobs.is_pipelined(state.jobs[key], state.tasks_of(key)):
        trial.discard()
        return False
    statement.merge(trial)
    return True


def nominate(
    state: SessionState,
    config: SessionConfig,
    statement: Statement,
    key: JobKey,
    kind: EvictReason,
    select: Select,
) -> None:
    """preemptJobInDomains / reclaimJobInDomains over the cluster as its one domain: the
    shortest prefix of bundles that covers the need and lets the gang be pipelined."""
    tasks = pending(state, key)
    job = state.jobs[key]
    if not tasks or not all(t.preempts for t in tasks):
        return
    if job.network_topology is not None and job.network_topology.hard:
        return
    need = total(t.request for t in tasks)
    if kind is EvictReason.GANG_RECLAIM and not state.queue_preemptive(job.queue, need):
        return
    chosen = select(state, config, key, need)
    room = total(n.idle.add(n.releasing) for n in state.nodes.values())
    victims: list[PodKey] = []
    for bundle in chosen:
        victims += bundle.tasks
        freed = total(state.tasks[k].request for k in victims)
        if not need.less_equal(room.add(freed), Missing.ZERO):
            continue
        if _plan(state, config, statement, key, victims, kind):
            return


def run(state: SessionState, config: SessionConfig, kind: EvictReason, select: Select) -> None:
    """Execute: queues once each in queue order (gangreclaim skips an overused one), each
    queue's starving gangs in job order, each through one statement kept only if pipelined."""
    by_queue = reclaim.starving_jobs(state)
    waiting = ordering.job_queues(state, by_queue)
    for queue in sorted(by_queue, key=lambda name: ordering.queue_order(state, name)):
        if kind is EvictReason.GANG_RECLAIM and state.queue_overused(queue):
            continue
        heap = waiting[queue]
        while heap:
            key = heap.pop()
            statement = Statement(state)
            nominate(state, config, statement, key, kind, select)
            if jobs.is_pipelined(state.jobs[key], state.tasks_of(key)):
                statement.commit()
            else:
                statement.discard()
