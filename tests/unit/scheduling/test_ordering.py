"""Who goes first (C7.11): queue, job and task sort keys."""

from __future__ import annotations

from datetime import UTC, datetime

from models.keys import JobKey, QueueName
from scheduling.api.snapshot import PodKey, TaskInfo
from scheduling.framework import ordering
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import tiers_of
from tests.unit.scheduling.builders import gang, make_node, make_podgroup, make_queue, snapshot

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def task(name: str, priority: int = 1, index: int | None = None, minute: int = 0) -> TaskInfo:
    return TaskInfo(
        key=PodKey(f"ns/{name}"),
        job=JobKey("ns/j"),
        priority=priority,
        index=index,
        creation=T0.replace(minute=minute),
    )


def test_tasks_by_priority_then_numeric_index_then_age_then_name() -> None:
    tasks = [
        task("j-w-10", index=10),
        task("j-w-2", index=2),
        task("j-ps-0", priority=5, index=0),
        task("other-b", minute=1),
        task("other-a", minute=1),
        task("older", minute=0),
    ]
    ordered = [t.key.split("/")[1] for t in sorted(tasks, key=ordering.task_order)]
    assert ordered == ["j-ps-0", "j-w-2", "j-w-10", "older", "other-a", "other-b"]


def test_jobs_by_priority_then_unready_then_share_then_age() -> None:
    old = make_podgroup("old")
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    young = make_podgroup("young")
    young["metadata"]["creationTimestamp"] = "2026-01-02T00:00:00Z"
    classes = [{"metadata": {"name": "high"}, "value": 10}]
    vip = gang("vip", 1, priorityClassName="high")
    vip[0]["metadata"]["creationTimestamp"] = "2026-01-03T00:00:00Z"  # the youngest
    groups = [
        (young, gang("young", 1)[1]),
        (old, gang("old", 1)[1]),
        vip,
        gang("zero", 0, min_member=0),  # ready already: no tasks needed
    ]
    world = snapshot([make_node("n0").obj()], gangs=groups, priority_classes=classes)
    state = SessionState(world)
    keys = sorted(state.jobs, key=lambda k: ordering.job_order(state, k))
    assert keys == ["default/vip", "default/old", "default/young", "default/zero"]
    # Without the priority plugin ordering jobs, the high-priority job waits its turn by age.
    tiers = tiers_of(("gang", "conformance"), ("drf", "predicates", "proportion"))
    unprioritised = SessionState(world, SessionConfig(tiers=tiers))
    keys = sorted(unprioritised.jobs, key=lambda k: ordering.job_order(unprioritised, k))
    assert keys == ["default/old", "default/young", "default/vip", "default/zero"]


def test_queues_by_priority_then_share() -> None:
    queues = [make_queue("busy"), make_queue("idle"), make_queue("vip", priority=1)]
    jobs = [gang("a", 2, queue="busy"), gang("b", 2, queue="idle"), gang("c", 1, queue="vip")]
    state = SessionState(snapshot([make_node("n0").obj()], gangs=jobs, queues=queues))
    state.allocate(PodKey("default/a-worker-0"), state.snapshot.nodes[0].name)
    names = sorted(state.queues, key=lambda q: ordering.queue_order(state, QueueName(q)))
    assert names == ["vip", "idle", "busy"]
