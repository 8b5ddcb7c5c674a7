"""Session close: PodGroup phases and conditions, pod conditions, queue usage.

Turns the session books into the `SessionResult` the shell writes back. The phase rules are
Volcano's jobStatus; the gang's condition says either that the gang is ready or how many
tasks are unschedulable and the first node-fit error behind it, which is the "why not" a user
reads on the PodGroup. Every collection is produced in key order.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

from models.keys import QueueName
from models.scheduling import PodGroupPhase
from scheduling.api import jobs
from scheduling.api.result import (
    NOT_ENOUGH_RESOURCES,
    SCHEDULED_REASON,
    ConditionType,
    JobCondition,
    PhaseUpdate,
    Placement,
    PodCondition,
    PodReason,
    SessionResult,
)
from scheduling.api.snapshot import (
    ALLOCATED_CLASS,
    COMPLETED,
    SCHEDULED,
    JobInfo,
    TaskInfo,
    TaskStatus,
)
from scheduling.api.vectors import EMPTY, Resources, total
from scheduling.framework import ordering
from scheduling.framework.state import SessionState

ALL_NODES_UNAVAILABLE: Final = "all nodes are unavailable"  # Volcano's default reason


def _task_error(state: SessionState, task: TaskInfo) -> str | None:
    """The task's own reason for staying pending; None: it has none this session."""
    return state.fit_errors.get(task.job, {}).get(task.key) or state.notes.get(task.key)


def _detail(state: SessionState, job: JobInfo, tasks: Sequence[TaskInfo]) -> str:
    """The first task's node-fit error, else why the job was not tried, else the histogram."""
    for task in sorted(tasks, key=ordering.task_order):
        found = _task_error(state, task)
        if found is not None:
            return found
    if job.key in state.job_errors:
        return state.job_errors[job.key]
    histogram = Counter(str(t.status) for t in tasks)
    histogram["minAvailable"] = job.min_member
    counts = ", ".join(sorted(f"{n} {s}" for s, n in histogram.items()))
    return f"pod group is not ready, {counts}"


def _unschedulable(job: JobInfo, reason: str, message: str) -> JobCondition:
    return JobCondition(
        job=job.key, type=ConditionType.UNSCHEDULABLE, reason=reason, message=message
    )


def condition(state: SessionState, job: JobInfo) -> JobCondition | None:
    """The gang plugin's condition at close; None: nothing to say this session.

    A job without tasks only hears why enqueue refused it (its pods do not exist yet); a job
    kept short only by pods being deleted gets no verdict, so a restart does not read as
    Unknown; an invalid gang says which tasks are missing (NotEnoughTasks/PodsOfTask).
    """
    tasks = state.tasks_of(job.key)
    if not tasks:
        refusal = state.job_errors.get(job.key)
        return None if refusal is None else _unschedulable(job, NOT_ENOUGH_RESOURCES, refusal)
    if state.is_ready(job):
        return JobCondition(
            job=job.key, type=ConditionType.SCHEDULED, reason=SCHEDULED_REASON, message=""
        )
    ready = jobs.ready_task_num(tasks)
    releasing = sum(1 for t in tasks if t.status is TaskStatus.RELEASING and t.node_name)
    if ready + releasing >= job.min_member:
        return None
    if job.key in state.invalid:
        return _unschedulable(job, *state.invalid[job.key])
    almost = sum(1 for t in tasks if t.key in state.discarded)
    unready = job.min_member - (ready + almost)
    message = f"{unready}/{len(tasks)} tasks in gang unschedulable: {_detail(state, job, tasks)}"
    return _unschedulable(job, NOT_ENOUGH_RESOURCES, message)


