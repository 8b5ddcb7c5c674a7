"""The allocate action: all-or-nothing gang placement.

Queues take turns lowest share first; each turn one job (job order) places pending tasks one
by one on its best feasible node through a `Statement`: a node with idle room takes it
(Allocate); failing that, a node whose room is being released by evicted pods keeps it waiting
there (Pipeline). The statement commits once the gang is ready (minMember tasks hold nodes,
counting ones already bound or running, and every role has its minTaskMember); a gang that
would be ready once the released room is free keeps its places in this session without
binding anything; any other gang is discarded, so a gang that does not fit holds nothing. A
ready job with tasks left is put back and places one more task per turn, interleaved with the
other jobs. Node search is exhaustive and in name order, and ties go to the first name, which
keeps the session reproducible where Volcano samples and randomises. With task-topology on,
each job's buckets (`plugins.tasktopology`) order its tasks and add their node scores.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Final

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase, QueueState
from scheduling.api import jobs
from scheduling.api.snapshot import (
    ALLOCATED_CLASS,
    JobInfo,
    NodeInfo,
    NodeName,
    PodKey,
    TaskInfo,
    TaskStatus,
)
from scheduling.api.topology import Topology
from scheduling.api.vectors import EMPTY, Number, Resources, total
from scheduling.framework import ordering, pipelining
from scheduling.framework.session_config import Action, SessionConfig, TopologyConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.framework.tiers import Point
from scheduling.plugins import extender, networktopology, predicates, scoring, tasktopology

# The pipelining vote allocate asks at HEAD: SubJobPipelined for a job placed anywhere,
# JobPipelined for one within a network topology (`pipelining`).
_PIPELINED_AT: Final = {False: Point.SUB_JOB_PIPELINED, True: Point.JOB_PIPELINED}


def _candidates(state: SessionState, config: SessionConfig) -> dict[QueueName, list[JobKey]]:
    """Jobs to try by queue: admitted and valid (pending ones are promoted without enqueue)."""
    by_queue: dict[QueueName, list[JobKey]] = {}
    for key, job in sorted(state.jobs.items()):
        if job.is_pending:
            if Action.ENQUEUE in config.actions:
                continue
            state.set_phase(key, PodGroupPhase.INQUEUE)
        if key in state.invalid:
            continue
        topology = state.snapshot.topology
        if job.network_topology is not None and not topology.ready:
            state.job_errors[key] = f"HyperNodes are not ready for scheduling: {topology.problem}"
            continue
        by_queue.setdefault(job.queue, []).append(key)
    return by_queue


def _pending(
    state: SessionState, key: JobKey, buckets: tasktopology.JobBuckets | None
) -> deque[PodKey]:
    tasks = [t for t in state.tasks_of(key) if t.status is TaskStatus.PENDING and not t.best_effort]
    tasks.sort(key=lambda t: ordering.job_task_order(state, t, buckets))
    return deque(t.key for t in tasks)


def _buckets(
    state: SessionState, config: SessionConfig, keys: list[JobKey]
) -> dict[JobKey, tasktopology.JobBuckets]:
    """task-topology's buckets of the jobs allocate tries, built before any task is placed."""
    on = config.scoring.task_topology or "task-topology" in config.speakers(Point.TASK_ORDER)
    built = {k: tasktopology.build(state.jobs[k], state.tasks_of(k)) for k in keys} if on else {}
    return {key: b for key, b in built.items() if b is not None}


def _failed_roles(state: SessionState, key: JobKey) -> dict[str, str]:
    """Roles with a task that found no node this session, and that task's fit error."""
    failed: dict[str, str] = {}
    for pod, message in state.fit_errors.get(key, {}).items():
        failed.setdefault(state.tasks[pod].role, message)
    return failed


def _queue_note(state: SessionState, task: TaskInfo, queue: QueueName) -> str:
    """Why a task its queue may not take waits: the queue is not Open, no node fits, or share."""
    if (phase := state.queues[queue].state) is not QueueState.OPEN:
        return f"queue {queue} is {phase}"
    reasons = [
        predicates.check(task, state.nodes[name], pods=state.pods, devices=state.devices)
        for name in sorted(state.nodes)
    ]
    if all(reasons):
        return state.devices.explained(task.key, predicates.fit_error(len(reasons), reasons))
    return state.queue_full(queue, task.request)


