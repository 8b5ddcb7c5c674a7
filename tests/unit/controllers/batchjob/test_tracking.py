"""Counting finished pods through uncountedTerminatedPods and the finalizer, then Complete or
Failed."""

from __future__ import annotations

from typing import Any

import pytest

from controllers import effects as fx
from controllers.batchjob import conditions, tracking
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import PodRecord
from models.batchv1 import BatchJob, BatchJobStatus, ConditionType, JobCondition, Reason
from models.batchv1 import UncountedTerminatedPods as Uncounted
from tests.unit.controllers.batchjob.records import (
    IGNORE_DISRUPTION,
    T0,
    at,
    counted,
    failed,
    job,
    pod,
)

STARTED = BatchJobStatus(start_time=T0, active=0, ready=0, terminating=0)
FAILING = conditions.failure_target(Reason.BACKOFF_LIMIT_EXCEEDED, "too many", T0)
SUCCEEDING = conditions.completions_reached(T0)


def _track(
    the_job: BatchJob,
    *pods: PodRecord,
    status: BatchJobStatus = STARTED,
    finishing: JobCondition | None = None,
    removing: tuple[str, ...] = (),
    now: int = 0,
) -> tracking.Tracked:
    seen = counted(the_job, *pods, status=status, removing=removing)
    return tracking.track(the_job, status, finishing, seen, at(now))


def _types(status: BatchJobStatus) -> list[tuple[str, str]]:
    return [(c.type, c.status) for c in status.conditions or []]


def test_finished_pods_are_uncounted_and_written_before_their_finalizers_go() -> None:
    tracked = _track(
        job(completions=3, parallelism=3),
        pod("a", phase="Succeeded"),
        failed("b"),
        pod("c", phase="Running"),
    )
    assert tracked.status.uncounted_terminated_pods == Uncounted(
        succeeded=["uid-a"], failed=["uid-b"]
    )
    assert tracked.remove == {"a": "uid-a", "b": "uid-b"}
    assert tracked.removing == ("uid-a", "uid-b")
    assert tracking.effects(None, tracked) == [
        batch_fx.WriteStatus(status=tracked.status, summary="count finished pods"),
        batch_fx.RemoveFinalizers(pods={"a": "uid-a", "b": "uid-b"}, why="finished pods counted"),
    ]


def test_uncounted_pods_whose_finalizer_is_gone_move_to_the_counters() -> None:
    status = STARTED.model_copy(
        update={
            "succeeded": 1,
            "uncounted_terminated_pods": Uncounted(succeeded=["gone-a"], failed=["gone-b"]),
        }
    )
    tracked = _track(job(completions=3, parallelism=3), status=status)
    got = tracked.status
    assert (got.succeeded, got.failed, got.uncounted_terminated_pods) == (2, 1, Uncounted())
    assert tracking.effects(None, tracked) == [
        batch_fx.WriteStatus(status=got, summary="Running: active 0, succeeded 2, failed 1")
    ]


def test_an_uncounted_pod_holding_its_finalizer_stays_uncounted_and_is_released_again() -> None:
    status = STARTED.model_copy(
        update={"uncounted_terminated_pods": Uncounted(succeeded=["uid-a"])}
    )
    tracked = _track(job(), pod("a", phase="Succeeded"), status=status)
    assert tracked.status.uncounted_terminated_pods == Uncounted(succeeded=["uid-a"])
    assert (tracked.status.succeeded, tracked.remove) == (None, {"a": "uid-a"})


def test_a_finalizer_removal_in_flight_counts_the_pod() -> None:
    status = STARTED.model_copy(
        update={"uncounted_terminated_pods": Uncounted(succeeded=["uid-a"])}
    )
    tracked = _track(job(), pod("a", phase="Succeeded"), status=status, removing=("uid-a",))
    got = tracked.status
    assert (got.succeeded, got.uncounted_terminated_pods, tracked.remove) == (1, Uncounted(), {})
    assert tracked.removing == ("uid-a",)  # until the pod is seen without it


PER_INDEX = {"completionMode": "Indexed", "completions": 2, "parallelism": 2}


@pytest.mark.parametrize(
    ("spec", "the_pod", "finishing", "removed", "uncounted"),
    [
        pytest.param({}, pod("a", phase="Running"), None, False, Uncounted(), id="running-kept"),
        pytest.param(
            {},
            pod("a", phase="Running"),
            FAILING,
            True,
            Uncounted(failed=["uid-a"]),
            id="failing-job-counts-it-failed",
        ),
        pytest.param(
            {}, pod("a", phase="Running"), SUCCEEDING, True, Uncounted(), id="succeeding-job"
        ),
        pytest.param(
            {"podFailurePolicy": IGNORE_DISRUPTION},
            failed("a", conditions={"DisruptionTarget": "True"}),
            None,
            True,
            Uncounted(),
            id="ignored-failure-not-counted",
        ),
        pytest.param(
            {**PER_INDEX, "backoffLimitPerIndex": 1},
            failed("a", index=0),
            None,
            False,
            Uncounted(),
            id="per-index-retry-kept-for-its-replacement",
        ),
        pytest.param(
            {**PER_INDEX, "backoffLimitPerIndex": 0},
            failed("a", index=0),
            None,
            True,
            Uncounted(failed=["uid-a"]),
            id="per-index-failed-index-released",
        ),
    ],
)
def test_which_finalizers_go(
    spec: dict[str, Any],
    the_pod: PodRecord,
    finishing: JobCondition | None,
    removed: bool,
    uncounted: Uncounted,
) -> None:
    tracked = _track(job(**spec), the_pod, finishing=finishing)
    assert (bool(tracked.remove), tracked.status.uncounted_terminated_pods) == (removed, uncounted)


