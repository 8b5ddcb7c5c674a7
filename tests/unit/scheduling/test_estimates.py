"""A session's estimates of when its waiting jobs start (`framework.estimates`, carried by the
backlog digest): the queue's record read from its completed pods, its running jobs ending as
that record says, the line starting in order as room comes back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.keys import QueueName
from scheduling.actions.registry import run_session
from scheduling.api import backlog
from scheduling.api.backlog import GRAIN
from scheduling.api.snapshot import Snapshot
from tests.unit.scheduling.builders import gang, make_node, make_pod, make_podgroup, snapshot
from tests.unit.scheduling.builders import running as running_gang

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


def _finished(
    name: str, ran: float, ended_ago: float
) -> tuple[dict[str, object], list[dict[str, object]]]:
    """A completed one-pod job that ran `ran` seconds and ended `ended_ago` seconds ago."""
    group = make_podgroup(name, phase="Completed")
    pod = make_pod(f"{name}-worker-0", group=name).on("n0", phase="Succeeded").obj()
    pod["status"]["startTime"] = _at(ended_ago + ran)
    pod["status"]["containerStatuses"] = [
        {"name": "main", "state": {"terminated": {"finishedAt": _at(ended_ago)}}}
    ]
    return group, [pod]


def _cluster(*, history: bool, started_ago: float = 30.0) -> Snapshot:
    busy_group, busy_pods = running_gang("busy", ["n0"], cpu="4")
    busy_pods[0]["status"]["startTime"] = _at(started_ago)
    done = (
        [_finished(f"done-{i}", ran=100.0, ended_ago=500.0 + i) for i in range(3)]
        if history
        else []
    )
    return snapshot(
        [make_node("n0", cpu="4").obj()],
        [(busy_group, busy_pods), *done, gang("first", 1, cpu="4"), gang("second", 1, cpu="4")],
        now=NOW,
    )


def test_a_waiting_job_is_expected_when_the_running_one_ends_as_the_queue_s_record_says() -> None:
    answer = backlog.pending_jobs(run_session(_cluster(history=True)).backlog, "default")
    assert (answer.runs, answer.median_s) == (3, 100.0)
    first, second = answer.jobs
    # busy started 30 s ago and the queue's runs take 100 s: first in 70 s, second 100 s after it.
    assert first.name == "first" and first.estimated_start == NOW + timedelta(seconds=70)
    assert second.estimated_start == NOW + timedelta(seconds=170)


def test_the_same_expectation_read_a_session_later_is_the_same_time() -> None:
    earlier = backlog.pending_jobs(
        run_session(_cluster(history=True, started_ago=30.0)).backlog, "default"
    )
    later_snapshot = _cluster(history=True, started_ago=33.0).model_copy(
        update={"now": NOW + timedelta(seconds=3)}
    )
    later = backlog.pending_jobs(run_session(later_snapshot).backlog, "default")
    assert earlier.jobs[0].estimated_start == later.jobs[0].estimated_start
    at = earlier.jobs[0].estimated_start
    assert at is not None and at.timestamp() % GRAIN == 0


def test_without_a_finished_job_in_the_queue_there_is_no_estimate_and_the_digest_says_why() -> None:
    digest = run_session(_cluster(history=False)).backlog
    line = digest.queues[QueueName("default")]
    assert line.starts == () and line.runs == 0
    assert all(j.estimated_start is None for j in backlog.pending_jobs(digest, "default").jobs)


def test_a_completed_job_whose_podgroup_is_gone_still_counts_by_its_pods_queue() -> None:
    # A Volcano Job that completes loses its PodGroup; its pods stay, naming their queue.
    _, (pod,) = _finished("gone", ran=100.0, ended_ago=400.0)
    pod["metadata"].setdefault("annotations", {})["volcano.sh/queue-name"] = "default"
    busy_group, busy_pods = running_gang("busy", ["n0"], cpu="4")
    busy_pods[0]["status"]["startTime"] = _at(30.0)
    snap = snapshot(
        [make_node("n0", cpu="4").obj()],
        [(busy_group, busy_pods), gang("first", 1, cpu="4")],
        pods=[pod],
        now=NOW,
    )
    answer = backlog.pending_jobs(run_session(snap).backlog, "default")
    assert (answer.runs, answer.median_s) == (1, 100.0)
    assert answer.jobs[0].estimated_start == NOW + timedelta(seconds=70)


def test_a_running_pod_s_active_deadline_ends_it_sooner_than_the_record_says() -> None:
    # busy started 30 s ago; the kubelet ends it at 40 s, before the record's 100 s.
    busy_group, busy_pods = running_gang("busy", ["n0"], cpu="4")
    busy_pods[0]["status"]["startTime"] = _at(30.0)
    busy_pods[0]["spec"]["activeDeadlineSeconds"] = 40
    done = [_finished(f"done-{i}", ran=100.0, ended_ago=500.0 + i) for i in range(3)]
    snap = snapshot(
        [make_node("n0", cpu="4").obj()],
        [(busy_group, busy_pods), *done, gang("first", 1, cpu="4")],
        now=NOW,
    )
    (first,) = backlog.pending_jobs(run_session(snap).backlog, "default").jobs
    assert first.estimated_start == NOW + timedelta(seconds=10)
