"""The allocate action: all-or-nothing gang placement.

Queues take turns lowest share first; each turn one job (job order) places pending tasks one
by one on its best feasible node through a `Statement` (`placement`): a node with idle room
takes it (Allocate); failing that, a node whose room is being released by evicted pods keeps it
waiting there (Pipeline). A job with a hard network topology is kept within one HyperNode
(`hyper_nodes`), a job with sub-groups is placed sub-group by sub-group (`subgroups`). The
statement commits once the gang is ready (minMember tasks hold nodes,
counting ones already bound or running, and every role has its minTaskMember); a gang that
would be ready once the released room is free keeps its places in this session without
binding anything; any other gang is discarded, so a gang that does not fit holds nothing. A
ready job with tasks left is put back and places one more task per turn, interleaved with the
other jobs. With task-topology on,
each job's buckets (`plugins.tasktopology`) order its tasks and add their node scores.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.actions import hyper_nodes, placement, subgroups
from scheduling.api import jobs
from scheduling.api.snapshot import (
    JobInfo,
    PodKey,
    TaskInfo,
    TaskStatus,
)
from scheduling.framework import ordering, pipelining
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.framework.tiers import Point
from scheduling.plugins import tasktopology

# The pipelining vote allocate asks at HEAD: SubJobPipelined for a job placed anywhere,
# JobPipelined for one within a network topology or with sub-groups (`pipelining`).
_PIPELINED_AT: Final = {False: Point.SUB_JOB_PIPELINED, True: Point.JOB_PIPELINED}


def _candidates(state: SessionState, config: SessionConfig) -> dict[QueueName, list[JobKey]]:
    """Jobs to try by queue: admitted and valid (pending ones are promoted without enqueue)."""
    by_queue: dict[QueueName, list[JobKey]] = {}
    for key, job in sorted(state.jobs.items()):
        if job.queue in state.refused:
            continue  # never placed, never admitted on the way: `job_errors` says why
        if job.is_pending:
            if Action.ENQUEUE in config.actions:
                continue
            state.set_phase(key, PodGroupPhase.INQUEUE)
        if key in state.invalid:
            continue
        if not any(_placeable(t) for t in state.tasks_of(key)):
            continue  # nothing to place: Volcano's empty worksheet, not tried
        topology = state.snapshot.topology
        if job.network_topology is not None and not topology.ready:
            state.job_errors[key] = f"HyperNodes are not ready for scheduling: {topology.problem}"
            continue
        by_queue.setdefault(job.queue, []).append(key)
    return by_queue


def _placeable(task: TaskInfo) -> bool:
    """A task allocate places: pending and asking for room (backfill takes best-effort ones)."""
    return task.status is TaskStatus.PENDING and not task.best_effort


def _pending(
    state: SessionState, key: JobKey, buckets: tasktopology.JobBuckets | None
) -> deque[PodKey]:
    tasks = [t for t in state.tasks_of(key) if _placeable(t)]
    tasks.sort(key=lambda t: ordering.job_task_order(state, t, buckets))
    return deque(t.key for t in tasks)


def _buckets(
    state: SessionState, config: SessionConfig, keys: list[JobKey]
) -> dict[JobKey, tasktopology.JobBuckets]:
    """task-topology's buckets of the jobs allocate tries, built before any task is placed."""
    on = config.scoring.task_topology or "task-topology" in config.speakers(Point.TASK_ORDER)
    built = {k: tasktopology.build(state.jobs[k], state.tasks_of(k)) for k in keys} if on else {}
    return {key: b for key, b in built.items() if b is not None}


def _placer(
    state: SessionState,
    config: SessionConfig,
    job: JobInfo,
    buckets: tasktopology.JobBuckets | None,
) -> hyper_nodes.Place:
    """How the job's tasks are placed within a HyperNode: as one gang, or sub-group by
    sub-group (`subgroups`)."""
    if job.sub_groups:
        return lambda name, pending: subgroups.allocate_sub_groups(
            state, config, job, pending, name, buckets
        )
    topology = state.snapshot.topology

    def place(name: str | None, pending: deque[PodKey]) -> Statement:
        within = None if name is None else hyper_nodes.nodes_of(topology, name)
        return placement.allocate_job(state, config, job, pending, within, buckets)

    return place


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
        place = _placer(state, config, job, buckets.get(key))
        if limit is None:
            statement: Statement | None = place(None, pending[key])
        else:
            statement = hyper_nodes.within_topology(state, config, job, pending[key], limit, place)
        if statement is None:
            continue
        tasks = state.tasks_of(key)
        if jobs.is_ready(job, tasks):
            statement.commit()
            if pending[key]:
                waiting.push(key)
        elif not pipelining.pipelined(
            state, job, _PIPELINED_AT[limit is not None or bool(job.sub_groups)]
        ):
            statement.discard()
        # A pipelined gang is neither committed nor discarded (HEAD): it keeps its nodes in
        # this session, so reclaim sees it is not starving and evicts nobody else for it,
        # and it is placed for real in a later session, once the released room is free.
