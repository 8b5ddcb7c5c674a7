"""Session close: PodGroup phase (A4), gang conditions (C7.2), queue usage roll-up (C2)."""

from __future__ import annotations

import pytest

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.actions.registry import run_session
from scheduling.api.result import ConditionType, PhaseUpdate
from scheduling.api.snapshot import JobInfo, NodeName, PodKey, TaskInfo, TaskStatus
from scheduling.framework import status
from tests.unit.scheduling.builders import (
    gang,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    snapshot,
)

S, G = TaskStatus, PodGroupPhase


def job(min_member: int, phase: PodGroupPhase) -> JobInfo:
    return JobInfo(key=JobKey("ns/j"), queue=QueueName("q"), min_member=min_member, phase=phase)


def tasks(*statuses: TaskStatus) -> list[TaskInfo]:
    node = NodeName("n")
    return [
        TaskInfo(key=PodKey(f"ns/t{i}"), job=JobKey("ns/j"), status=s, node_name=node)
        for i, s in enumerate(statuses)
    ]


PHASES = [
    pytest.param(
        job(2, G.INQUEUE), tasks(S.RUNNING, S.BOUND), False, G.RUNNING, id="min-scheduled-running"
    ),
    pytest.param(
        job(2, G.RUNNING), tasks(S.SUCCEEDED, S.FAILED), False, G.COMPLETED, id="all-done-completed"
    ),
    pytest.param(
        job(2, G.RUNNING), tasks(S.SUCCEEDED, S.RUNNING), False, G.RUNNING, id="some-done-running"
    ),
    pytest.param(
        job(2, G.RUNNING),
        tasks(S.RUNNING, S.RUNNING),
        True,
        G.UNKNOWN,
        id="running-and-unschedulable",
    ),
    pytest.param(
        job(2, G.RUNNING),
        tasks(S.RUNNING, S.PENDING),
        False,
        G.PENDING,
        id="below-min-back-to-pending",
    ),
    pytest.param(
        job(2, G.INQUEUE),
        tasks(S.BINDING, S.BINDING),
        False,
        G.INQUEUE,
        id="just-placed-stays-inqueue",
    ),
    pytest.param(
        job(2, G.INQUEUE),
        tasks(S.RUNNING, S.RELEASING),
        False,
        G.RUNNING,
        id="releasing-on-node-counts",
    ),
    pytest.param(job(1, G.PENDING), tasks(S.PENDING), True, G.PENDING, id="pending-stays-pending"),
    pytest.param(job(0, G.INQUEUE), [], False, G.INQUEUE, id="no-tasks-keeps-phase"),
]


@pytest.mark.parametrize(("gang_", "members", "unschedulable", "expected"), PHASES)
def test_phase(
    gang_: JobInfo, members: list[TaskInfo], unschedulable: bool, expected: PodGroupPhase
) -> None:
    assert status.phase(gang_, members, unschedulable) is expected


def test_completed_pods_complete_the_group() -> None:
    group = make_podgroup("a", min_member=2, phase="Running")
    pods = [make_pod(f"a-worker-{i}", group="a").on("n0", "Succeeded").obj() for i in range(2)]
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, pods)]))
    assert result.phase_updates == (
        PhaseUpdate(job=JobKey("default/a"), old=G.RUNNING, new=G.COMPLETED),
    )


def test_running_gang_short_of_min_turns_unknown() -> None:
    group = make_podgroup("a", min_member=3, phase="Running")
    pods = [make_pod(f"a-worker-{i}", group="a").on("n0").obj() for i in range(2)]
    pods.append(make_pod("a-worker-2", group="a", cpu="64").obj())
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, pods)]))
    assert result.phase_updates == (
        PhaseUpdate(job=JobKey("default/a"), old=G.RUNNING, new=G.UNKNOWN),
    )
    assert result.why_not["default/a"] == (
        "1/3 tasks in gang unschedulable: 0/1 nodes are available: 1 Insufficient cpu"
    )


def test_releasing_pods_that_keep_the_gang_whole_give_no_verdict() -> None:
    group = make_podgroup("a", min_member=2, phase="Running")
    pods = [
        make_pod("a-worker-0", group="a").on("n0").obj(),
        make_pod("a-worker-1", group="a").on("n0").deleting().obj(),
    ]
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, pods)]))
    assert result.conditions == ()
    assert result.phase_updates == ()  # still Running: the deleting pod is on its node


def test_refused_group_without_pods_gets_the_reason() -> None:
    group = make_podgroup("a", phase="Pending", minResources={"cpu": "100"})
    quiet = make_podgroup("b", phase="Pending")
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, []), (quiet, [])]))
    assert [(c.job, c.type, c.message) for c in result.conditions] == [
        ("default/a", ConditionType.UNSCHEDULABLE, "resource in cluster is overused")
    ]
    assert result.phase_updates == (
        PhaseUpdate(job=JobKey("default/b"), old=G.PENDING, new=G.INQUEUE),
    )


def test_not_ready_without_fit_errors_shows_the_histogram() -> None:
    group = make_podgroup("a", min_member=2, phase="Running")
    pods = [
        make_pod("a-worker-0", group="a").on("n0").obj(),
        make_pod("a-worker-1", group="a").obj(),
    ]
    pods[1]["spec"]["schedulingGates"] = [{"name": "hold"}]
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, pods)]))
    assert result.why_not["default/a"] == (
        "1/2 tasks in gang unschedulable: "
        "pod group is not ready, 1 Pending, 1 Running, 2 minAvailable"
    )
    assert result.pod_conditions == ()  # gated pods get no condition


def test_queue_allocated_rolls_up_the_parent_chain() -> None:
    queues = [
        make_queue("root"),
        make_queue("mid", parent="root"),
        make_queue("leaf", parent="mid"),
    ]
    running = [make_pod("a-run-0", group="a", cpu="2").on("n0").obj()]
    group, pending = gang("a", 1, queue="leaf")
    result = run_session(
        snapshot([make_node("n0").obj()], gangs=[(group, running + pending)], queues=queues)
    )
    cpu = {name: r.milli_cpu for name, r in result.queue_allocated.items()}
    assert cpu == {"leaf": 3000, "mid": 3000, "root": 3000}
    assert result.queue_allocated[QueueName("leaf")].to_resource_list()["pods"] == "2"


def test_ready_gang_gets_volcanos_scheduled_condition() -> None:
    result = run_session(snapshot([make_node("n0").obj()], gangs=[gang("a", 1)]))
    assert [(c.type, c.reason, c.message) for c in result.conditions] == [
        (ConditionType.SCHEDULED, "tasks in gang are ready to be scheduled", "")
    ]
