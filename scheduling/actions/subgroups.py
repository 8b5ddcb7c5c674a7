"""Allocating a job with sub-groups (`subGroupPolicy`): each sub-group a gang of its own.

Volcano's allocateForJob over SubJobs. Within the HyperNode the job is tried in (every node
for a job without a network topology), the sub-groups with pending tasks are taken in order:
those the job still needs to reach each policy's minSubGroups first, then by their highest
task priority, unready before ready (the priority and gang plugins' SubJobOrder), then by
partition index and name. Each is placed whole or not at all (ready, or pipelined on room
being released): one with a hard network topology in the best HyperNode of the lowest tier
within its limit that holds it (`hyper_nodes.search`, the job's own search), any other
anywhere in the job's HyperNode. A sub-group that does not fit is dropped for this session;
one placed with tasks left goes back in line, and the job stops as soon as it is ready.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from fractions import Fraction

from scheduling.actions import hyper_nodes, placement
from scheduling.api import jobs
from scheduling.api.snapshot import JobInfo, PodKey
from scheduling.api.subgroups import DEFAULT, GroupKey, group_of, rule_of
from scheduling.api.topology import CLUSTER_TOP, Topology
from scheduling.api.vectors import total
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.plugins import tasktopology

_Order = tuple[bool, int, bool, int, GroupKey]


def allocate_sub_groups(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    pending: deque[PodKey],
    hyper_node: str | None,  # None: every node
    buckets: tasktopology.JobBuckets | None = None,  # None: task-topology leaves it alone
) -> Statement:
    """Place the job's sub-groups one by one until it is ready; `pending` keeps the tasks of
    the sub-groups still in line, in their order."""
    statement = Statement(state)
    position = {key: i for i, key in enumerate(pending)}
    queues: dict[GroupKey, deque[PodKey]] = {}
    for key in pending:
        queues.setdefault(group_of(job.sub_groups, state.tasks[key].labels), deque()).append(key)
    required = _required(state, job, list(queues))
    line = list(queues)
    while line:
        line.sort(key=lambda g: _order(state, job, g, required))
        group = line.pop(0)
        placed = _place_group(state, config, job, group, queues[group], hyper_node, buckets)
        if placed is None or not placed.placed:
            del queues[group]  # dropped for this session, as Volcano's worksheet drops it
            continue
        statement.merge(placed)
        if queues[group]:
            line.append(group)
        if state.is_ready(job):
            break
    pending.clear()
    pending.extend(sorted((k for q in queues.values() for k in q), key=position.__getitem__))
    return statement


def _order(state: SessionState, job: JobInfo, group: GroupKey, required: set[GroupKey]) -> _Order:
    members = placement.members(state, job, group)
    top = max((t.priority for t in members), default=0)
    values = group[1]
    index = int(values[0]) if values and values[0].isdigit() else 0
    return group not in required, -top, placement.ready(state, job, group), index, group


def _required(state: SessionState, job: JobInfo, groups: Sequence[GroupKey]) -> set[GroupKey]:
    """The smallest set of unready sub-groups that brings every policy to its minimum
    (organizeJobWorksheet's requireSubJobs)."""
    whole: Counter[str] = Counter()
    for group, members in jobs.grouped(job.sub_groups, state.tasks_of(job.key)).items():
        if group != DEFAULT and jobs.group_ready(job.sub_groups, group, members):
            whole[group[0]] += 1
    required: set[GroupKey] = set()
    unready = [g for g in groups if g != DEFAULT and not placement.ready(state, job, g)]
    for group in sorted(unready, key=lambda g: _order(state, job, g, set())):
        rule = rule_of(job.sub_groups, group)
        if rule is not None and whole[rule.name] < rule.minimum:
            required.add(group)
            whole[rule.name] += 1
    return required


def _search_root(topology: Topology, within: str, limit: int, allocated: str) -> str | None:
    """Where a sub-group's search starts: inside the job's HyperNode `within` and, for one
    already holding nodes, inside the highest HyperNode its limit allows (getSearchRoot);
    None: the two do not meet."""
    if not allocated:
        return within
    allowed = topology.search_root(limit, allocated)
    if allowed is None:
        return None
    common = topology.lca(within, allowed)
    if common == allowed:
        return within
    return allowed if common == within else None


def _place_group(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    group: GroupKey,
    tasks: deque[PodKey],
    hyper_node: str | None,
    buckets: tasktopology.JobBuckets | None,
) -> Statement | None:
    """Place one sub-group whole (allocateForSubJob); None: it does not fit."""
    topology = state.snapshot.topology

    def place(name: str | None, queue: deque[PodKey]) -> Statement:
        within = None if name is None else hyper_nodes.nodes_of(topology, name)
        return placement.allocate_job(state, config, job, queue, within, buckets, group)

    def took() -> bool:
        return placement.ready(state, job, group) or placement.pipelined(state, job, group)

    rule = rule_of(job.sub_groups, group)
    wanted = rule.topology if rule is not None else None
    settings = config.network_topology
    limit = topology.tier_limit(wanted) if wanted is not None and wanted.hard else None
    if limit is None or settings is None:
        trial = place(hyper_node, tasks)
        if took():
            return trial
        trial.discard()
        return None
    members = placement.members(state, job, group)
    allocated = topology.lowest_holding(hyper_nodes.held_nodes(members))
    root = _search_root(topology, hyper_node or CLUSTER_TOP, limit, allocated)
    if root is None:
        return None
    need = total(state.tasks[k].request for k in tasks)
    fits = (
        None
        if allocated
        else {
            name: hyper_nodes.has_room(state, need, hyper_nodes.nodes_of(topology, name))
            for name in topology.by_name
        }
    )

    def rank(name: str, placed: Sequence[PodKey]) -> tuple[Fraction, Fraction]:
        now = placement.members(state, job, group)
        return hyper_nodes.hyper_node_rank(state, settings, now, name, placed)

    gradients = topology.gradients(root, limit, fits)
    best, _ = hyper_nodes.search(state, job.key, gradients, (place, took, rank), tasks)
    if best is None:
        state.job_errors.setdefault(
            job.key,
            f"no HyperNode of tier {limit} or lower has room for sub-group "
            f"{group[0]} {'/'.join(group[1])}",
        )
        return None
    return place(best, tasks)
