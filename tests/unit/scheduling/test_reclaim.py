"""The reclaim action (C8.6): queues below their deserved share take room back, gang by gang."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduling.actions.registry import run_session
from scheduling.api.result import EvictReason, PodReason, SessionResult
from scheduling.api.snapshot import TaskStatus
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.state import SessionState
from tests.unit.scheduling.builders import (
    LIGHT_HEAVY,
    PRIORITY_CLASSES,
    gang,
    make_nodes,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    session_state,
    snapshot,
)
from tests.unit.scheduling.simulation import two_queues

Obj = dict[str, Any]
QUEUES = LIGHT_HEAVY


def evicted(result: SessionResult) -> list[str]:
    return [e.pod.split("/")[1] for e in result.evictions]


def by_job_prefix(result: SessionResult) -> Counter[str]:
    return Counter(e.job.split("/")[1].rstrip("0123456789") for e in result.evictions)


def light_fills_the_cluster() -> list[tuple[Obj, list[Obj]]]:
    """12 single-pod jobs of 2 CPUs in `light` running on 3 nodes of 8 CPUs."""
    return [running(f"l{i}", [f"n{i % 3}"], cpu="2", queue="light") for i in range(12)]


def test_starving_queue_reclaims_up_to_its_deserved_share() -> None:
    heavy = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(12)]
    result = run_session(
        snapshot(make_nodes(3, cpu="8"), gangs=light_fills_the_cluster() + heavy, queues=QUEUES)
    )
    # Deserved: light 6 CPUs (3 pods), heavy 18 (9 pods): nine of light's pods go, no more.
    assert by_job_prefix(result) == {"l": 9}
    assert {e.reason for e in result.evictions} == {EvictReason.RECLAIM}
    assert result.placements == ()  # the room is not free until the victims are gone
    waiting = [c for c in result.pod_conditions if "once resource is released" in c.message]
    assert len(waiting) == 9 and {c.reason for c in waiting} == {PodReason.UNSCHEDULABLE}
    # Each waits on the node its message names, as its nominatedNodeName.
    assert all(
        c.nominated_node and f"assigned to {c.nominated_node}," in c.message for c in waiting
    )
    first = result.evictions[0]
    assert first.message == (
        f"Pod is evicted, because of reclaim by {first.preemptor} (queue heavy)"
    )


def test_evicted_room_is_not_handed_out_again_in_the_same_session() -> None:
    heavy = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(12)]
    result = run_session(
        snapshot(make_nodes(3, cpu="8"), gangs=light_fills_the_cluster() + heavy, queues=QUEUES)
    )
    preemptors = {e.preemptor for e in result.evictions}
    assert len(preemptors) == len(result.evictions)  # one victim per waiting pod, none shared


def test_victims_still_terminating_are_waited_for_not_evicted_again() -> None:
    jobs = light_fills_the_cluster()
    for group, pods in jobs[:2]:  # two of light's pods are already being deleted for h0, h1
        pods[0] = make_pod(pods[0]["metadata"]["name"], group=group["metadata"]["name"], cpu="2")
        pods[0] = pods[0].on(f"n{int(group['metadata']['name'][1:]) % 3}").deleting().obj()
    heavy = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(2)]
    result = run_session(snapshot(make_nodes(3, cpu="8"), gangs=jobs + heavy, queues=QUEUES))
    assert result.evictions == () and result.placements == ()
    assert all("once resource is released" in c.message for c in result.pod_conditions)


def test_queue_at_its_deserved_share_reclaims_nothing() -> None:
    jobs = [running(f"h{i}", [f"n{i % 3}"], cpu="2", queue="heavy") for i in range(9)]
    jobs += [running(f"l{i}", [f"n{i % 3}"], cpu="2", queue="light") for i in range(3)]
    jobs += [gang("h9", 1, cpu="2", queue="heavy"), gang("l3", 1, cpu="2", queue="light")]
    result = run_session(snapshot(make_nodes(3, cpu="8"), gangs=jobs, queues=QUEUES))
    assert result.evictions == ()


def test_queue_that_is_not_reclaimable_keeps_its_pods() -> None:
    queues = [make_queue("light", weight=1, reclaimable=False), make_queue("heavy", weight=3)]
    heavy = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(12)]
    result = run_session(
        snapshot(make_nodes(3, cpu="8"), gangs=light_fills_the_cluster() + heavy, queues=queues)
    )
    assert result.evictions == ()


def test_spec_proportion_example_reclaims_only_what_the_reclaimer_deserves() -> None:
    # C7.6: 10 CPUs; A (w1) asks 8, B (w1) asks 2, C (w2) asks 10: deserved 2.667, 2, 5.333.
    queues = [make_queue("a"), make_queue("b"), make_queue("c", weight=2)]
    a = [running(f"a{i}", ["n0"], queue="a") for i in range(4)]
    a += [gang(f"a{i}", 1, queue="a") for i in range(4, 8)]
    b = [gang(f"b{i}", 1, queue="b") for i in range(2)]
    c = [running(f"c{i}", ["n0"], queue="c") for i in range(4)]
    c += [gang(f"c{i}", 1, queue="c") for i in range(4, 10)]
    state = session_state(make_nodes(1, cpu="10"), a + b + c, queues=queues)
    assert {q: float(r.milli_cpu) / 1000 for q, r in state.deserved.items()} == pytest.approx(
        {"a": 2.667, "b": 2, "c": 5.333}, abs=1e-3
    )
    result = run_session(snapshot(make_nodes(1, cpu="10"), gangs=a + b + c, queues=queues))
    assert {p.job.split("/")[1] for p in result.placements} == {"b0", "b1"}  # idle room first
    # C holds 4 and may grow to 5 (5.333): one of A's 4 goes; A keeps 3 (> 2.667).
    assert by_job_prefix(result) == {"a": 1}
    assert {e.preemptor for e in result.evictions} == {"default/c4-worker-0"}


def test_gang_that_would_still_not_fit_evicts_nobody() -> None:
    # heavy deserves 18 CPUs, but its gang of 10 x 2 CPUs needs 20: evicting 9 would not do.
    group, pods = gang("h", 10, cpu="2", queue="heavy")
    result = run_session(
        snapshot(
            make_nodes(3, cpu="8"), gangs=[*light_fills_the_cluster(), (group, pods)], queues=QUEUES
        )
    )
    assert result.evictions == ()
    assert result.why_not["default/h"].startswith("10/10 tasks in gang unschedulable")


def test_gang_that_fits_once_its_victims_go_evicts_them_all_at_once() -> None:
    group, pods = gang("h", 6, cpu="2", queue="heavy")
    result = run_session(
        snapshot(
            make_nodes(3, cpu="8"), gangs=[*light_fills_the_cluster(), (group, pods)], queues=QUEUES
        )
    )
    assert by_job_prefix(result) == {"l": 6}
    assert {e.preemptor for e in result.evictions} == {f"default/h-worker-{i}" for i in range(6)}


def test_victim_gang_loses_spare_tasks_but_is_never_left_broken() -> None:
    # light runs one gang of 6 x 4 CPUs (min 4); heavy wants 3 more pods of 4 CPUs.
    spread = ["n0", "n0", "n1", "n1", "n2", "n2"]
    victim = running("l", spread, cpu="4", min_member=4, queue="light")
    heavy = [gang(f"h{i}", 1, cpu="4", queue="heavy") for i in range(3)]
    result = run_session(snapshot(make_nodes(3, cpu="8"), gangs=[victim, *heavy], queues=QUEUES))
    # Deserved 12 CPUs each. The 2 spare tasks go; a third would break the gang, and taking
    # the whole gang would leave light far below its share: h2 waits.
    assert sorted(evicted(result)) == ["l-worker-0", "l-worker-1"]  # n0 is tried first
    assert sorted(e.preemptor for e in result.evictions) == [
        "default/h0-worker-0",
        "default/h1-worker-0",
    ]


def test_victim_gang_without_spare_tasks_is_not_broken() -> None:
    victim = running("l", ["n0", "n1", "n2"], cpu="8", queue="light")  # min 3 = all 3 pods
    result = run_session(
        snapshot(
            make_nodes(3, cpu="8"),
            gangs=[victim, gang("h0", 1, cpu="8", queue="heavy")],
            queues=QUEUES,
        )
    )
    assert result.evictions == ()  # one pod would break it; all three, light's share


VOLCANO = SessionConfig(whole_gang_victims=False)


def test_volcanos_rule_breaks_a_gang_without_spare_tasks() -> None:
    # As above, by Volcano's tiers: gang names nobody, tier 1 ends, proportion decides.
    victim = running("l", ["n0", "n1", "n2"], cpu="8", queue="light")
    gangs = [victim, gang("h0", 1, cpu="8", queue="heavy")]
    result = run_session(snapshot(make_nodes(3, cpu="8"), gangs=gangs, queues=QUEUES), VOLCANO)
    assert evicted(result) == ["l-worker-0"]


def test_volcanos_rule_takes_spare_tasks_without_asking_proportion() -> None:
    # light holds 6 CPUs, its deserved share, with two tasks to spare on n0; mid holds 10 of
    # its 8. Caldera's rule asks proportion too and takes from mid; Volcano's tier 1 (gang,
    # conformance) names light's spare tasks and decides, as n0 comes first.
    queues = [make_queue("light"), make_queue("mid"), make_queue("heavy", weight=2)]
    nodes = [make_nodes(1, cpu="6")[0], make_nodes(2, cpu="10")[1]]
    jobs = [running("l", ["n0"] * 3, cpu="2", min_member=1, queue="light")]
    jobs += [running(f"m{i}", ["n1"], cpu="2", queue="mid") for i in range(5)]
    jobs.append(gang("h", 1, cpu="2", queue="heavy"))
    snap = snapshot(nodes, gangs=jobs, queues=queues)
    state = SessionState(snap)
    assert {q: r.milli_cpu for q, r in state.deserved.items()} == {
        "light": 6000,
        "mid": 8000,
        "heavy": 2000,
    }
    assert evicted(run_session(snap)) == ["m4-worker-0"]
    assert evicted(run_session(snap, VOLCANO)) == ["l-worker-2"]


def test_victim_gang_goes_whole_when_its_queue_can_spare_all_of_it() -> None:
    gangs = [running(name, ["n0", "n1", "n2"], cpu="4", queue="light") for name in ("la", "lb")]
    heavy = [gang(f"h{i}", 1, cpu="4", queue="heavy") for i in range(3)]
    result = run_session(snapshot(make_nodes(3, cpu="8"), gangs=[*gangs, *heavy], queues=QUEUES))
    # light 24 CPUs, deserved 12: one gang goes whole (its 3 pods), the other is untouched,
    # and h1, h2 wait on the room its other pods release without evicting anyone else.
    assert {e.job for e in result.evictions} == {"default/lb"}
    assert len(result.evictions) == 3
    assert {e.preemptor for e in result.evictions} == {"default/h0-worker-0"}
    waiting = {c.pod for c in result.pod_conditions if "once resource is released" in c.message}
    assert waiting == {f"default/h{i}-worker-0" for i in range(3)}


def test_lowest_priority_job_goes_first() -> None:
    jobs = [
        running(f"l{i}", ["n0"], cpu="2", queue="light", priorityClassName=pc)
        for i, pc in enumerate(["high", "low", "high", "high"])
    ]
    jobs.append(gang("h0", 1, cpu="2", queue="heavy"))
    result = run_session(
        snapshot(
            make_nodes(1, cpu="8"), gangs=jobs, queues=QUEUES, priority_classes=PRIORITY_CLASSES
        )
    )
    assert evicted(result) == ["l1-worker-0"]


@pytest.mark.parametrize(
    "mark",
    [
        pytest.param({"annotations": {"volcano.sh/preemptable": "false"}}, id="preemptable-false"),
        pytest.param({"priorityClassName": "system-cluster-critical"}, id="cluster-critical"),
        pytest.param({"priorityClassName": "system-node-critical"}, id="node-critical"),
    ],
)
def test_protected_pods_are_never_victims(mark: dict[str, Any]) -> None:
    jobs = []
    for i in range(4):
        pod = make_pod(f"l{i}-worker-0", group=f"l{i}", cpu="2").on("n0")
        for key, value in mark.get("annotations", {}).items():
            pod = pod.annotate(key, value)
        if "priorityClassName" in mark:
            pod = pod.spec(priorityClassName=mark["priorityClassName"])
        group = make_podgroup(f"l{i}", queue="light", phase="Running")
        jobs.append((group, [pod.obj()]))
    jobs.append(gang("h0", 1, cpu="2", queue="heavy"))
    assert run_session(snapshot(make_nodes(1, cpu="8"), gangs=jobs, queues=QUEUES)).evictions == ()


def test_kube_system_pods_are_never_victims() -> None:
    jobs = []
    for i in range(4):
        group = make_podgroup(f"l{i}", queue="light", phase="Running", namespace="kube-system")
        pod = make_pod(f"l{i}-worker-0", group=f"l{i}", namespace="kube-system", cpu="2")
        jobs.append((group, [pod.on("n0").obj()]))
    jobs.append(gang("h0", 1, cpu="2", queue="heavy"))
    assert run_session(snapshot(make_nodes(1, cpu="8"), gangs=jobs, queues=QUEUES)).evictions == ()


def test_pod_that_never_preempts_reclaims_nothing() -> None:
    group, pods = gang("h0", 1, cpu="2", queue="heavy")
    pods[0]["spec"]["preemptionPolicy"] = "Never"
    jobs = [*light_fills_the_cluster(), (group, pods)]
    assert run_session(snapshot(make_nodes(3, cpu="8"), gangs=jobs, queues=QUEUES)).evictions == ()


def test_without_reclaim_in_the_actions_nothing_is_evicted() -> None:
    heavy = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(12)]
    config = SessionConfig(actions=(Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL))
    snap = snapshot(make_nodes(3, cpu="8"), gangs=light_fills_the_cluster() + heavy, queues=QUEUES)
    assert run_session(snap, config).evictions == ()


def test_pipelined_task_is_bound_once_the_victim_is_gone() -> None:
    jobs = [running(f"l{i}", ["n0"], cpu="2", queue="light") for i in range(3)]
    jobs.append(gang("h0", 1, cpu="2", queue="heavy"))
    state_nodes = make_nodes(1, cpu="6")
    first = run_session(snapshot(state_nodes, gangs=jobs, queues=QUEUES))
    (eviction,) = first.evictions
    gone = [(g, p) for g, p in jobs if p[0]["metadata"]["name"] != eviction.pod.split("/")[1]]
    second = run_session(snapshot(state_nodes, gangs=gone, queues=QUEUES))
    assert second.node_of == {"default/h0-worker-0": "n0"} and second.evictions == ()


@pytest.mark.parametrize("hold", [False, True], ids=["written-at-once", "held-while-bound"])
@pytest.mark.parametrize("lag", [0, 2], ids=["gone-at-once", "gone-two-sessions-later"])
@pytest.mark.parametrize("light_older", [True, False], ids=["light-older", "heavy-older"])
@pytest.mark.parametrize(
    ("first", "jobs"),
    [
        pytest.param("light", 12, id="light-fills"),
        pytest.param("light", 20, id="light-overfills"),
        pytest.param("heavy", 12, id="heavy-fills"),
    ],
)
def test_weights_one_to_three_end_one_to_three_whoever_came_first(
    hold: bool, lag: int, light_older: bool, first: str, jobs: int
) -> None:
    """Held status writes are what CI met (issue 37): light's evicted jobs, re-admitted on a
    share tie, sat Inqueue over light's share and their reservations kept heavy out for good."""
    cluster = two_queues(light_first=light_older, lag=lag, hold=hold)
    cluster.submit(first, jobs)
    for _ in range(3):
        cluster.step()
    assert cluster.running() == {first: 12}
    cluster.submit("heavy" if first == "light" else "light", 12)
    history = [cluster.running() for _ in range(40) if cluster.step() is not None]
    assert history[-1] == {"light": 3, "heavy": 9}
    assert all(h == history[-1] for h in history[-10:])  # and it stays so
    # Nobody evicted twice, no one more than needed: 9 of light's, or 3 of heavy's.
    assert cluster.evicted == (9 if first == "light" else 3)


def test_statuses_after_reclaim_are_releasing_and_pipelined() -> None:
    heavy = [gang("h0", 1, cpu="2", queue="heavy")]
    snap = snapshot(make_nodes(3, cpu="8"), gangs=light_fills_the_cluster() + heavy, queues=QUEUES)
    state = SessionState(snap)
    from scheduling.actions.reclaim import reclaim

    reclaim(state, SessionConfig())
    statuses = Counter(t.status for t in state.tasks.values())
    assert statuses[TaskStatus.RELEASING] == 1 and statuses[TaskStatus.PIPELINED] == 1
    (victim,) = [t for t in state.tasks.values() if t.status is TaskStatus.RELEASING]
    node = state.nodes[victim.node_name or ""]
    assert node.future_idle.milli_cpu == 0  # released 2 CPUs, already promised to h0