class _Near:
    """network-topology-aware's node score for a job with a network topology: nodes near the
    HyperNode its tasks hold score higher, so a gang allowed to cross a tier still packs
    into the lowest one it can. Follows the job's HyperNode as the statement places tasks."""

    def __init__(self, topology: Topology, weight: int, allocated: str) -> None:
        self._topology, self._weight, self.allocated = topology, weight, allocated

    def scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[NodeName, Fraction]:
        if not self.allocated:
            return {}
        scale = scoring.MAX_SCORE * self._weight
        return {n.name: scale * self._topology.closeness(n.name, self.allocated) for n in nodes}

    def placed(self, node: NodeName) -> None:
        own = self._topology.lowest_of(node)
        self.allocated = self._topology.lca(own, self.allocated) if own else self.allocated


def _fade(fading: Fraction, tier: int) -> Fraction:
    """fading^(tier-1); with fading 0 only tier 1 counts (0^0 is 1)."""
    if fading == 0:
        return Fraction(1 if tier == 1 else 0)
    return fading ** (tier - 1)


class _Packed:
    """network-topology-aware's node score for pods without a network topology: nodes whose
    HyperNodes are fuller score higher, the lowest tier counting most (weight fading^(tier-1)),
    so gangs that ask for nothing leave whole HyperNodes free for those that do."""

    def __init__(self, state: SessionState, settings: TopologyConfig) -> None:
        self._state, self._settings = state, settings
        topology = state.snapshot.topology
        self._tiers = [
            (
                _fade(settings.fading, tier),
                [h.name for h in topology.by_name.values() if h.tier == tier],
            )
            for tier in range(topology.tiers[0], topology.tiers[-1] + 1)
        ]
        self._weights = sum((w for w, _ in self._tiers), Fraction(0))
        # Per tier, the HyperNode holding each node (a node in none of a tier scores 1 there).
        self._holding = [
            {n: name for name in names for n in topology.by_name[name].nodes}
            for _, names in self._tiers
        ]

    def scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[NodeName, Fraction]:
        if not self._weights:
            return {}
        state, settings = self._state, self._settings
        fill = {
            name: _fill(state, name, task.request, settings.binpack)
            for _, names in self._tiers
            for name in names
        }
        scale = scoring.MAX_SCORE * settings.weight
        out: dict[NodeName, Fraction] = {}
        for node in nodes:
            score = Fraction(0)
            for (weight, _), holding in zip(self._tiers, self._holding, strict=True):
                name = holding.get(node.name)
                score += weight * (fill[name] if name is not None else 1)
            out[node.name] = scale * score / self._weights
        return out

    def placed(self, node: NodeName) -> None:
        """The fills are read from the session's nodes at each task: nothing to follow."""


def _held_nodes(state: SessionState, key: JobKey) -> list[NodeName]:
    return [t.node_name for t in state.tasks_of(key) if t.status in ALLOCATED_CLASS and t.node_name]


def _topology_scores(
    state: SessionState, config: SessionConfig, job: JobInfo
) -> _Near | _Packed | None:
    """network-topology-aware's node scores for the job's tasks; None: it scores nothing."""
    topology, settings = state.snapshot.topology, config.network_topology
    if settings is None or not topology.hyper_nodes or not settings.weight:
        return None
    if job.network_topology is None:
        return _Packed(state, settings) if settings.normal_pods else None
    allocated = topology.lowest_holding(_held_nodes(state, job.key))
    return _Near(topology, settings.weight, allocated)


def _fill(
    state: SessionState, name: str, request: Resources, weights: Mapping[str, int]
) -> Fraction:
    """HyperNode `name`'s binpack score with `request` added to what its nodes use now."""
    nodes = _nodes_of(state.snapshot.topology, name)
    used = total(state.nodes[n].used for n in nodes)
    allocatable = total(state.nodes[n].allocatable for n in nodes)
    return networktopology.binpack_score(used, allocatable, request, weights)


