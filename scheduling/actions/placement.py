"""Placing one gang's tasks on nodes: the inner loop of Volcano's allocate.

Tasks are taken in order; each goes to its best feasible node, a node with idle room first
(Allocate) and only failing that one whose room is being released (Pipeline), until the gang is
ready or the tasks run out; a task no node takes is a fit error and, unless the gang can
still be ready without it, ends the attempt. The gang is the whole job, or one of its
sub-groups (`scheduling.api.subgroups`), which is ready with its own size placed. Node search
is exhaustive and in name order, and ties go to the first name, which keeps the session
reproducible where Volcano samples and randomises.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from models.keys import JobKey, QueueName
from models.scheduling import QueueState
from scheduling.actions import hyper_nodes
from scheduling.api import jobs
from scheduling.api.snapshot import JobInfo, NodeName, PodKey, TaskInfo, TaskStatus
from scheduling.api.subgroups import GroupKey, group_of, rule_of, size_of
from scheduling.api.topology import JobTopology
from scheduling.api.vectors import EMPTY, Number
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.plugins import extender, predicates, scoring, tasktopology


def _failed_roles(state: SessionState, key: JobKey) -> dict[str, str]:
    """Roles with a task that found no node this session, and that task's fit error."""
    failed: dict[str, str] = {}
    for pod, message in state.fit_errors.get(key, {}).items():
        failed.setdefault(state.tasks[pod].role, message)
    return failed


def _queue_note(state: SessionState, task: TaskInfo, queue: QueueName) -> str:
    """Why a task its queue may not take waits: the queue is refused (a NamespaceQueue's
    reason), not Open, no node fits, or share."""
    if (refused := state.refused.get(queue)) is not None:
        return refused
    if (phase := state.queues[queue].state) is not QueueState.OPEN:
        return f"queue {queue} is {phase}"
    reasons = [
        predicates.check(task, state.nodes[name], pods=state.pods, devices=state.devices)
        for name in sorted(state.nodes)
    ]
    if all(reasons):
        return state.devices.explained(task.key, predicates.fit_error(len(reasons), reasons))
    return state.queue_full(queue, task.request)


def allocate_job(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    pending: deque[PodKey],
    within: Sequence[NodeName] | None = None,  # None: every node
    buckets: tasktopology.JobBuckets | None = None,  # None: task-topology leaves it alone
    group: GroupKey | None = None,  # None: the whole job
) -> Statement:
    """Place the job's pending tasks until it (its sub-group `group`) is ready or they run
    out (allocateResourcesForTasks)."""
    statement = Statement(state)
    queue = state.queues[job.queue]
    nodes = sorted(state.nodes) if within is None else list(within)
    near = hyper_nodes.topology_scores(
        state, config, _wanted(job, group), members(state, job, group)
    )
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
            if _keep_going(state, job, group):
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
        if ready(state, job, group):
            break
    return statement


def members(state: SessionState, job: JobInfo, group: GroupKey | None) -> list[TaskInfo]:
    """The tasks of the job, or of its sub-group `group`, as they are now."""
    tasks = state.tasks_of(job.key)
    if group is None:
        return list(tasks)
    return [t for t in tasks if group_of(job.sub_groups, t.labels) == group]


def _wanted(job: JobInfo, group: GroupKey | None) -> JobTopology | None:
    """The network topology the tasks keep to: their sub-group's, else the job's (the default
    group inherits the job's, as Volcano's default SubJob does)."""
    rule = rule_of(job.sub_groups, group) if group is not None else None
    return rule.topology if rule is not None else job.network_topology


def ready(state: SessionState, job: JobInfo, group: GroupKey | None) -> bool:
    """JobReady, or SubJobReady for a sub-group."""
    if group is None:
        return state.is_ready(job)
    return jobs.group_ready(job.sub_groups, group, members(state, job, group))


def pipelined(state: SessionState, job: JobInfo, group: GroupKey) -> bool:
    """SubJobPipelined: the sub-group's size held counting room being released."""
    return jobs.group_pipelined(job.sub_groups, group, members(state, job, group))


def _keep_going(state: SessionState, job: JobInfo, group: GroupKey | None) -> bool:
    """After a task found no node: can the gang still be ready (NeedContinueAllocating)? A
    sub-group that needs every one of its tasks cannot; any other goes on."""
    tasks = state.tasks_of(job.key)
    if group is None:
        return jobs.need_continue_allocating(job, tasks, _failed_roles(state, job.key))
    if job.min_member == len(tasks):
        return False
    return size_of(job.sub_groups, group) < len(members(state, job, group))
