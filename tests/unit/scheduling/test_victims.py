"""Who may be evicted for whom (C7.1-C7.3, C7.6): candidates, gang units, victim order."""

from __future__ import annotations

from typing import Any

import pytest

from models.keys import JobKey
from scheduling.actions import victims
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import NodeName, PodKey, TaskStatus
from scheduling.framework import victim_tiers
from scheduling.framework.state import SessionState
from tests.unit.scheduling.builders import (
    LIGHT_HEAVY,
    PRIORITY_CLASSES,
    gang,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    session_state,
)

Obj = dict[str, Any]
N0 = NodeName("n0")


def state_of(gangs: list[tuple[Obj, list[Obj]]], cpu: str = "64", **options: Any) -> SessionState:
    options.setdefault("queues", LIGHT_HEAVY)
    return session_state([make_node("n0", cpu=cpu).obj()], gangs, **options)


def candidate_names(state: SessionState, preemptor: str, kind: EvictReason) -> list[str]:
    keys = victims.on_nodes(state)[N0]
    found = victims.candidates(state, state.tasks[PodKey(preemptor)], keys, kind)
    return [t.key.split("/")[1] for t in found]


@pytest.mark.parametrize(
    ("namespace", "priority_class", "expected"),
    [
        pytest.param("default", "", True, id="plain"),
        pytest.param("kube-system", "", False, id="kube-system"),
        pytest.param("default", "system-cluster-critical", False, id="cluster-critical"),
        pytest.param("default", "system-node-critical", False, id="node-critical"),
        pytest.param("default", "high", True, id="other-class"),
    ],
)
def test_conformance(namespace: str, priority_class: str, expected: bool) -> None:
    pod = make_pod("p-w-0", namespace=namespace)
    if priority_class:
        pod = pod.spec(priorityClassName=priority_class)
    assert victim_tiers.conformant(pod.info(f"{namespace}/p")) is expected


def test_reclaim_candidates_are_running_pods_of_other_reclaimable_queues() -> None:
    bound = make_pod("lb-worker-0", group="lb", cpu="2").on("n0", phase="Pending").obj()
    jobs = [
        running("la", ["n0"], queue="light"),
        (make_podgroup("lb", queue="light", phase="Running"), [bound]),
        running("hr", ["n0"], queue="heavy"),
        gang("h0", 1, queue="heavy"),
    ]
    state = state_of(jobs)
    assert state.tasks[PodKey("default/lb-worker-0")].status is TaskStatus.BOUND
    assert candidate_names(state, "default/h0-worker-0", EvictReason.RECLAIM) == ["la-worker-0"]
    # preempt takes bound pods too, but only of lower-priority jobs in its own queue
    assert candidate_names(state, "default/h0-worker-0", EvictReason.PREEMPT) == []


def test_unreclaimable_queue_offers_no_candidates() -> None:
    queues = [make_queue("light", reclaimable=False), make_queue("heavy", weight=3)]
    state = state_of(
        [running("la", ["n0"], queue="light"), gang("h0", 1, queue="heavy")], queues=queues
    )
    assert candidate_names(state, "default/h0-worker-0", EvictReason.RECLAIM) == []


def test_best_effort_preemptor_sees_only_best_effort_victims() -> None:
    plain = running("a", ["n0"])
    empty = make_pod("b-worker-0", group="b", cpu="").on("n0").obj()
    be = (make_podgroup("b", phase="Running"), [empty])
    pod = make_pod("c-worker-0", group="c", cpu="").obj()
    hi = (make_podgroup("c", priorityClassName="high"), [pod])
    state = state_of([plain, be, hi], queues=[make_queue()], priority_classes=PRIORITY_CLASSES)
    assert candidate_names(state, "default/c-worker-0", EvictReason.PREEMPT) == ["b-worker-0"]