def _hyper_node_rank(
    state: SessionState, config: TopologyConfig, job: JobInfo, name: str, placed: Sequence[PodKey]
) -> tuple[Fraction, Fraction]:
    """How well the job's trial placement fills HyperNode `name` (its binpack score), then
    the share of the job's tasks already in it: the HyperNode order of network-topology-aware."""
    request = total(state.tasks[k].request for k in placed)
    tasks = state.tasks_of(job.key)
    topology = state.snapshot.topology
    inside = sum(1 for t in tasks if t.node_name and topology.holds(name, t.node_name))
    return _fill(state, name, request, config.binpack), Fraction(inside, len(tasks) or 1)


def _nodes_of(topology: Topology, hyper_node: str) -> list[NodeName]:
    return [NodeName(n) for n in topology.by_name[hyper_node].nodes]


def _has_room(state: SessionState, job: JobInfo, nodes: Sequence[NodeName]) -> bool:
    """The job's minimum fits the HyperNode's idle room, or its future idle room."""
    need = job.min_resources or EMPTY
    idle = total(state.nodes[n].idle for n in nodes)
    future = total(state.nodes[n].future_idle for n in nodes)
    return need.less_equal(idle) or need.less_equal(future)


def allocate_within_topology(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    pending: deque[PodKey],
    limit: int,
    buckets: tasktopology.JobBuckets | None = None,  # None: task-topology leaves it alone
) -> Statement | None:
    """Place a gang inside one HyperNode of tier `limit` or lower (allocateForJob with
    HyperNode gradients): lowest tier first, every HyperNode of a tier tried on its own, the
    best fill kept; only if none of a tier holds the gang is the next tier tried. None: no
    HyperNode within the limit holds it."""
    topology, settings = state.snapshot.topology, config.network_topology
    assert settings is not None
    allocated = topology.lowest_holding(_held_nodes(state, job.key))
    root = topology.search_root(limit, allocated)
    if root is None:
        state.job_errors[job.key] = (
            f"the job's pods already span HyperNode {allocated}, above its highest allowed "
            f"tier {limit}"
        )
        return None
    fits = (
        None
        if allocated
        else {name: _has_room(state, job, _nodes_of(topology, name)) for name in topology.by_name}
    )
    discarded = dict(state.discarded)
    tried = ""
    for gradient in topology.gradients(root, limit, fits):
        ranks: dict[str, tuple[Fraction, Fraction]] = {}
        for name in gradient:
            tried = name
            state.fit_errors.pop(job.key, None)
            nodes = _nodes_of(topology, name)
            trial = allocate_job(state, config, job, deque(pending), nodes, buckets)
            tasks = state.tasks_of(job.key)
            if trial.placed and (jobs.is_ready(job, tasks) or pipelining.pipelined(state, job)):
                placed = trial.placed
                trial.discard()
                ranks[name] = _hyper_node_rank(state, settings, job, name, placed)
            else:
                trial.discard()
        state.discarded = dict(discarded)
        if ranks:
            best = min(ranks, key=lambda n: (-ranks[n][0], -ranks[n][1], n))
            state.fit_errors.pop(job.key, None)
            return allocate_job(state, config, job, pending, _nodes_of(topology, best), buckets)
    # The trials' node-fit errors would name the last HyperNode's nodes only.
    last = next(iter(state.fit_errors.pop(job.key, {}).values()), "")
    state.job_errors[job.key] = f"no HyperNode of tier {limit} or lower has room for the gang" + (
        f" (in {tried}: {last})" if last and tried else ""
    )
    return None


