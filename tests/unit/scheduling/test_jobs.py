"""Job-level counters and gang predicates (C6): readiness, validity, keep-going."""

from __future__ import annotations

import pytest

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api import jobs
from scheduling.api.snapshot import JobInfo, PodKey, TaskInfo, TaskStatus
from scheduling.api.vectors import EMPTY, Resources

S = TaskStatus
ONE = Resources.of(1000, 0, 1)
BEST_EFFORT = Resources.of(0, 0, 1)


def job(min_member: int, roles: dict[str, int] | None = None, **fields: object) -> JobInfo:
    return JobInfo.model_validate(
        {
            "key": JobKey("ns/j"),
            "queue": QueueName("q"),
            "min_member": min_member,
            "min_task_member": roles or {},
            **fields,
        }
    )


def tasks(*specs: tuple[TaskStatus, str] | TaskStatus, request: Resources = ONE) -> list[TaskInfo]:
    out = []
    for i, spec in enumerate(specs):
        status, role = spec if isinstance(spec, tuple) else (spec, "")
        out.append(
            TaskInfo(
                key=PodKey(f"ns/t{i}"),
                job=JobKey("ns/j"),
                role=role,
                status=status,
                request=request,
            )
        )
    return out


def test_counters_count_the_right_statuses() -> None:
    every = tasks(*TaskStatus)
    assert jobs.ready_task_num(every) == 5  # Allocated Binding Bound Running Succeeded
    assert jobs.valid_task_num(every) == 7  # ... plus Pipelined and Pending
    assert jobs.pending_best_effort_num(tasks(S.PENDING, S.RUNNING, request=BEST_EFFORT)) == 1


READY = [
    pytest.param(job(3), tasks(S.RUNNING, S.ALLOCATED, S.BOUND), True, id="min-met"),
    pytest.param(job(3), tasks(S.RUNNING, S.ALLOCATED, S.PENDING), False, id="one-short"),
    pytest.param(job(3), tasks(S.RUNNING, S.BINDING, S.SUCCEEDED), True, id="succeeded-counts"),
    pytest.param(job(2), tasks(S.PIPELINED, S.RUNNING), False, id="pipelined-not-ready"),
    pytest.param(
        job(3, {"ps": 1, "worker": 2}),
        tasks(
            (S.RUNNING, "worker"), (S.RUNNING, "worker"), (S.RUNNING, "worker"), (S.PENDING, "ps")
        ),
        False,
        id="role-minimum-unmet",
    ),
    pytest.param(
        job(3, {"ps": 1, "worker": 2}),
        tasks((S.RUNNING, "worker"), (S.RUNNING, "worker"), (S.ALLOCATED, "ps")),
        True,
        id="role-minima-met",
    ),
    pytest.param(
        job(2, {"ps": 1, "worker": 2}),
        tasks((S.RUNNING, "worker"), (S.RUNNING, "worker"), (S.PENDING, "ps")),
        True,
        id="roles-skipped-when-min-below-their-sum",
    ),
]


@pytest.mark.parametrize(("gang", "members", "expected"), READY)
def test_is_ready(gang: JobInfo, members: list[TaskInfo], expected: bool) -> None:
    assert jobs.is_ready(gang, members) is expected


def test_pending_best_effort_tasks_count_as_ready() -> None:
    members = tasks(S.RUNNING) + tasks(S.PENDING, S.PENDING, request=BEST_EFFORT)
    assert jobs.is_ready(job(3), members)


VALIDITY = [
    pytest.param(job(2), tasks(S.PENDING, S.RUNNING), None, id="valid"),
    pytest.param(
        job(3),
        tasks(S.PENDING, S.FAILED, S.UNKNOWN),
        (jobs.NOT_ENOUGH_TASKS, "Not enough valid tasks for gang-scheduling, valid: 1, min: 3"),
        id="not-enough-tasks",
    ),
    pytest.param(
        job(2, {"ps": 1}),
        tasks((S.PENDING, "worker"), (S.PENDING, "worker")),
        (
            jobs.NOT_ENOUGH_PODS_OF_TASK,
            "Not enough valid pods of each task for gang-scheduling, task 'ps': valid 0, min 1",
        ),
        id="role-without-pods",
    ),
]


