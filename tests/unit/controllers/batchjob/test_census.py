"""What one sync counts: new and uncounted finished pods, expectations, indexes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from controllers.batchjob import census
from controllers.batchjob.state import PodRecord
from models.batchv1 import BatchJobStatus
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


def test_new_finished_pods_add_to_recorded_and_uncounted() -> None:
    got = counted(
        job(completions=6, parallelism=3),
        pod("done", phase="Succeeded"),
        failed("broke"),
        pod("running", phase="Running"),
        status=BatchJobStatus(
            succeeded=2, failed=1, uncounted_terminated_pods=Uncounted(succeeded=["old"])
        ),
    )
    assert [p.name for p in got.new_succeeded] == ["done"]
    assert [p.name for p in got.new_failed] == ["broke"]
    assert (got.succeeded, got.failed) == (2 + 1 + 1, 1 + 1)


@pytest.mark.parametrize(
    ("the_pod", "removing", "new_failed"),
    [
        pytest.param(failed("a"), (), ["a"], id="failed-counts"),
        pytest.param(failed("a", finalizer=False), (), [], id="finalizer-gone"),
        pytest.param(failed("a"), ("uid-a",), [], id="removal-in-flight"),
        pytest.param(failed("a", uid=None), (), [], id="not-observed"),
    ],
)
def test_only_tracked_pods_are_new(
    the_pod: PodRecord, removing: tuple[str, ...], new_failed: list[str]
) -> None:
    got = counted(job(), the_pod, removing=removing)
    assert [p.name for p in got.new_failed] == new_failed


def test_uncounted_pods_are_not_new_again() -> None:
    status = BatchJobStatus(uncounted_terminated_pods=Uncounted(failed=["uid-a"]))
    got = counted(job(), failed("a"), status=status)
    assert got.new_failed == () and got.failed == 1


def test_a_failure_the_policy_ignores_is_new_but_not_counted() -> None:
    disrupted = failed("a", conditions={"DisruptionTarget": "True"})
    got = counted(job(podFailurePolicy=IGNORE_DISRUPTION), disrupted)
    assert [p.name for p in got.new_failed] == ["a"] and got.failed == 0
    (judged,) = got.listed
    assert (judged.failed, judged.policy.counts) == (True, False)


def test_a_pod_deleted_while_running_is_judged_failed() -> None:
    got = counted(job(), pod("a", phase="Running", deleting=True))
    assert got.listed[0].failed and got.terminating == 1


@pytest.mark.parametrize(
    ("issued_seconds_ago", "kept"),
    [
        pytest.param(299, True, id="within-5m"),
        pytest.param(300, False, id="at-5m-forgotten"),
        pytest.param(900, False, id="long-gone"),
    ],
)
def test_creations_never_observed_are_forgotten_after_5_minutes(
    issued_seconds_ago: int, kept: bool
) -> None:
    now = at(1000)
    issued = pod("new", uid=None, issued_at=now - timedelta(seconds=issued_seconds_ago))
    got = counted(job(), issued, pod("seen", phase="Running"), now=now)
    assert ("new" in got.pods) is kept
    assert got.satisfied is not kept  # a creation still expected holds manageJob back


def test_observed_pods_are_kept_however_old() -> None:
    got = counted(job(), pod("seen", issued_at=T0), now=at(3600))
    assert list(got.pods) == ["seen"] and got.satisfied


def test_indexed_succeeded_counts_indexes_not_pods() -> None:
    spec = {"completionMode": "Indexed", "completions": 4, "parallelism": 4}
    got = counted(
        job(**spec),
        pod("i2", index=2, phase="Succeeded"),
        pod("i2-again", index=2, phase="Succeeded"),
        pod("i9", index=9, phase="Succeeded"),  # outside 0..3: not counted
        status=BatchJobStatus(completed_indexes="0"),
    )
    assert got.indexes == census.IndexCount(recorded=((0, 0),), succeeded=((0, 0), (2, 2)))
    assert got.succeeded == 2


def test_backoff_limit_per_index_counts_failed_indexes_and_the_pods_kept() -> None:
    spec = {
        "completionMode": "Indexed",
        "completions": 3,
        "parallelism": 3,
        "backoffLimitPerIndex": 1,
    }
    retry = failed("i0", index=0, failure_count=0, finished_at=at(5))
    used_up = failed("i1", index=1, failure_count=1)
    got = counted(job(**spec), retry, used_up)
    assert got.indexes.failed == ((1, 1),)
    assert got.indexes.delayed == {0: retry}  # index 0 retries: its pod waits for the next


def test_pod_counts_count_the_table_as_it_is() -> None:
    pods = {
        p.name: p
        for p in [
            pod("ready", phase="Running", ready=True),
            pod("starting", uid=None),
            pod("stopping", phase="Running", ready=True, deleting=True),
            pod("done", phase="Succeeded"),
        ]
    }
    got = census.pod_counts(BatchJobStatus(), pods)
    assert (got.active, got.ready, got.terminating) == (2, 1, 1)