def test_a_job_being_deleted_releases_every_pod() -> None:
    the_job = job()
    meta = the_job.metadata.model_copy(update={"deletion_timestamp": T0})
    tracked = _track(the_job.model_copy(update={"metadata": meta}), pod("a", phase="Running"))
    assert tracked.remove == {"a": "uid-a"}


def test_indexed_succeeded_pods_count_as_indexes() -> None:
    spec = {"completionMode": "Indexed", "completions": 3, "parallelism": 3}
    status = STARTED.model_copy(update={"completed_indexes": "0"})
    tracked = _track(job(**spec), pod("i2", index=2, phase="Succeeded"), status=status)
    got = tracked.status
    assert (got.completed_indexes, got.succeeded, got.failed_indexes) == ("0,2", 2, None)
    assert got.uncounted_terminated_pods == Uncounted() and tracked.remove == {"i2": "uid-i2"}


def test_at_most_500_pods_are_uncounted_per_sync() -> None:
    pods = [pod(f"p{i:03d}", phase="Succeeded") for i in range(600)]
    tracked = _track(job(completions=600, parallelism=600), *pods)
    assert len(tracked.remove) == 500 and list(tracked.remove)[-1] == "p499"


def test_failure_target_then_failed_once_nothing_is_left() -> None:
    tracked = _track(job(), finishing=FAILING, now=3)
    assert _types(tracked.status) == [("FailureTarget", "True"), ("Failed", "True")]
    assert tracked.status.condition(ConditionType.FAILED) == conditions.new(
        "Failed", "BackoffLimitExceeded", "too many", at(3)
    )
    assert tracked.events == (
        fx.RecordEvent(type="Warning", reason="BackoffLimitExceeded", message="too many"),
    )
    assert tracked.status.completion_time is None


def test_complete_sets_completion_time_and_says_completed() -> None:
    status = STARTED.model_copy(update={"succeeded": 1})
    tracked = _track(job(), status=status, finishing=SUCCEEDING, now=4)
    assert _types(tracked.status) == [("SuccessCriteriaMet", "True"), ("Complete", "True")]
    assert tracked.status.completion_time == at(4)
    assert tracked.events == (fx.RecordEvent(reason="Completed", message="Job completed"),)


def test_too_many_succeeded_pods_are_warned_about() -> None:
    status = STARTED.model_copy(update={"succeeded": 3})
    tracked = _track(job(completions=2, parallelism=2), status=status, finishing=SUCCEEDING)
    assert [e.reason for e in tracked.events] == ["TooManySucceededPods", "Completed"]


@pytest.mark.parametrize(
    ("status", "pods"),
    [
        pytest.param(STARTED.model_copy(update={"terminating": 1}), [], id="pod-terminating"),
        pytest.param(STARTED, [pod("a", phase="Succeeded")], id="pod-still-uncounted"),
    ],
)
def test_failed_waits_for_terminating_and_uncounted_pods(
    status: BatchJobStatus, pods: list[PodRecord]
) -> None:
    tracked = _track(job(), *pods, status=status, finishing=FAILING)
    assert _types(tracked.status) == [("FailureTarget", "True")]
    assert tracked.events == ()


def test_a_status_already_written_is_not_written_again() -> None:
    tracked = _track(job(), pod("a", phase="Running"))
    assert tracking.effects(tracked.status, tracked) == []


@pytest.mark.parametrize(
    ("conds", "start", "phase"),
    [
        pytest.param([], None, "Pending", id="pending"),
        pytest.param([], T0, "Running", id="running"),
        pytest.param(["Suspended"], None, "Suspended", id="suspended"),
        pytest.param(["FailureTarget"], T0, "Failing", id="failing"),
        pytest.param(["SuccessCriteriaMet"], T0, "Completing", id="completing"),
        pytest.param(["SuccessCriteriaMet", "Complete"], T0, "Complete", id="complete"),
        pytest.param(["FailureTarget", "Failed"], T0, "Failed", id="failed"),
    ],
)
def test_phase(conds: list[str], start: Any, phase: str) -> None:
    status = BatchJobStatus(
        start_time=start, conditions=[conditions.new(c, "R", "m", T0) for c in conds] or None
    )
    assert tracking.phase(status) == phase
