"""The allocate action end to end: gangs, fairness between queues, constraints (C8.2)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from models.keys import JobKey
from scheduling.actions.registry import run_session
from scheduling.api.result import ConditionType, PodReason, SessionResult
from scheduling.framework.session_config import Action, SessionConfig
from tests.unit.scheduling.builders import (
    gang,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    snapshot,
)


def placed(result: SessionResult) -> dict[str, str]:
    return {pod.split("/")[1]: node for pod, node in result.node_of.items()}


def nodes(count: int, cpu: str = "4") -> list[dict[str, Any]]:
    return [make_node(f"n{i}", cpu=cpu).obj() for i in range(count)]


def test_three_gangs_share_nodes_and_the_one_left_over_holds_nothing() -> None:
    result = run_session(
        snapshot(nodes(3), gangs=[gang("a", 4, cpu="2"), gang("b", 2), gang("c", 3)])
    )
    assert placed(result) == {
        "a-worker-0": "n0",
        "a-worker-1": "n1",
        "a-worker-2": "n2",
        "a-worker-3": "n0",
        "b-worker-0": "n1",
        "b-worker-1": "n2",
    }
    assert result.why_not == {
        "default/c": "1/3 tasks in gang unschedulable: 0/3 nodes are available: 3 Insufficient cpu"
    }
    scheduled = [c.job for c in result.conditions if c.type is ConditionType.SCHEDULED]
    assert scheduled == ["default/a", "default/b"]


def test_three_gangs_that_fit_are_all_placed() -> None:
    result = run_session(
        snapshot(nodes(3), gangs=[gang("a", 4, cpu="2"), gang("b", 2), gang("c", 2)])
    )
    assert placed(result) == {
        "a-worker-0": "n0",
        "a-worker-1": "n1",
        "a-worker-2": "n2",
        "a-worker-3": "n0",
        "b-worker-0": "n1",
        "b-worker-1": "n2",
        "c-worker-0": "n1",
        "c-worker-1": "n2",
    }
    assert result.why_not == {}


def test_gang_larger_than_free_capacity_binds_nothing_and_says_why() -> None:
    result = run_session(snapshot(nodes(3, cpu="2"), gangs=[gang("a", 4, cpu="3", min_member=3)]))
    assert result.placements == ()
    assert result.why_not == {
        "default/a": "3/4 tasks in gang unschedulable: 0/3 nodes are available: 3 Insufficient cpu"
    }
    assert result.phase_updates == ()  # stays Inqueue


def test_spec_worked_example_two_of_three_fit() -> None:
    """C8.2: minMember 3, four tasks, room for two: discarded, "1/4", nothing bound."""
    result = run_session(snapshot(nodes(2, cpu="1"), gangs=[gang("a", 4, min_member=3)]))
    assert result.placements == ()
    assert result.why_not["default/a"].startswith("1/4 tasks in gang unschedulable: ")
    reasons = {c.pod.split("/")[1]: (c.reason, c.message) for c in result.pod_conditions}
    assert reasons["a-worker-0"] == (
        PodReason.SCHEDULABLE,
        "Pod default/a-worker-0 can possibly be assigned to n0, once minAvailable is satisfied",
    )
    assert reasons["a-worker-1"][0] is PodReason.SCHEDULABLE
    assert reasons["a-worker-2"] == (
        PodReason.UNSCHEDULABLE,
        "0/2 nodes are available: 2 Insufficient cpu",
    )
    assert reasons["a-worker-3"][0] is PodReason.UNSCHEDULABLE


def test_queues_weighted_one_to_three_get_a_quarter_and_three_quarters() -> None:
    jobs = [gang(f"x{i:02}", 1, queue="q1") for i in range(10)]
    jobs += [gang(f"y{i:02}", 1, queue="q3") for i in range(20)]
    queues = [make_queue("q1", weight=1), make_queue("q3", weight=3)]
    result = run_session(snapshot(nodes(4), gangs=jobs, queues=queues))
    by_queue = Counter(p.job.split("/")[1][0] for p in result.placements)
    assert by_queue == {"x": 4, "y": 12}
    assert result.queue_allocated["q1"].milli_cpu == 4000
    assert result.queue_allocated["q3"].milli_cpu == 12000
    assert sorted(result.why_not) == [f"default/x{i:02}" for i in range(4, 10)] + [
        f"default/y{i:02}" for i in range(12, 20)
    ]


def test_idle_queue_share_flows_to_the_busy_one() -> None:
    jobs = [gang(f"y{i:02}", 1, queue="q3") for i in range(20)]
    queues = [make_queue("q1", weight=1), make_queue("q3", weight=3)]
    result = run_session(snapshot(nodes(4), gangs=jobs, queues=queues))
    assert len(result.placements) == 16


def test_tainted_node_is_skipped_unless_tolerated() -> None:
    tainted = [make_node("n0").taint("gpu", "yes").obj()]
    group, _ = gang("t", 0, min_member=1)
    tolerant = [make_pod("t-worker-0", group="t").tolerate("gpu", "yes").obj()]
    result = run_session(snapshot(tainted, gangs=[gang("a", 1), (group, tolerant)]))
    assert placed(result) == {"t-worker-0": "n0"}
    assert result.why_not == {
        "default/a": "1/1 tasks in gang unschedulable: "
        "0/1 nodes are available: 1 node(s) had untolerated taint(s)"
    }


def test_tainted_node_loses_to_a_clean_one_without_toleration() -> None:
    cluster = [make_node("a-tainted").taint("gpu", "yes").obj(), make_node("b-clean").obj()]
    result = run_session(snapshot(cluster, gangs=[gang("a", 2)]))
    assert set(result.node_of.values()) == {"b-clean"}


def test_node_affinity_and_selector_pick_the_matching_nodes() -> None:
    cluster = [
        make_node("n0").label("zone", "a").obj(),
        make_node("n1").label("zone", "b").obj(),
        make_node("n2").label("zone", "b").label("disk", "ssd").obj(),
    ]
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
    group, _ = gang("a", 0, min_member=2)
    pods = [
        make_pod("a-worker-0", group="a").require(term).obj(),
        make_pod("a-worker-1", group="a").node_selector(disk="ssd").obj(),
    ]
    result = run_session(snapshot(cluster, gangs=[(group, pods)]))
    assert placed(result) == {"a-worker-0": "n1", "a-worker-1": "n2"}


def test_role_minimum_unmet_discards_the_whole_gang() -> None:
    group = make_podgroup("r", min_member=3, minTaskMember={"ps": 1, "worker": 2})
    pods = [
        make_pod("r-ps-0", group="r").role("ps").node_selector(kind="ps").obj(),
        make_pod("r-worker-0", group="r").role("worker").obj(),
        make_pod("r-worker-1", group="r").role("worker").obj(),
    ]
    result = run_session(snapshot(nodes(2), gangs=[(group, pods)]))
    assert result.placements == ()
    assert result.why_not["default/r"] == (
        "3/3 tasks in gang unschedulable: "
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector"
    )


def test_running_gang_grows_beyond_min_one_task_per_turn() -> None:
    group = make_podgroup("a", min_member=2, phase="Running")
    running = [make_pod(f"a-worker-{i}", group="a").on("n0").obj() for i in range(2)]
    pending = [make_pod(f"a-worker-{i}", group="a").obj() for i in range(2, 4)]
    other = gang("b", 2)
    result = run_session(snapshot(nodes(2), gangs=[(group, running + pending), other]))
    order = [p.pod.split("/")[1] for p in result.placements]
    assert order == ["b-worker-0", "b-worker-1", "a-worker-2", "a-worker-3"]
    assert result.phase_updates == ()


def test_higher_priority_job_wins_the_contended_room() -> None:
    classes = [{"metadata": {"name": "high"}, "value": 100}]
    jobs = [gang("a", 2, cpu="4"), gang("z", 2, cpu="4", priorityClassName="high")]
    result = run_session(snapshot(nodes(2), gangs=jobs, priority_classes=classes))
    assert {p.job for p in result.placements} == {JobKey("default/z")}


def test_without_enqueue_allocate_promotes_pending_groups() -> None:
    group, pods = gang("a", 2, phase="Pending")
    config = SessionConfig(actions=(Action.ALLOCATE,))
    result = run_session(snapshot(nodes(1), gangs=[(group, pods)]), config)
    assert len(result.placements) == 2
    assert [(u.old, u.new) for u in result.phase_updates] == [("Pending", "Inqueue")]


def test_with_enqueue_allocate_skips_groups_still_pending() -> None:
    group, pods = gang("a", 1, phase="Pending", minResources={"cpu": "100"})
    result = run_session(snapshot(nodes(1), gangs=[(group, pods)]))
    assert result.placements == ()
    assert result.why_not["default/a"].endswith("resource in cluster is overused")


def test_best_effort_pods_are_left_to_backfill() -> None:
    group, _ = gang("a", 0)
    pods = [make_pod("a-worker-0", group="a", cpu="").obj()]
    config = SessionConfig(actions=(Action.ENQUEUE, Action.ALLOCATE))
    assert run_session(snapshot(nodes(1), gangs=[(group, pods)]), config).placements == ()


def test_invalid_gang_is_not_tried() -> None:
    result = run_session(snapshot(nodes(1), gangs=[gang("a", 2, min_member=3)]))
    assert result.placements == ()
    condition = result.conditions[0]
    assert (condition.reason, condition.message) == (
        "NotEnoughTasks",
        "Not enough valid tasks for gang-scheduling, valid: 2, min: 3",
    )


def test_closed_queue_allocates_nothing() -> None:
    queues = [make_queue("default", state="Closed")]
    result = run_session(snapshot(nodes(1), gangs=[gang("a", 1)], queues=queues))
    assert result.placements == ()
    message = "1/1 tasks in gang unschedulable: queue default is Closed"
    assert result.why_not == {"default/a": message}


def test_session_is_deterministic_whatever_the_input_order() -> None:
    jobs = [gang("a", 3), gang("b", 2, cpu="2"), gang("c", 4, min_member=2)]
    first = run_session(snapshot(nodes(3), gangs=jobs))
    second = run_session(snapshot(list(reversed(nodes(3))), gangs=list(reversed(jobs))))
    assert first == second
    assert first.model_dump_json() == second.model_dump_json()
