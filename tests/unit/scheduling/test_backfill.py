"""The backfill action: best-effort pods go wherever the non-resource predicates allow (C8.4)."""

from __future__ import annotations

from scheduling.actions.registry import run_session
from scheduling.api.result import ConditionType
from scheduling.framework.session_config import Action, SessionConfig
from tests.unit.scheduling.builders import gang, make_node, make_pod, make_podgroup, snapshot


def best_effort(job: str, count: int) -> list[dict[str, object]]:
    return [make_pod(f"{job}-worker-{i}", group=job, cpu="").obj() for i in range(count)]


def test_best_effort_pods_land_even_on_a_full_node() -> None:
    full = make_pod("hog", group=None, cpu="4").spec(schedulerName="other").on("n0").obj()
    result = run_session(
        snapshot(
            [make_node("n0").obj()],
            pods=[full],
            gangs=[(make_podgroup("a", 2), best_effort("a", 2))],
        )
    )
    assert result.node_of == {"default/a-worker-0": "n0", "default/a-worker-1": "n0"}
    assert [c.type for c in result.conditions] == [ConditionType.SCHEDULED]


def test_best_effort_pods_respect_taints_and_pod_slots() -> None:
    cluster = [make_node("n0").taint("gpu", "yes").obj(), make_node("n1", pods=1).obj()]
    result = run_session(snapshot(cluster, gangs=[(make_podgroup("a", 1), best_effort("a", 2))]))
    assert result.node_of == {"default/a-worker-0": "n1"}
    messages = {c.pod: c.message for c in result.pod_conditions}
    assert messages == {
        "default/a-worker-1": "0/2 nodes are available: "
        "1 Too many pods, 1 node(s) had untolerated taint(s)"
    }


def test_best_effort_pods_of_a_pending_group_wait_for_enqueue() -> None:
    group = make_podgroup("a", 1, phase="Pending", minResources={"cpu": "100"})
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, best_effort("a", 1))]))
    assert result.placements == ()


def test_backfill_can_be_switched_off() -> None:
    config = SessionConfig(actions=(Action.ENQUEUE, Action.ALLOCATE))
    snap = snapshot([make_node("n0").obj()], gangs=[(make_podgroup("a", 1), best_effort("a", 1))])
    assert run_session(snap, config).placements == ()


def test_best_effort_members_of_an_unready_gang_are_held_back() -> None:
    group, pods = gang("a", 1, cpu="8", min_member=2)
    pods.append(make_pod("a-be-0", group="a", cpu="").obj())
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, pods)]))
    assert result.placements == ()
    assert result.why_not == {
        "default/a": "1/2 tasks in gang unschedulable: 0/1 nodes are available: 1 Insufficient cpu"
    }
    assert [(c.pod, c.reason) for c in result.pod_conditions] == [
        ("default/a-be-0", "Schedulable"),
        ("default/a-worker-0", "Unschedulable"),
    ]
