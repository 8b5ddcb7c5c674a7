"""Job-level counters and gang predicates over a job's current tasks.

Functions of (job, tasks) rather than properties, because a session changes task statuses as
it goes and asks again after every placement; they read only statuses and requests, so the
same call answers for the snapshot and for the session's working copy. Role minima
(`minTaskMember`) are skipped when minMember is below their sum, as Volcano does. A job with
sub-groups (`scheduling.api.subgroups`) is ready or pipelined only once every policy has its
minimum of whole sub-groups too, and valid only while it has that many sub-groups at all.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

from models.scheduling import PodGroupPhase
from scheduling.api.snapshot import ALLOCATED_CLASS, JobInfo, TaskInfo, TaskStatus
from scheduling.api.subgroups import DEFAULT, GroupKey, SubGroupRule, group_of, size_of
from scheduling.api.vectors import EMPTY, Resources, total

NOT_ENOUGH_TASKS: Final = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK: Final = "NotEnoughPodsOfTask"
_READY: Final = ALLOCATED_CLASS | {TaskStatus.SUCCEEDED}
_VALID: Final = _READY | {TaskStatus.PIPELINED, TaskStatus.PENDING}
_PIPELINED: Final = _READY | {TaskStatus.PIPELINED}


def _pending_best_effort(task: TaskInfo) -> bool:
    return task.status is TaskStatus.PENDING and task.best_effort


def ready_task_num(tasks: Iterable[TaskInfo]) -> int:
    """Bound + Binding + Running + Allocated + Succeeded."""
    return sum(1 for t in tasks if t.status in _READY)


def waiting_task_num(tasks: Iterable[TaskInfo]) -> int:
    """Pipelined tasks: a node is chosen, waiting for room being released."""
    return sum(1 for t in tasks if t.status is TaskStatus.PIPELINED)


def valid_task_num(tasks: Iterable[TaskInfo]) -> int:
    return sum(1 for t in tasks if t.status in _VALID)


def pending_best_effort_num(tasks: Iterable[TaskInfo]) -> int:
    return sum(1 for t in tasks if _pending_best_effort(t))


def allocated(tasks: Iterable[TaskInfo]) -> Resources:
    """Requests of the Allocated-class tasks: what the job holds on nodes."""
    return total(t.request for t in tasks if t.status in ALLOCATED_CLASS)


def _roles_checked(job: JobInfo) -> bool:
    return job.min_member >= job.min_task_member_total


def roles_ready(tasks: Iterable[TaskInfo]) -> Counter[str]:
    """Per role: ready tasks plus pending best-effort ones (getJobAllocatedRoles)."""
    return Counter(t.role for t in tasks if t.status in _READY or _pending_best_effort(t))


def check_task_ready(job: JobInfo, tasks: Sequence[TaskInfo]) -> bool:
    if not _roles_checked(job):
        return True
    ready = roles_ready(tasks)
    return all(ready[role] >= need for role, need in job.min_task_member.items())


def is_ready(job: JobInfo, tasks: Sequence[TaskInfo]) -> bool:
    """The gang's JobReady: enough tasks hold a node, and every role has its minimum."""
    enough = ready_task_num(tasks) + pending_best_effort_num(tasks) >= job.min_member
    return enough and check_task_ready(job, tasks) and _whole(job.sub_groups, tasks, False)


def check_task_pipelined(job: JobInfo, tasks: Sequence[TaskInfo]) -> bool:
    """Every role has its minimum counting pipelined tasks too (CheckTaskPipelined)."""
    if not _roles_checked(job):
        return True
    held = Counter(t.role for t in tasks if t.status in _PIPELINED or _pending_best_effort(t))
    return all(held[role] >= need for role, need in job.min_task_member.items())


def is_pipelined(job: JobInfo, tasks: Sequence[TaskInfo]) -> bool:
    """The gang's JobPipelined: ready once the room being released is free.

    A gang that is pipelined holds its nodes in the session (allocate keeps it, reclaim and
    preempt commit their evictions for it), but nothing is bound until the room is free.
    """
    waiting = waiting_task_num(tasks) + ready_task_num(tasks) + pending_best_effort_num(tasks)
    if waiting < job.min_member or not check_task_pipelined(job, tasks):
        return False
    return _whole(job.sub_groups, tasks, True)


def is_starving(job: JobInfo, tasks: Sequence[TaskInfo]) -> bool:
    """JobStarving of the default tier 1 (priority and gang, both must hold).

    Fewer tasks hold or wait for a node than the job has (priority) and than its gang needs
    (gang): only such a job may reclaim or preempt room from others.
    """
    held = ready_task_num(tasks) + waiting_task_num(tasks)
    return held < len(tasks) and held < job.min_member


