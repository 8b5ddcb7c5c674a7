"""Volcano's status functions (§3.6) on counted pods."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controllers.job import status as st
from controllers.job.transitions import StatusFn
from models.defaults import default_job
from models.vcjob import JobCondition, JobPhase, JobSpec, JobStatus
from tests.builders import make_job

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _spec(**spec: object) -> JobSpec:
    job = make_job("j").task("master").task("worker", replicas=2).spec(**spec).build()
    return default_job(job).spec


def _counts(**phases: int) -> st.Counts:
    return st.Counts(**phases)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        pytest.param(_counts(running=3), JobPhase.RUNNING, id="gang-running"),
        pytest.param(_counts(running=1, succeeded=1, failed=1), JobPhase.RUNNING, id="mixed"),
        pytest.param(_counts(running=2, pending=1), None, id="gang-incomplete"),
    ],
)
def test_pending(counts: st.Counts, expected: JobPhase | None) -> None:
    assert st.next_phase(StatusFn.PENDING, None, _spec(), JobStatus(), counts) == expected


@pytest.mark.parametrize(
    ("spec", "counts", "expected"),
    [
        pytest.param({}, _counts(succeeded=3), JobPhase.COMPLETED, id="all-succeeded"),
        pytest.param(
            {"minAvailable": 1},
            _counts(
                succeeded=1, failed=2, by_task={"master": {"Succeeded": 1}, "worker": {"Failed": 2}}
            ),
            JobPhase.COMPLETED,
            id="enough-succeeded",
        ),
        pytest.param(
            {},
            _counts(
                succeeded=2, failed=1, by_task={"master": {"Failed": 1}, "worker": {"Succeeded": 2}}
            ),
            JobPhase.FAILED,
            id="task-minAvailable-not-met",
        ),
        pytest.param(
            {"minSuccess": 2},
            _counts(succeeded=2, running=1),
            JobPhase.COMPLETED,
            id="minSuccess-reached",
        ),
        pytest.param(
            {"minSuccess": 3, "minAvailable": 1},
            _counts(succeeded=2, failed=1),
            JobPhase.FAILED,
            id="minSuccess-missed",
        ),
        pytest.param({}, _counts(running=2, pending=1), JobPhase.PENDING, id="gang-lost"),
        pytest.param({"minAvailable": 2}, _counts(running=2, pending=1), None, id="gang-kept"),
        pytest.param({}, _counts(running=3), None, id="still-running"),
    ],
)
def test_running(spec: dict[str, object], counts: st.Counts, expected: JobPhase | None) -> None:
    assert st.next_phase(StatusFn.RUNNING, None, _spec(**spec), JobStatus(), counts) == expected


def test_running_scaled_to_zero_keeps_phase() -> None:
    spec = default_job(make_job("j").task("w", replicas=0).build()).spec
    assert st.next_phase(StatusFn.RUNNING, None, spec, JobStatus(), _counts()) is None


@pytest.mark.parametrize(
    ("retry", "terminating", "expected"),
    [
        pytest.param(3, 0, JobPhase.FAILED, id="maxRetry-reached"),
        pytest.param(1, 0, JobPhase.PENDING, id="pods-gone"),
        pytest.param(1, 1, None, id="still-terminating"),
    ],
)
def test_restarting(retry: int, terminating: int, expected: JobPhase | None) -> None:
    status = JobStatus(retry_count=retry, min_available=3)
    counts = _counts(terminating=terminating)
    assert st.next_phase(StatusFn.RESTARTING, None, _spec(), status, counts) == expected


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        pytest.param(_counts(), JobPhase.ABORTED, id="drained"),
        pytest.param(_counts(succeeded=2, failed=1), JobPhase.ABORTED, id="only-finished-left"),
        pytest.param(_counts(terminating=1), None, id="terminating"),
        pytest.param(_counts(running=1), None, id="running"),
    ],
)
def test_drain(counts: st.Counts, expected: JobPhase | None) -> None:
    result = st.next_phase(StatusFn.DRAIN, JobPhase.ABORTED, _spec(), JobStatus(), counts)
    assert result == expected


def test_transition_keeps_one_condition_per_phase_most_recent_last() -> None:
    earlier = datetime(2025, 1, 1, tzinfo=UTC)
    status = JobStatus(
        conditions=[
            JobCondition(status=JobPhase.PENDING, last_transition_time=earlier),
            JobCondition(status=JobPhase.RUNNING, last_transition_time=earlier),
        ]
    )
    after = st.transition(status, JobPhase.PENDING, NOW, "GangLost", "1 pod pending")
    assert [(c.status, c.last_transition_time) for c in after.conditions or []] == [
        (JobPhase.RUNNING, earlier),
        (JobPhase.PENDING, NOW),
    ]
    assert after.state is not None
    assert (after.state.reason, after.state.message) == ("GangLost", "1 pod pending")


def test_counts_group_unknown_phases() -> None:
    counts = st.Counts.of([("a", "Running"), ("a", "Weird"), ("b", "Pending")], terminating=2)
    assert (counts.running, counts.unknown, counts.pending, counts.terminating) == (1, 1, 1, 2)
    assert counts.by_task == {"a": {"Running": 1, "Weird": 1}, "b": {"Pending": 1}}
