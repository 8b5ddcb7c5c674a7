"""network-topology-aware in allocate: the HyperNodes a gang, or a sub-group of one, is tried
in, the order they are tried in, and the node scores that keep it packed.

A gang with a hard network topology is tried in every HyperNode of the lowest tier that has
room for its minimum, each trial undone; the one its placement fills best is kept, and only if
no HyperNode of a tier holds it is the next tier tried (Volcano's HyperNode gradients). The
same search places each sub-group within its own tier, inside the HyperNode its job was given.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

from models.keys import JobKey
from scheduling.api import jobs
from scheduling.api.snapshot import ALLOCATED_CLASS, JobInfo, NodeInfo, NodeName, PodKey, TaskInfo
from scheduling.api.topology import JobTopology, Topology
from scheduling.api.vectors import EMPTY, Resources, total
from scheduling.framework import pipelining
from scheduling.framework.session_config import SessionConfig, TopologyConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.plugins import networktopology, scoring

# Places tasks (a copy of the pending queue, or the queue itself) within one HyperNode
# (None: on any node).
Place = Callable[[str | None, deque[PodKey]], Statement]
# Whether a trial's placement is kept as a candidate: the gang (sub-group) ready or pipelined.
Took = Callable[[], bool]
# A kept trial's rank, higher better: its HyperNode fill, then the share already inside it.
Rank = Callable[[str, Sequence[PodKey]], tuple[Fraction, Fraction]]


class Near:
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


class Packed:
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


def held_nodes(tasks: Iterable[TaskInfo]) -> list[NodeName]:
    """The nodes `tasks` hold (Allocated class)."""
    return [t.node_name for t in tasks if t.status in ALLOCATED_CLASS and t.node_name]


def topology_scores(
    state: SessionState,
    config: SessionConfig,
    wanted: JobTopology | None,
    members: Iterable[TaskInfo],
) -> Near | Packed | None:
    """network-topology-aware's node scores for the tasks of a gang (sub-group) whose network
    topology is `wanted` and whose tasks are `members`; None: it scores nothing."""
    topology, settings = state.snapshot.topology, config.network_topology
    if settings is None or not topology.hyper_nodes or not settings.weight:
        return None
    if wanted is None:
        return Packed(state, settings) if settings.normal_pods else None
    allocated = topology.lowest_holding(held_nodes(members))
    return Near(topology, settings.weight, allocated)


def _fill(
    state: SessionState, name: str, request: Resources, weights: Mapping[str, int]
) -> Fraction:
    """HyperNode `name`'s binpack score with `request` added to what its nodes use now."""
    nodes = nodes_of(state.snapshot.topology, name)
    used = total(state.nodes[n].used for n in nodes)
    allocatable = total(state.nodes[n].allocatable for n in nodes)
    return networktopology.binpack_score(used, allocatable, request, weights)


def hyper_node_rank(
    state: SessionState,
    config: TopologyConfig,
    members: Sequence[TaskInfo],
    name: str,
    placed: Sequence[PodKey],
) -> tuple[Fraction, Fraction]:
    """How well a trial placement fills HyperNode `name` (its binpack score), then the share of
    the gang's (sub-group's) `members` in it: the HyperNode order of network-topology-aware."""
    request = total(state.tasks[k].request for k in placed)
    topology = state.snapshot.topology
    inside = sum(1 for t in members if t.node_name and topology.holds(name, t.node_name))
    return _fill(state, name, request, config.binpack), Fraction(inside, len(members) or 1)


def nodes_of(topology: Topology, hyper_node: str) -> list[NodeName]:
    return [NodeName(n) for n in topology.by_name[hyper_node].nodes]


def has_room(state: SessionState, need: Resources, nodes: Sequence[NodeName]) -> bool:
    """`need` fits the HyperNode's idle room, or its future idle room."""
    idle = total(state.nodes[n].idle for n in nodes)
    future = total(state.nodes[n].future_idle for n in nodes)
    return need.less_equal(idle) or need.less_equal(future)


def search(
    state: SessionState,
    key: JobKey,
    gradients: Sequence[Sequence[str]],
    trial: tuple[Place, Took, Rank],
    pending: deque[PodKey],
) -> tuple[str | None, str]:
    """The best HyperNode of the first gradient in which a trial places the tasks and is
    kept, every trial undone; None when none is, with the last HyperNode tried ("": none)."""
    place, took, rank = trial
    discarded = dict(state.discarded)
    tried = ""
    for gradient in gradients:
        ranks: dict[str, tuple[Fraction, Fraction]] = {}
        for name in gradient:
            tried = name
            state.fit_errors.pop(key, None)
            statement = place(name, deque(pending))
            placed = statement.placed if took() else ()
            statement.discard()
            if placed:  # ranked as if it were not there: its fill counts its requests once
                ranks[name] = rank(name, placed)
        state.discarded = dict(discarded)
        if ranks:
            state.fit_errors.pop(key, None)
            return min(ranks, key=lambda n: (-ranks[n][0], -ranks[n][1], n)), tried
    return None, tried


def within_topology(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    pending: deque[PodKey],
    limit: int,
    place: Place,
) -> Statement | None:
    """Place a gang inside one HyperNode of tier `limit` or lower (allocateForJob with
    HyperNode gradients), by `place`; None: no HyperNode within the limit holds it."""
    topology, settings = state.snapshot.topology, config.network_topology
    assert settings is not None
    allocated = topology.lowest_holding(held_nodes(state.tasks_of(job.key)))
    root = topology.search_root(limit, allocated)
    if root is None:
        state.job_errors[job.key] = (
            f"the job's pods already span HyperNode {allocated}, above its highest allowed "
            f"tier {limit}"
        )
        return None
    need = job.min_resources or EMPTY
    fits = (
        None
        if allocated
        else {name: has_room(state, need, nodes_of(topology, name)) for name in topology.by_name}
    )

    def took() -> bool:
        tasks = state.tasks_of(job.key)
        return jobs.is_ready(job, tasks) or pipelining.pipelined(state, job)

    def rank(name: str, placed: Sequence[PodKey]) -> tuple[Fraction, Fraction]:
        return hyper_node_rank(state, settings, state.tasks_of(job.key), name, placed)

    gradients = topology.gradients(root, limit, fits)
    best, tried = search(state, job.key, gradients, (place, took, rank), pending)
    if best is not None:
        return place(best, pending)
    # The trials' node-fit errors would name the last HyperNode's nodes only.
    last = next(iter(state.fit_errors.pop(job.key, {}).values()), "")
    state.job_errors[job.key] = f"no HyperNode of tier {limit} or lower has room for the gang" + (
        f" (in {tried}: {last})" if last and tried else ""
    )
    return None