def validity(job: JobInfo, tasks: Sequence[TaskInfo]) -> tuple[str, str] | None:
    """The gang's JobValid: (reason, message) when the job can never be ready; None: valid."""
    if _roles_checked(job):
        valid = Counter(t.role for t in tasks if t.status in _VALID)
        for role, need in sorted(job.min_task_member.items()):
            if need and valid[role] < need:
                return NOT_ENOUGH_PODS_OF_TASK, (
                    f"Not enough valid pods of each task for gang-scheduling, "
                    f"task {role!r}: valid {valid[role]}, min {need}"
                )
    if (short := _short_policy(job.sub_groups, tasks)) is not None:
        return NOT_ENOUGH_PODS_OF_TASK, short
    count = valid_task_num(tasks)
    if count < job.min_member:
        return NOT_ENOUGH_TASKS, (
            f"Not enough valid tasks for gang-scheduling, valid: {count}, min: {job.min_member}"
        )
    return None


def need_continue_allocating(
    job: JobInfo, tasks: Sequence[TaskInfo], failed_roles: Iterable[str]
) -> bool:
    """After a task found no node: can the gang still become ready this session? (HEAD)."""
    if job.min_member == len(tasks):
        return False
    failed = set(failed_roles)
    if not _roles_checked(job):
        left = sum(1 for t in tasks if t.status is TaskStatus.PENDING and t.role not in failed)
        return ready_task_num(tasks) + left >= job.min_member
    ready = roles_ready(tasks)
    return all(ready[role] >= job.min_task_member.get(role, 0) for role in sorted(failed))


def inqueue(job: JobInfo, tasks: Sequence[TaskInfo]) -> Resources:
    """What an admitted job reserves beyond what it holds (overcommit and proportion).

    An Inqueue job reserves its minResources less its gated pods; a Running job that already
    holds minMember tasks reserves the part of minResources it has not allocated yet.
    """
    if job.min_resources is None:
        return EMPTY
    if job.phase is PodGroupPhase.INQUEUE:
        gated = total(t.request for t in tasks if t.gated and t.status is TaskStatus.PENDING)
        return job.min_resources.exceeded_part(gated)
    held = sum(1 for t in tasks if t.status in ALLOCATED_CLASS)
    if job.phase is PodGroupPhase.RUNNING and held >= job.min_member:
        return job.min_resources.exceeded_part(allocated(tasks))
    return EMPTY


def elastic(job: JobInfo, tasks: Sequence[TaskInfo]) -> Resources:
    """What the job holds beyond its minResources: lendable, hence not counted at enqueue."""
    return allocated(tasks).exceeded_part(job.min_resources or EMPTY)


# Sub-groups (subGroupPolicy)


def grouped(
    policies: Sequence[SubGroupRule], tasks: Iterable[TaskInfo]
) -> dict[GroupKey, list[TaskInfo]]:
    """The job's tasks by sub-group, each list in the order given."""
    out: dict[GroupKey, list[TaskInfo]] = {}
    for task in tasks:
        out.setdefault(group_of(policies, task.labels), []).append(task)
    return out


def _held(tasks: Iterable[TaskInfo], pipelined: bool) -> int:
    """Ready pods plus pending best-effort ones, and pipelined ones if asked."""
    return sum(
        1
        for t in tasks
        if t.status in _READY
        or (pipelined and t.status is TaskStatus.PIPELINED)
        or (t.status is TaskStatus.PENDING and t.best_effort)
    )


def group_ready(
    policies: Sequence[SubGroupRule], group: GroupKey, tasks: Iterable[TaskInfo]
) -> bool:
    """SubJobInfo.IsReady over the group's own tasks."""
    return _held(tasks, pipelined=False) >= size_of(policies, group)


def group_pipelined(
    policies: Sequence[SubGroupRule], group: GroupKey, tasks: Iterable[TaskInfo]
) -> bool:
    """SubJobInfo.IsPipelined over the group's own tasks."""
    return _held(tasks, pipelined=True) >= size_of(policies, group)


def _whole(policies: Sequence[SubGroupRule], tasks: Sequence[TaskInfo], pipelined: bool) -> bool:
    """CheckSubJobReady (CheckSubJobPipelined): every policy has its minimum of sub-groups
    whose own tasks hold (or wait for) their size."""
    if not policies:
        return True
    by_group = grouped(policies, tasks)
    whole = Counter(
        group[0]
        for group, members in by_group.items()
        if group != DEFAULT and _held(members, pipelined) >= size_of(policies, group)
    )
    return all(whole[rule.name] >= rule.minimum for rule in policies)


def _short_policy(policies: Sequence[SubGroupRule], tasks: Sequence[TaskInfo]) -> str | None:
    """CheckSubJobValid: the first policy with fewer sub-groups than its minimum (a message);
    None: every policy has enough."""
    if not policies:
        return None
    count = Counter(group[0] for group in grouped(policies, tasks) if group != DEFAULT)
    for rule in policies:
        if count[rule.name] < rule.minimum:
            return (
                f"Not enough valid subGroups of each task for gang-scheduling, subGroupPolicy "
                f"{rule.name!r}: {count[rule.name]} sub-groups, min {rule.minimum}"
            )
    return None
