"""The queue report: each queue's figures as the session closes (proportion, capacity flat
and as a tree, queues without jobs), PodGroups by phase, and the milestones the latency
histograms time."""

from __future__ import annotations

from datetime import UTC, datetime

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.actions.registry import run_session
from scheduling.api.queue_report import QueueFigures, Stage
from scheduling.api.result import PhaseUpdate, SessionResult
from scheduling.api.vectors import Resources
from scheduling.framework import queue_report
from scheduling.framework.session_config import SessionConfig
from tests.unit.scheduling.builders import (
    gang,
    make_node,
    make_nodes,
    make_podgroup,
    make_queue,
    running,
    snapshot,
)

GI = 2**30
NODES = make_nodes(2, cpu="4", memory="8Gi")  # 8 cores, 16 GiB
CLUSTER = Resources.of(8000, 16 * GI)


def cores(n: int, memory_gi: int = 0) -> Resources:
    return Resources.of(n * 1000, memory_gi * GI)


def groups(**counts: int) -> dict[PodGroupPhase, int]:
    return {phase: counts.get(phase.lower(), 0) for phase in PodGroupPhase}


def by_name(result: SessionResult) -> dict[str, QueueFigures]:
    return {q.name: q for q in result.queues}


def test_proportion_reports_every_queue_as_the_session_closes() -> None:
    jobs = [running("r", on=["n0", "n0"], queue="light"), gang("h", 2, queue="heavy")]
    queues = [
        make_queue("light"),
        make_queue("heavy", weight=3),
        make_queue("idle", capability={"cpu": "2"}),
    ]
    result = run_session(snapshot(NODES, gangs=jobs, queues=queues))
    found = by_name(result)
    assert list(found) == ["heavy", "idle", "light"]  # by name, the queue without jobs too
    # light: two running 1-core/1-GiB pods; it asks for no more, so it deserves what it holds.
    assert found["light"] == QueueFigures(
        name=QueueName("light"),
        weight=1,
        allocated=cores(2, 2),
        request=cores(2, 2),
        deserved=cores(2, 2),
        real_capability=CLUSTER,
        share=1.0,
        overused=True,  # deserved used up: proportion skips it in allocate
        pod_groups=groups(running=1),
    )
    # heavy: its gang placed by this session counts as allocated; still Inqueue until bound.
    heavy = found["heavy"]
    assert (heavy.weight, heavy.allocated, heavy.request) == (3, cores(2, 2), cores(2, 2))
    assert heavy.pod_groups == groups(inqueue=1)
    assert {p.job for p in result.placements} == {JobKey("default/h")}
    # idle: no jobs, so it holds and deserves nothing; its capability bounds its real one.
    assert found["idle"] == QueueFigures(
        name=QueueName("idle"),
        capability=cores(2),
        real_capability=Resources.of(2000, 16 * GI),
        pod_groups=groups(),
    )


def test_pod_groups_are_counted_by_the_phase_the_session_leaves_them_in() -> None:
    pending, pods = gang("p", 1, phase="Pending", minResources={"cpu": "1"})
    jobs = [
        (pending, pods),
        (make_podgroup("gone", phase="Completed"), []),
        (make_podgroup("waits", phase="Pending", minResources={"cpu": "100"}), []),
        running("r", on=["n1"]),
    ]
    result = run_session(snapshot(NODES, gangs=jobs))
    assert (
        PhaseUpdate(job=JobKey("default/p"), old=PodGroupPhase.PENDING, new=PodGroupPhase.INQUEUE)
        in result.phase_updates
    )
    (default,) = result.queues
    assert default.pod_groups == groups(inqueue=1, pending=1, running=1, completed=1)
    # The admitted job's minResources are reserved in inqueue until it runs.
    assert default.inqueue.milli_cpu == 1000


def test_capacity_reports_the_queues_own_deserved_and_capability() -> None:
    jobs = [running("r", on=["n0", "n0", "n1", "n1"], queue="a")]
    queues = [
        make_queue("a", deserved={"cpu": "3"}, capability={"cpu": "6"}),
        make_queue("b", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "1"}}),
    ]
    result = run_session(snapshot(NODES, gangs=jobs, queues=queues), SessionConfig(capacity=True))
    a, b = result.queues
    assert (a.allocated, a.deserved, a.capability) == (cores(4, 4), cores(3), cores(6))
    assert a.real_capability == Resources.of(6000, 16 * GI)
    assert (a.share, a.overused) == (4 / 3, True)  # capacity: overused is share > 1 at close
    # b has no jobs: the spec's deserved, the unguaranteed cluster plus its own guarantee.
    assert (b.allocated, b.deserved, b.capability) == (cores(0), cores(1), None)
    assert b.real_capability == CLUSTER
    assert (b.share, b.overused) == (0.0, False)


def test_capacity_tree_reports_a_parent_as_its_subtree() -> None:
    queues = [
        make_queue("root"),
        make_queue("p", parent="root", capability={"cpu": "6"}),
        make_queue("c1", parent="p"),
        make_queue("c2", parent="p"),
    ]
    jobs = [running("r1", on=["n0", "n0"], queue="c1"), running("r2", on=["n1"], queue="c2")]
    config = SessionConfig(capacity=True, hierarchy=True)
    found = by_name(run_session(snapshot(NODES, gangs=jobs, queues=queues), config))
    assert found["c1"].allocated == cores(2, 2)
    assert found["c2"].allocated == cores(1, 1)
    assert found["p"].allocated == found["root"].allocated == cores(3, 3)
    assert found["p"].request == cores(3, 3)
    assert found["c1"].real_capability.milli_cpu == 6000  # carved out of its parent's
    assert found["p"].pod_groups == groups()  # PodGroups are counted in their own queue


CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def _timed(group: dict[str, object], uid: str) -> dict[str, object]:
    meta = group["metadata"]
    assert isinstance(meta, dict)
    meta.update(uid=uid, creationTimestamp=CREATED.isoformat().replace("+00:00", "Z"))
    return group


def test_milestones_time_admission_placement_and_the_written_running() -> None:
    admitted, _ = gang("adm", 1, phase="Pending", minResources={"cpu": "1"})
    placed, placed_pods = gang("plc", 2)
    bound, bound_pods = gang("bnd", 1)
    bound_pods[0]["spec"]["nodeName"] = "n0"  # bound by the last session, not running yet
    jobs = [
        (_timed(admitted, "u-adm"), []),
        (_timed(placed, "u-plc"), placed_pods),
        (_timed(bound, "u-bnd"), bound_pods),
    ]
    snap = snapshot([make_node("n0").obj(), make_node("n1").obj()], gangs=jobs)
    result = run_session(snap)
    written = {u.job for u in result.phase_updates}
    found = queue_report.milestones(snap, result, written)
    assert [(m.uid, m.stage, m.queue, m.created) for m in found] == [
        ("u-bnd", Stage.BOUND, "default", CREATED),
        ("u-adm", Stage.INQUEUE, "default", CREATED),
        ("u-plc", Stage.PLACED, "default", CREATED),
    ]
    # A Running write the session held back (its gang being bound) is no milestone yet.
    held = queue_report.milestones(snap, result, written - {JobKey("default/bnd")})
    assert Stage.BOUND not in {m.stage for m in held}


def test_a_pod_group_without_creation_time_has_no_milestone() -> None:
    group, pods = gang("a", 1)
    snap = snapshot(NODES, gangs=[(group, pods)])
    result = run_session(snap)
    assert result.placements
    assert queue_report.milestones(snap, result, set()) == ()