def allocate_job(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    pending: deque[PodKey],
    within: Sequence[NodeName] | None = None,  # None: every node
    buckets: tasktopology.JobBuckets | None = None,  # None: task-topology leaves it alone
) -> Statement:
    """Place the job's pending tasks until it is ready or they run out (allocateForJob)."""
    statement = Statement(state)
    queue = state.queues[job.queue]
    nodes = sorted(state.nodes) if within is None else list(within)
    near = _topology_scores(state, config, job)
    while pending:
        task = state.tasks[pending.popleft()]
        if task.status is not TaskStatus.PENDING or task.gated:
            continue
        if not state.queue_allocatable(queue.name, task.request):
            state.notes[task.key] = _queue_note(state, task, queue.name)
            continue
        failed = _failed_roles(state, job.key)
        if task.role and task.role in failed:
            state.record_fit_error(job.key, task.key, failed[task.role])
            continue
        reasons = {
            name: predicates.check(task, state.nodes[name], pods=state.pods, devices=state.devices)
            for name in nodes
        }
        extender.refuse(state.extender, task, state.nodes, reasons)
        feasible = [state.nodes[name] for name in nodes if not reasons[name]]
        if not feasible:
            message = state.devices.explained(
                task.key, predicates.fit_error(len(nodes), reasons.values())
            )
            state.record_fit_error(job.key, task.key, message)
            tasks = state.tasks_of(job.key)
            if jobs.need_continue_allocating(job, tasks, _failed_roles(state, job.key)):
                continue
            break
        # Nodes with idle room first; only if none, one where room is being released. Without
        # releasing room, future idle is at most idle: a feasible node fits idle room too.
        idle = [n for n in feasible if n.releasing == EMPTY or predicates.fits_idle(task, n)]
        candidates = idle or feasible
        extra: Mapping[NodeName, Number] | None = near.scores(task, candidates) if near else None
        if buckets is not None:  # task-topology's scores, over the job's tasks as they are now
            extra = buckets.add_scores(
                task, candidates, state.tasks_of(job.key), config.scoring, extra
            )
        scored = extender.with_scores(state.extender, task, candidates, extra)
        if isinstance(scored, extender.Failure):
            state.record_fit_error(job.key, task.key, scored.message)
            continue
        best = scoring.best_node(task, candidates, config.scoring, scored, state.pods).name
        if idle:
            statement.allocate(task.key, best)
        else:
            statement.pipeline(task.key, best)
        if near is not None:
            near.placed(best)
        if jobs.is_ready(job, state.tasks_of(job.key)):
            break
    return statement


def _tier_limit(state: SessionState, config: SessionConfig, job: JobInfo) -> int | None:
    """The highest tier the job may cross; None: it is placed anywhere (no topology, or
    network-topology-aware is off)."""
    if job.network_topology is None or config.network_topology is None:
        return None
    return state.snapshot.topology.tier_limit(job.network_topology)


def allocate(state: SessionState, config: SessionConfig) -> None:
    """Volcano's allocate main loop over queues and jobs."""
    candidates = _candidates(state, config)
    tried = [key for keys in candidates.values() for key in keys]
    buckets = _buckets(state, config, tried)
    pending = {key: _pending(state, key, buckets.get(key)) for key in tried}
    by_queue = ordering.job_queues(state, candidates)
    while by_queue:
        queue = min(by_queue, key=lambda name: ordering.queue_order(state, name))
        waiting = by_queue[queue]
        if not waiting:
            del by_queue[queue]
            continue
        if state.queue_overused(queue):
            for key in waiting:
                state.job_errors.setdefault(key, f"queue {queue} has used its deserved share")
            del by_queue[queue]
            continue
        key = waiting.pop()
        job = state.jobs[key]
        limit = _tier_limit(state, config, job)
        topo = buckets.get(key)
        if limit is None:
            statement: Statement | None = allocate_job(state, config, job, pending[key], None, topo)
        else:
            statement = allocate_within_topology(state, config, job, pending[key], limit, topo)
        if statement is None:
            continue
        tasks = state.tasks_of(key)
        if jobs.is_ready(job, tasks):
            statement.commit()
            if pending[key]:
                waiting.push(key)
        elif not pipelining.pipelined(state, job, _PIPELINED_AT[limit is not None]):
            statement.discard()
        # A pipelined gang is neither committed nor discarded (HEAD): it keeps its nodes in
        # this session, so reclaim sees it is not starving and evicts nobody else for it,
        # and it is placed for real in a later session, once the released room is free.
