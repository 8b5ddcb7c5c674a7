"""The preempt action (C8.5): within a queue, higher priority takes room from lower priority."""

from __future__ import annotations

from typing import Any

from scheduling.actions.registry import run_session
from scheduling.api.result import EvictReason, SessionResult
from scheduling.framework.session_config import Action, SessionConfig, parse_actions
from tests.unit.scheduling.builders import (
    PRIORITY_CLASSES,
    gang,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    snapshot,
)

Obj = dict[str, Any]
PREEMPT = SessionConfig(actions=parse_actions("enqueue, allocate, backfill, reclaim, preempt"))


def session(gangs: list[tuple[Obj, list[Obj]]], cpu: str = "4", **options: Any) -> SessionResult:
    options.setdefault("priority_classes", PRIORITY_CLASSES)
    return run_session(snapshot([make_node("n0", cpu=cpu).obj()], gangs=gangs, **options), PREEMPT)


def evicted(result: SessionResult) -> list[str]:
    return sorted(e.pod.split("/")[1] for e in result.evictions)


def test_higher_priority_gang_preempts_a_lower_priority_job() -> None:
    low = running("low", ["n0"] * 4, min_member=1, priorityClassName="low")
    high = gang("high", 2, priorityClassName="high")
    result = session([low, high])
    assert evicted(result) == ["low-worker-2", "low-worker-3"]  # the last in task order go
    assert {e.reason for e in result.evictions} == {EvictReason.PREEMPT}
    assert {e.preemptor for e in result.evictions} == {
        "default/high-worker-0",
        "default/high-worker-1",
    }
    assert result.evictions[0].message.startswith("Pod is evicted, because of preempt by ")


def test_equal_priority_preempts_nothing() -> None:
    low = running("a", ["n0"] * 4, min_member=1, priorityClassName="low")
    assert session([low, gang("b", 2, priorityClassName="low")]).evictions == ()


def test_preempt_is_off_unless_configured() -> None:
    low = running("low", ["n0"] * 4, min_member=1, priorityClassName="low")
    high = gang("high", 2, priorityClassName="high")
    snap = snapshot([make_node("n0").obj()], gangs=[low, high], priority_classes=PRIORITY_CLASSES)
    assert run_session(snap).evictions == ()


def test_lower_priority_gang_without_spare_tasks_goes_whole() -> None:
    low = running("low", ["n0"] * 4, priorityClassName="low")  # min 4 of 4
    result = session([low, gang("high", 1, priorityClassName="high")])
    assert evicted(result) == [f"low-worker-{i}" for i in range(4)]


def test_volcanos_rule_breaks_the_gang_through_drf_in_tier_2() -> None:
    # gang names nobody, tier 1 ends; drf lets low's tasks go while low keeps a share no
    # smaller than high's with its task (3/4, 2/4, 1/4 against 1/4): one is enough.
    low = running("low", ["n0"] * 4, priorityClassName="low")  # min 4 of 4
    config = PREEMPT.model_copy(update={"whole_gang_victims": False})
    snap = snapshot(
        [make_node("n0").obj()],
        gangs=[low, gang("high", 1, priorityClassName="high")],
        priority_classes=PRIORITY_CLASSES,
    )
    assert evicted(run_session(snap, config)) == ["low-worker-3"]


def test_gang_that_would_still_not_fit_preempts_nobody() -> None:
    low = running("low", ["n0"] * 4, min_member=1, priorityClassName="low")
    result = session([low, gang("high", 5, priorityClassName="high")])
    assert result.evictions == ()


def test_other_queues_are_not_preempted() -> None:
    queues = [make_queue("a"), make_queue("b")]
    low = running("low", ["n0"] * 4, min_member=1, queue="a", priorityClassName="low")
    high = gang("high", 2, queue="b", priorityClassName="high")
    result = session([low, high], queues=queues)
    # b is below its deserved share (2 of 4 CPUs), so reclaim takes two of a's pods;
    # preempt, which stays within a queue, takes none.
    assert [e.reason for e in result.evictions] == [EvictReason.RECLAIM] * 2


def test_higher_priority_task_displaces_its_own_jobs_lower_priority_task() -> None:
    group = make_podgroup("j", min_member=3, phase="Running")
    pods = [make_pod(f"j-worker-{i}", group="j").priority(1).on("n0").obj() for i in range(2)]
    pods.append(make_pod("j-worker-2", group="j").priority(10).obj())
    pods.append(make_pod("j-worker-3", group="j").priority(1).obj())
    result = session([(group, pods)], cpu="2")
    assert evicted(result) == ["j-worker-1"]
    assert {e.preemptor for e in result.evictions} == {"default/j-worker-2"}


def test_actions_string_in_volcano_form() -> None:
    assert parse_actions(" enqueue,allocate , preempt") == (
        Action.ENQUEUE,
        Action.ALLOCATE,
        Action.PREEMPT,
    )
