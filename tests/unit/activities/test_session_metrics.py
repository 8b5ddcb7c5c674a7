"""A session's figures as Volcano's series: the gauges' values per label set, and each
PodGroup's latencies observed once per stage however often a session decides them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from activities.scheduler import session_metrics
from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.actions.registry import run_session
from scheduling.api.backlog import Backlog, QueueBacklog
from scheduling.api.queue_report import QueueFigures, Stage
from scheduling.api.vectors import Resources
from scheduling.framework import queue_report
from service import metrics, worker_registry
from tests.unit.scheduling.builders import gang, make_node, snapshot

GPU = "nvidia.com/gpu"
CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def test_series_are_volcanos_per_queue_values() -> None:
    busy = QueueFigures(
        name=QueueName("busy"),
        weight=3,
        allocated=Resources.of(3000, 2**30, 0, {GPU: 2000}),
        deserved=Resources.of(2500, 2**30),
        capability=Resources.of(6000, 0),
        share=1.2,
        overused=True,
        pod_groups={PodGroupPhase.RUNNING: 2, PodGroupPhase.INQUEUE: 1},
    )
    found = session_metrics.series([busy, QueueFigures(name=QueueName("idle"))])
    assert found[metrics.QUEUE_ALLOCATED.milli_cpu] == {("busy",): 3000.0, ("idle",): 0.0}
    assert found[metrics.QUEUE_ALLOCATED.memory_bytes][("busy",)] == float(2**30)
    assert found[metrics.QUEUE_ALLOCATED.scalar_resources] == {("busy", GPU): 2000.0}
    assert found[metrics.QUEUE_DESERVED.milli_cpu][("busy",)] == 2500.0
    # A queue without capability has no capacity series, as in Volcano.
    assert found[metrics.QUEUE_CAPACITY.milli_cpu] == {("busy",): 6000.0}
    assert found[metrics.QUEUE_SHARE][("busy",)] == 1.2
    assert found[metrics.QUEUE_WEIGHT] == {("busy",): 3.0, ("idle",): 1.0}
    assert found[metrics.QUEUE_OVERUSED] == {("busy",): 1.0, ("idle",): 0.0}
    running = metrics.QUEUE_POD_GROUPS[PodGroupPhase.RUNNING]
    assert running.name == "volcano_queue_pod_group_running_count"
    assert found[running] == {("busy",): 2.0, ("idle",): 0.0}
    assert found[metrics.QUEUE_POD_GROUPS[PodGroupPhase.COMPLETED]][("busy",)] == 0.0


def test_publish_serves_the_session_figures() -> None:
    result = run_session(snapshot([make_node("n0").obj()], gangs=[gang("a", 2)]))
    session_metrics.publish(result.queues, result.backlog, None)
    value = worker_registry.WORKER_REGISTRY.get_sample_value(
        metrics.QUEUE_ALLOCATED.milli_cpu.name, {"queue_name": "default"}
    )
    assert value == 2000.0  # the gang this session placed


def _wait(queue: str) -> float | None:
    name = metrics.QUEUE_ESTIMATED_WAIT.name
    return worker_registry.WORKER_REGISTRY.get_sample_value(name, {"queue_name": queue})


def test_a_line_s_first_estimate_is_its_queue_s_estimated_wait_and_goes_with_it() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    line = QueueBacklog.of(
        [
            (JobKey("ns/held"), PodGroupPhase.INQUEUE, ""),
            (JobKey("ns/next"), PodGroupPhase.PENDING, ""),
        ],
        2,
        [None, now + timedelta(seconds=90)],
        runs=5,
        median_s=60.0,
    )
    figures = (QueueFigures(name=QueueName("research")),)
    session_metrics.publish(figures, Backlog(queues={QueueName("research"): line}), now)
    assert _wait("research") == 90.0  # the first job of the line that has an estimate
    session_metrics.publish(figures, Backlog(), now)  # nobody waits any more: no series
    assert _wait("research") is None


def _count(metric: metrics.Latency, **labels: str) -> float:
    value = worker_registry.WORKER_REGISTRY.get_sample_value(f"{metric.name}_count", labels)
    return value or 0.0


def _sum(metric: metrics.Latency, **labels: str) -> float:
    value = worker_registry.WORKER_REGISTRY.get_sample_value(f"{metric.name}_sum", labels)
    return value or 0.0


def test_latencies_are_observed_once_per_pod_group_and_stage() -> None:
    group, pods = gang("lat", 1, phase="Pending", minResources={"cpu": "1"})
    group["metadata"].update(uid="u-lat", creationTimestamp="2026-01-01T00:00:00Z")
    snap = snapshot([make_node("n0").obj()], gangs=[(group, pods)])
    result = run_session(snap)
    assert {m.stage for m in queue_report.milestones(snap, result, ())} == {
        Stage.INQUEUE,
        Stage.PLACED,
    }
    inqueue, placed = metrics.JOB_INQUEUE_LATENCY, metrics.E2E_JOB_SCHEDULING_LATENCY
    before = (_count(inqueue, queue_name="default"), _sum(inqueue, queue_name="default"))
    placed_before = (_count(placed), _sum(placed))
    once = session_metrics.Once()
    for _ in range(2):  # a session retried decides the same again
        session_metrics.observe(snap, result, (), now=CREATED + timedelta(seconds=3), once=once)
    assert _count(inqueue, queue_name="default") - before[0] == 1
    assert _sum(inqueue, queue_name="default") - before[1] == 3.0
    assert (_count(placed) - placed_before[0], _sum(placed) - placed_before[1]) == (1, 3000.0)


def test_bound_latency_needs_the_running_write() -> None:
    group, pods = gang("bnd", 1)
    group["metadata"].update(uid="u-bnd", creationTimestamp="2026-01-01T00:00:00Z")
    pods[0]["spec"]["nodeName"] = "n0"
    snap = snapshot([make_node("n0").obj()], gangs=[(group, pods)])
    result = run_session(snap)
    bound = metrics.JOB_BOUND_LATENCY
    before = _count(bound, queue_name="default")
    once = session_metrics.Once()
    later = CREATED + timedelta(seconds=5)
    session_metrics.observe(snap, result, (), now=later, once=once)  # held back: not written
    assert _count(bound, queue_name="default") == before
    session_metrics.observe(snap, result, {JobKey("default/bnd")}, now=later, once=once)
    session_metrics.observe(snap, result, {JobKey("default/bnd")}, now=later, once=once)
    assert _count(bound, queue_name="default") == before + 1


def test_once_forgets_the_oldest_past_its_size() -> None:
    once = session_metrics.Once(size=2)
    assert [once.first((k, Stage.BOUND)) for k in ("a", "b", "a", "c")] == [
        True,
        True,
        False,
        True,
    ]
    assert once.first(("a", Stage.BOUND)) is False  # used recently: kept
    assert once.first(("b", Stage.BOUND)) is True  # the oldest: forgotten
    assert once.first(("a", Stage.INQUEUE)) is True  # another stage of the same PodGroup