def phase(job: JobInfo, tasks: Sequence[TaskInfo], unschedulable: bool) -> PodGroupPhase:
    """Volcano's jobStatus phase rule over the tasks' final statuses.

    A job without tasks keeps its phase: Volcano would call a minMember-0 PodGroup Completed
    before the job controller had created its pods.
    """
    if not tasks:
        return job.phase
    if unschedulable and any(t.status is TaskStatus.RUNNING for t in tasks):
        return PodGroupPhase.UNKNOWN
    scheduled = sum(
        1
        for t in tasks
        if t.status in SCHEDULED or (t.status is TaskStatus.RELEASING and t.node_name)
    )
    if scheduled >= job.min_member:
        done = sum(1 for t in tasks if t.status in COMPLETED)
        return PodGroupPhase.COMPLETED if done == scheduled else PodGroupPhase.RUNNING
    if job.phase is PodGroupPhase.INQUEUE:
        return PodGroupPhase.INQUEUE
    return PodGroupPhase.PENDING


def _pod_condition(state: SessionState, task: TaskInfo) -> PodCondition | None:
    """PodScheduled=False for a task left unplaced; None for the others."""
    if task.status is TaskStatus.PIPELINED:
        message = (
            f"Pod {task.key} can possibly be assigned to {task.node_name}, "
            "once resource is released and minAvailable is satisfied"
        )
        return PodCondition(
            pod=task.key,
            reason=PodReason.UNSCHEDULABLE,
            message=message,
            nominated_node=task.node_name or "",
        )
    node = task.node_name if task.status is TaskStatus.ALLOCATED else state.discarded.get(task.key)
    if node is not None:
        message = (
            f"Pod {task.key} can possibly be assigned to {node}, once minAvailable is satisfied"
        )
        return PodCondition(pod=task.key, reason=PodReason.SCHEDULABLE, message=message)
    if task.status is not TaskStatus.PENDING or task.gated:
        return None
    message = _task_error(state, task) or state.job_errors.get(task.job, ALL_NODES_UNAVAILABLE)
    return PodCondition(pod=task.key, reason=PodReason.UNSCHEDULABLE, message=message)


def _rolled_up(state: SessionState) -> dict[QueueName, Resources]:
    """Each queue's Allocated-class requests plus its descendants' (queue status.allocated)."""
    own: dict[QueueName, list[Resources]] = {}
    for task in state.tasks.values():
        if task.status in ALLOCATED_CLASS:
            own.setdefault(state.jobs[task.job].queue, []).append(task.request)
    usage = {name: EMPTY for name in state.queues}
    for queue, requests in own.items():
        held = total(requests)
        name: QueueName | None = queue  # None: climbed past root
        seen: set[QueueName] = set()
        while name is not None and name in usage and name not in seen:
            seen.add(name)
            usage[name] = usage[name].add(held)
            name = state.queues[name].parent
    return dict(sorted(usage.items()))


def close(state: SessionState) -> SessionResult:
    """CloseSession: conditions, phase changes, pod conditions and queue usage, by key."""
    conditions: list[JobCondition] = []
    updates: list[PhaseUpdate] = []
    before = {job.key: job.phase for job in state.snapshot.jobs}
    for key in sorted(state.jobs):
        job = state.jobs[key]
        found = condition(state, job)
        if found is not None:
            conditions.append(found)
        unschedulable = found is not None and found.type is ConditionType.UNSCHEDULABLE
        new = phase(job, state.tasks_of(key), unschedulable)
        old = before[key]
        if new is not old:
            updates.append(PhaseUpdate(job=key, old=old, new=new))
    pods = [_pod_condition(state, state.tasks[k]) for k in sorted(state.tasks)]
    placements = [
        Placement(pod=k, node=node, job=state.tasks[k].job, claims=state.devices.plans(k))
        for k in state.dispatched
        if (node := state.tasks[k].node_name) is not None
    ]
    return SessionResult(
        placements=tuple(placements),
        evictions=tuple(state.evictions),
        phase_updates=tuple(updates),
        conditions=tuple(conditions),
        pod_conditions=tuple(p for p in pods if p is not None),
        queue_allocated=_rolled_up(state),
    )
