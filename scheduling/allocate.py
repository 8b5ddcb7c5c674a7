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
keeps the session reproducible where Volcano samples and randomises.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import deque

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase, QueueState
from scheduling import jobs, ordering, predicates, scoring
from scheduling.config import Action, SessionConfig
from scheduling.resources import EMPTY
from scheduling.snapshot import JobInfo, PodKey, TaskInfo, TaskStatus
from scheduling.state import SessionState
from scheduling.statement import Statement


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
        by_queue.setdefault(job.queue, []).append(key)
    return by_queue


def _pending(state: SessionState, key: JobKey) -> deque[PodKey]:
    tasks = [t for t in state.tasks_of(key) if t.status is TaskStatus.PENDING and not t.best_effort]
    return deque(t.key for t in sorted(tasks, key=ordering.task_order))


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
        predicates.check(task, state.nodes[name], pods=state.pods) for name in sorted(state.nodes)
    ]
    if all(reasons):
        return predicates.fit_error(len(reasons), reasons)
    return state.queue_full(queue, task.request)


def allocate_job(
    state: SessionState, config: SessionConfig, job: JobInfo, pending: deque[PodKey]
) -> Statement:
    """Place the job's pending tasks until it is ready or they run out (allocateForJob)."""
    statement = Statement(state)
    queue = state.queues[job.queue]
    nodes = sorted(state.nodes)
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
            name: predicates.check(task, state.nodes[name], pods=state.pods) for name in nodes
        }
        feasible = [state.nodes[name] for name in nodes if not reasons[name]]
        if not feasible:
            message = predicates.fit_error(len(nodes), reasons.values())
            state.record_fit_error(job.key, task.key, message)
            tasks = state.tasks_of(job.key)
            if jobs.need_continue_allocating(job, tasks, _failed_roles(state, job.key)):
                continue
            break
        # Nodes with idle room first; only if none, one where room is being released. Without
        # releasing room, future idle is at most idle: a feasible node fits idle room too.
        idle = [n for n in feasible if n.releasing == EMPTY or predicates.fits_idle(task, n)]
        candidates = idle or feasible
        best = scoring.best_node(task, candidates, config.scoring, pods=state.pods).name
        if idle:
            statement.allocate(task.key, best)
        else:
            statement.pipeline(task.key, best)
        if jobs.is_ready(job, state.tasks_of(job.key)):
            break
    return statement


def allocate(state: SessionState, config: SessionConfig) -> None:
    """Volcano's allocate main loop over queues and jobs."""
    candidates = _candidates(state, config)
    pending = {key: _pending(state, key) for keys in candidates.values() for key in keys}
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
        statement = allocate_job(state, config, job, pending[key])
        tasks = state.tasks_of(key)
        if jobs.is_ready(job, tasks):
            statement.commit()
            if pending[key]:
                waiting.push(key)
        elif not jobs.is_pipelined(job, tasks):
            statement.discard()
        # A pipelined gang is neither committed nor discarded (HEAD): it keeps its nodes in
        # this session, so reclaim sees it is not starving and evicts nobody else for it,
        # and it is placed for real in a later session, once the released room is free.