def unit_view(units: list[victims.Unit]) -> list[tuple[str, ...]]:
    return [
        tuple(k.split("/")[1] for k in u.tasks) + (("whole",) if u.whole else ()) for u in units
    ]


def test_spare_tasks_go_singly_first_then_the_rest_of_the_gang_as_one() -> None:
    state = state_of([running("l", ["n0"] * 4, min_member=2, queue="light")])
    found = [state.tasks[k] for k in victims.on_nodes(state)[N0]]
    assert unit_view(victims.units(state, found, EvictReason.RECLAIM)) == [
        ("l-worker-3",),
        ("l-worker-2",),
        ("l-worker-3", "l-worker-2", "l-worker-1", "l-worker-0", "whole"),
    ]


def test_role_minimum_limits_the_spare_tasks() -> None:
    group = make_podgroup("l", min_member=2, queue="light", phase="Running")
    group["spec"]["minTaskMember"] = {"ps": 1, "worker": 1}
    pods = [make_pod("l-ps-0", group="l").role("ps").on("n0").obj()]
    pods += [make_pod(f"l-worker-{i}", group="l").role("worker").on("n0").obj() for i in range(3)]
    state = state_of([(group, pods)])
    found = [state.tasks[k] for k in victims.on_nodes(state)[N0]]
    spare = [u for u in victims.units(state, found, EvictReason.RECLAIM) if not u.whole]
    assert unit_view(spare) == [("l-worker-2",), ("l-worker-1",)]  # never the only ps


def test_gang_with_an_unevictable_task_cannot_go_whole() -> None:
    group = make_podgroup("l", min_member=2, queue="light", phase="Running")
    pods = [make_pod("l-worker-0", group="l").on("n0").obj()]
    pods.append(
        make_pod("l-worker-1", group="l").annotate("volcano.sh/preemptable", "false").on("n0").obj()
    )
    state = state_of([(group, pods)])
    found = [state.tasks[k] for k in victims.on_nodes(state)[N0]]
    assert victims.units(state, found, EvictReason.RECLAIM) == []


def test_victim_order_lowest_priority_then_newest_then_last_index() -> None:
    jobs = [
        running("a", ["n0"], queue="light", priorityClassName="high"),
        running("b", ["n0"], queue="light", priorityClassName="low"),
        running("c", ["n0"] * 2, min_member=1, queue="light", priorityClassName="high"),
    ]
    jobs[2][0]["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    state = state_of(jobs, priority_classes=PRIORITY_CLASSES)
    found = [state.tasks[k] for k in victims.on_nodes(state)[N0]]
    assert unit_view(victims.units(state, found, EvictReason.RECLAIM)) == [
        ("c-worker-1",),  # a spare task breaks no gang
        ("b-worker-0", "whole"),  # then the lowest priority
        ("c-worker-1", "c-worker-0", "whole"),  # then the newer of the equals
        ("a-worker-0", "whole"),
    ]


def test_over_deserved_is_checked_before_each_task_of_a_unit() -> None:
    jobs = [running(f"l{i}", ["n0"], cpu="2", queue="light") for i in range(4)]
    jobs.append(gang("h", 3, cpu="2", queue="heavy"))  # heavy asks 6 of 8: light deserves 2
    state = state_of(jobs, cpu="8")
    assert state.deserved_of(state.jobs[JobKey("default/l0")].queue).milli_cpu == 2000
    one = victims.Unit(job=JobKey("default/l0"), tasks=(PodKey("default/l0-worker-0"),), whole=True)
    three = victims.Unit(
        job=JobKey("default/l0"),
        tasks=tuple(PodKey(f"default/l{i}-worker-0") for i in range(3)),
        whole=True,
    )
    four = three.model_copy(update={"tasks": (*three.tasks, PodKey("default/l3-worker-0"))})
    assert victims.over_deserved(state, one) and victims.over_deserved(state, three)
    assert not victims.over_deserved(state, four)  # light would be at 2 before the fourth
