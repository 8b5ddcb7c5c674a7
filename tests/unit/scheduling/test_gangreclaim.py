"""The gangreclaim action: cases from Volcano's pkg/scheduler/actions/gangreclaim/
gangreclaim_test.go (reclaimable queues only, victim preemptability), run as whole sessions,
and the two victim rules of `SessionConfig.whole_gang_victims`."""

from __future__ import annotations

from typing import Any

from scheduling.actions.registry import run_session
from scheduling.api.result import EvictReason, SessionResult
from scheduling.framework import conf
from scheduling.framework.session_config import SessionConfig, parse_actions
from tests.unit.scheduling.builders import (
    gang,
    make_node,
    make_pdb,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    snapshot,
)

Obj = dict[str, Any]
GANGRECLAIM = SessionConfig(actions=parse_actions("enqueue, allocate, backfill, gangreclaim"))
CALDERA_GANGRECLAIM = conf.CALDERA_DEFAULT.replace('reclaim"', 'gangreclaim"')
VOLCANO = GANGRECLAIM.model_copy(update={"whole_gang_victims": False})
QUEUES = [make_queue("q1"), make_queue("q2"), make_queue("q3", reclaimable=False)]


def session(
    gangs: list[tuple[Obj, list[Obj]]], config: SessionConfig = GANGRECLAIM, cpu: str = "6"
) -> SessionResult:
    nodes = [make_node("n0", cpu=cpu).obj()]
    return run_session(snapshot(nodes, gangs=gangs, queues=QUEUES), config)


def evicted(result: SessionResult) -> list[str]:
    return sorted(e.pod.split("/")[1] for e in result.evictions)


def test_reclaims_only_from_queues_that_let_themselves_be_reclaimed() -> None:
    # Volcano's test: a permit-all victim rule; q2 and q3 hold 3 CPUs each, only q2 may give.
    gangs = [
        running("v", ["n0"] * 3, queue="q2"),
        running("o", ["n0"] * 3, queue="q3"),
        gang("r", 2, queue="q1"),
    ]
    result = session(gangs, VOLCANO)
    assert evicted(result) == ["v-worker-0", "v-worker-1", "v-worker-2"]  # whole: min 3 of 3
    assert {e.reason for e in result.evictions} == {EvictReason.GANG_RECLAIM}
    assert result.evictions[0].message.endswith("(queue q1)")


def test_whole_gang_goes_while_its_queue_stays_above_its_share() -> None:
    # Deserved 2 CPUs each; q2 holds 4 in two gangs of 2: one gang goes whole, one stays.
    gangs = [
        running("v", ["n0"] * 2, queue="q2"),
        running("w", ["n0"] * 2, queue="q2"),
        running("o", ["n0"] * 2, queue="q3"),
        gang("r", 2, queue="q1"),
    ]
    result = session(gangs)
    assert evicted(result) == ["v-worker-0", "v-worker-1"]
    assert {e.preemptor for e in result.evictions} == {"default/r-worker-0"}


def test_victim_pods_marked_not_preemptable_are_kept() -> None:
    group = make_podgroup("v", 3, queue="q2")
    group["status"]["phase"] = "Running"
    pods = [
        make_pod(f"v-worker-{i}", group="v")
        .annotate("volcano.sh/preemptable", "false")
        .on("n0")
        .obj()
        for i in range(3)
    ]
    gangs = [(group, pods), running("o", ["n0"] * 3, queue="q3"), gang("r", 2, queue="q1")]
    assert session(gangs).evictions == ()


def test_a_gang_asking_beyond_its_queue_share_reclaims_nothing() -> None:
    gangs = [
        running("v", ["n0"] * 3, queue="q2"),
        running("o", ["n0"] * 3, queue="q3"),
        gang("r", 3, queue="q1"),  # 3 CPUs: more than q1 deserves (Preemptive)
    ]
    assert session(gangs).evictions == ()


def test_spare_tasks_go_first_and_the_gang_keeps_min_available() -> None:
    gangs = [
        running("v", ["n0"] * 3, min_member=1, queue="q2"),
        running("o", ["n0"] * 3, queue="q3"),
        gang("r", 1, queue="q1"),
    ]
    result = session(gangs)
    assert len(result.evictions) == 1  # one spare task covers the need


def test_queue_at_its_share_gives_nothing_by_caldera_but_does_by_volcano() -> None:
    # q2 holds its deserved 2 CPUs exactly; q3 (not reclaimable) holds the rest.
    gangs = [
        running("v", ["n0"] * 2, queue="q2"),
        running("o", ["n0"] * 4, queue="q3"),
        gang("r", 2, queue="q1"),
    ]
    assert session(gangs).evictions == ()
    # Volcano's proportion registers no UnifiedEvictable function: nothing checks q2's share.
    assert evicted(session(gangs, VOLCANO)) == ["v-worker-0", "v-worker-1"]


def test_reclaim_off_unless_configured() -> None:
    gangs = [
        running("v", ["n0"] * 3, queue="q2"),
        running("o", ["n0"] * 3, queue="q3"),
        gang("r", 2, queue="q1"),
    ]
    default = SessionConfig(actions=parse_actions("enqueue, allocate, backfill"))
    assert session(gangs, default).evictions == ()


def test_a_disruption_budget_keeps_its_gang_under_calderas_rule() -> None:
    """pdb's budgets hold for the gang actions as for reclaim (Volcano's pdb registers no
    UnifiedEvictable, so there a budget never stops a gang action): v may lose no pod, w may."""
    gangs = [
        running("v", ["n0"] * 2, queue="q2"),
        running("w", ["n0"] * 2, queue="q2"),
        running("o", ["n0"] * 2, queue="q3"),
        gang("r", 2, queue="q1"),
    ]
    for name, pods in (("v", gangs[0][1]), ("w", gangs[1][1])):
        for pod in pods:
            pod["metadata"].setdefault("labels", {})["app"] = name
    with_pdb = conf.load(CALDERA_GANGRECLAIM + "  - name: pdb\n").session
    budgets = [make_pdb("v", 0, app="v"), make_pdb("w", 2, app="w")]
    snap = snapshot([make_node("n0", cpu="6").obj()], gangs=gangs, queues=QUEUES, pdbs=budgets)
    assert evicted(run_session(snap, with_pdb)) == ["w-worker-0", "w-worker-1"]
    budgets[1] = make_pdb("w", 1, app="w")  # one of w's two: no whole gang may go
    snap = snapshot([make_node("n0", cpu="6").obj()], gangs=gangs, queues=QUEUES, pdbs=budgets)
    assert evicted(run_session(snap, with_pdb)) == []