@pytest.mark.parametrize(("gang", "members", "expected"), VALIDITY)
def test_validity(gang: JobInfo, members: list[TaskInfo], expected: tuple[str, str] | None) -> None:
    assert jobs.validity(gang, members) == expected


CONTINUE = [
    pytest.param(job(2), tasks(S.PENDING, S.PENDING), [""], False, id="all-tasks-needed"),
    pytest.param(job(3), tasks(*[S.PENDING] * 4), [""], True, id="spare-tasks-no-roles"),
    pytest.param(
        job(3, {"ps": 1, "worker": 2}),
        tasks(
            (S.PENDING, "ps"), (S.ALLOCATED, "worker"), (S.PENDING, "worker"), (S.PENDING, "worker")
        ),
        ["worker"],
        False,
        id="failed-role-below-its-minimum",
    ),
    pytest.param(
        job(3, {"ps": 1, "worker": 2}),
        tasks(
            (S.PENDING, "ps"),
            (S.ALLOCATED, "worker"),
            (S.ALLOCATED, "worker"),
            (S.PENDING, "worker"),
        ),
        ["worker"],
        True,
        id="failed-role-already-at-minimum",
    ),
    pytest.param(
        job(2, {"ps": 2, "worker": 2}),
        tasks((S.PENDING, "ps"), (S.PENDING, "ps"), (S.PENDING, "worker"), (S.PENDING, "worker")),
        ["worker"],
        True,
        id="min-below-role-sum-other-roles-suffice",
    ),
    pytest.param(
        job(3, {"ps": 2, "worker": 2}),
        tasks((S.PENDING, "ps"), (S.PENDING, "ps"), (S.PENDING, "worker"), (S.PENDING, "worker")),
        ["worker"],
        False,
        id="min-below-role-sum-too-few-left",
    ),
]


@pytest.mark.parametrize(("gang", "members", "failed", "expected"), CONTINUE)
def test_need_continue_allocating(
    gang: JobInfo, members: list[TaskInfo], failed: list[str], expected: bool
) -> None:
    assert jobs.need_continue_allocating(gang, members, failed) is expected


THREE = Resources.of(3000)
INQUEUE = [
    pytest.param(
        job(1, phase=PodGroupPhase.INQUEUE), tasks(S.PENDING), EMPTY, id="no-min-resources"
    ),
    pytest.param(
        job(1, phase=PodGroupPhase.INQUEUE, min_resources=THREE),
        tasks(S.PENDING),
        THREE,
        id="inqueue-reserves-min",
    ),
    pytest.param(
        job(2, phase=PodGroupPhase.RUNNING, min_resources=THREE),
        tasks(S.RUNNING, S.RUNNING, S.PENDING),
        Resources.of(1000, 0, 0),
        id="running-reserves-the-rest",
    ),
    pytest.param(
        job(3, phase=PodGroupPhase.RUNNING, min_resources=THREE),
        tasks(S.RUNNING, S.PENDING),
        EMPTY,
        id="running-below-min-reserves-nothing",
    ),
    pytest.param(
        job(1, phase=PodGroupPhase.PENDING, min_resources=THREE),
        tasks(),
        EMPTY,
        id="pending-reserves-nothing",
    ),
]


@pytest.mark.parametrize(("gang", "members", "expected"), INQUEUE)
def test_inqueue(gang: JobInfo, members: list[TaskInfo], expected: Resources) -> None:
    assert jobs.inqueue(gang, members) == expected


def test_inqueue_deducts_gated_pods() -> None:
    gated = [t.model_copy(update={"gated": True}) for t in tasks(S.PENDING)]
    gang = job(1, phase=PodGroupPhase.INQUEUE, min_resources=THREE)
    assert jobs.inqueue(gang, gated) == Resources.of(2000)


def test_elastic_is_allocation_beyond_min_resources() -> None:
    members = tasks(S.RUNNING, S.RUNNING, S.RUNNING, S.RUNNING)
    assert jobs.elastic(job(1, min_resources=THREE), members).milli_cpu == 1000
    assert jobs.elastic(job(1), members).milli_cpu == 4000
