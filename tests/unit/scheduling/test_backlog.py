"""The backlog digest: which jobs wait in each queue, in the order the scheduler tries them,
and why; capped and compact; and the answers the SchedulerWorkflow's queries read from it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from models.keys import JobKey, QueueName, job_key
from models.scheduling import PodGroupPhase
from scheduling.actions.registry import run_session
from scheduling.api import backlog
from scheduling.api.backlog import Backlog, JobStanding, PendingJob, QueueBacklog, Waiting
from scheduling.framework.session_config import SessionConfig
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

pytestmark = pytest.mark.unit

P, Q = PodGroupPhase.PENDING, PodGroupPhase.INQUEUE  # Q: Inqueue
QUOTA = "queue resource quota insufficient: queue q"
Obj = dict[str, Any]


def _unadmitted(name: str, second: int, cpu: str = "2", **spec: Any) -> tuple[Obj, list[Obj]]:
    """A Volcano Job's PodGroup before enqueue: Pending, no pods yet, created at `second`."""
    group = make_podgroup(name, queue="q", phase="Pending", minResources={"cpu": cpu}, **spec)
    group["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{second:02d}Z"
    return group, []


def _rows(digest: Backlog, queue: str = "q") -> list[tuple[str, PodGroupPhase, str]]:
    line = digest.queues[QueueName(queue)]
    return [(row.name, row.phase, line.reasons[row.reason]) for row in line.jobs]


def test_a_queue_with_room_for_one_job_lists_the_other_two_first_come_first() -> None:
    jobs = [_unadmitted("a", 1), _unadmitted("b", 2), _unadmitted("c", 3)]
    queues = [make_queue("q", capability={"cpu": "2"})]
    result = run_session(snapshot([make_node("n0", cpu="8").obj()], jobs, queues=queues))
    # `a` is admitted (Inqueue, its pods not created yet): it no longer waits in the queue.
    assert _rows(result.backlog) == [("b", P, QUOTA), ("c", P, QUOTA)]
    line = result.backlog.queues[QueueName("q")]
    assert (line.total, line.reasons) == (2, (QUOTA,))  # the shared reason is written once


def test_admitted_jobs_waiting_for_nodes_come_before_unadmitted_ones() -> None:
    big = gang("big", 2, cpu="2")  # Inqueue, a gang of 2 x 2 CPUs on one 2-CPU node
    small = gang("small", 1, cpu="1")  # fits: placed, so it waits nowhere
    done = running("done", on=["n0"], cpu="0")
    early = make_podgroup("early", phase="Pending", minResources={"cpu": "4"})
    early["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"  # older than all
    result = run_session(
        snapshot([make_node("n0", cpu="2").obj()], [big, small, done, (early, [])])
    )
    rows = _rows(result.backlog, "default")
    assert [(name, phase) for name, phase, _ in rows] == [("big", Q), ("early", P)]
    # The PodGroup's own Unschedulable message (one pod would have fit, the gang did not).
    unfit = "0/1 nodes are available: 1 Insufficient cpu"
    assert rows[0][2] == f"1/2 tasks in gang unschedulable: {unfit}"
    assert rows[1][2] == "resource in cluster is overused"


def test_within_a_phase_higher_priority_first_then_older_first() -> None:
    jobs = [
        _unadmitted("a-new", 3),
        _unadmitted("z-old", 1),
        _unadmitted("m-urgent", 5, priorityClassName="high"),
    ]
    queues = [make_queue("q", capability={"cpu": "1"})]  # admits none of them
    snap = snapshot([make_node("n0").obj()], jobs, queues=queues, priority_classes=PRIORITY_CLASSES)
    rows = _rows(run_session(snap).backlog)
    assert [name for name, _, _ in rows] == ["m-urgent", "z-old", "a-new"]


@pytest.mark.parametrize(
    ("listed", "shown"), [(2, ["j0", "j1"]), (0, []), (9, [f"j{i}" for i in range(5)])]
)
def test_a_queue_lists_its_first_jobs_and_counts_them_all(listed: int, shown: list[str]) -> None:
    jobs = [_unadmitted(f"j{i}", i) for i in range(5)]
    queues = [make_queue("q", capability={"cpu": "1"})]
    snap = snapshot([make_node("n0").obj()], jobs, queues=queues)
    result = run_session(snap, SessionConfig(pending_listed=listed))
    line = result.backlog.queues[QueueName("q")]
    assert ([row.name for row in line.jobs], line.total) == (shown, 5)
    assert line.reasons == ((QUOTA,) if shown else ())


def test_nobody_waiting_leaves_the_digest_empty() -> None:
    result = run_session(snapshot([make_node("n0").obj()], [gang("a", 2)]))
    assert result.placements and result.backlog == Backlog()


LINE = QueueBacklog(
    total=7,
    reasons=("queue full", "no node fits"),
    jobs=(
        Waiting("team-a", "train", Q, 1),
        Waiting("team-b", "eval", P, 0),
        Waiting("team-a", "sweep", P, 0),
    ),
)
DIGEST = Backlog(queues={QueueName("research"): LINE})


def test_pending_jobs_resolves_positions_and_reasons() -> None:
    answer = backlog.pending_jobs(DIGEST, "research")
    assert answer.total == 7
    assert answer.jobs[1] == PendingJob(
        position=2, namespace="team-b", name="eval", phase=P, reason="queue full"
    )
    assert [j.position for j in answer.jobs] == [1, 2, 3]
    assert backlog.pending_jobs(DIGEST, "nope").model_dump() == {
        "queue": "nope",
        "total": 0,
        "jobs": (),
        "runs": 0,
        "median_s": None,
    }


def test_job_standing_finds_a_listed_job_and_nothing_else() -> None:
    assert backlog.job_standing(DIGEST, "team-a", "sweep") == JobStanding(
        namespace="team-a",
        name="sweep",
        queue="research",
        position=3,
        total=7,
        phase=P,
        reason="queue full",
    )
    assert backlog.job_standing(DIGEST, "team-b", "sweep") is None  # another namespace's


def test_named_puts_each_podgroups_job_name_in_its_row() -> None:
    digest = Backlog(
        queues={QueueName("q"): QueueBacklog.of([(JobKey("ns/train-uid1"), P, "x")], total=1)}
    )
    named = backlog.named(digest, {job_key("ns", "train-uid1"): "train"})
    assert named.queues[QueueName("q")].jobs == (Waiting("ns", "train", P, 0),)
    assert backlog.named(digest, {}) == digest  # no owner known: its own name


def test_a_thousand_waiting_one_pod_jobs_make_a_small_digest() -> None:
    """What a session reports for 1000 one-pod Volcano Jobs waiting in one queue: 100 rows, the
    count, the one shared reason once (its size is quoted in the user guide's "Where is my
    job")."""
    gangs, names = [], {}
    for i in range(1000):
        job = f"train-{i:04d}"
        group_name = f"{job}-{uuid.UUID(int=i)}"  # a Volcano Job's PodGroup: <job>-<uid>
        group = make_podgroup(group_name, namespace="team-a", queue="research")
        group["metadata"]["creationTimestamp"] = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        pod = make_pod(f"{job}-worker-0", group=group_name, namespace="team-a", cpu="2")
        gangs.append((group, [pod.obj()]))
        names[job_key("team-a", group_name)] = job
    snap = snapshot([make_node("n0", cpu="1").obj()], gangs, queues=[make_queue("research")])
    digest = backlog.named(run_session(snap).backlog, names)
    line = digest.queues[QueueName("research")]
    assert (line.total, len(line.jobs), len(line.reasons)) == (1000, 100, 1)
    assert line.jobs[0] == Waiting("team-a", "train-0000", Q, 0)
    text = digest.model_dump_json()
    assert len(text) < 4000, len(text)
    assert Backlog.model_validate_json(text) == digest
