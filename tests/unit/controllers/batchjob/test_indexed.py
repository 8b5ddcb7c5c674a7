"""Indexed Jobs: succeeded indexes, the pod each index keeps, each index's own back-off."""

from __future__ import annotations

from datetime import timedelta

import pytest

from controllers.batchjob import indexed
from controllers.batchjob.state import PodRecord
from tests.unit.controllers.batchjob.records import T0, at, failed, job, pod

INDEXED = job(completionMode="Indexed", completions=4, parallelism=4)
PER_INDEX = job(completionMode="Indexed", completions=4, parallelism=4, backoffLimitPerIndex=2)


def test_succeeded_indexes_add_tracked_pods_to_the_recorded() -> None:
    pods = [
        pod("i1", index=1, phase="Succeeded"),
        pod("i2", index=2, phase="Succeeded", finalizer=False),  # counted already
        pod("i3", index=3, phase="Running"),
    ]
    assert indexed.succeeded_indexes(INDEXED, pods, "0") == (((0, 0),), ((0, 1),))


def test_the_latest_failed_pod_of_each_index_still_to_run_is_kept() -> None:
    older = failed("i0-a", index=0, failure_count=0, finished_at=at(1))
    newer = failed("i0-b", index=0, failure_count=1, finished_at=at(5))
    rerun = failed("i1-a", index=1, finished_at=at(2))
    pods = [older, newer, rerun, pod("i1-b", index=1, phase="Running")]
    got = indexed.delayed_deletion_per_index(PER_INDEX, pods, set(), (), ())
    assert got == {0: newer}  # index 1 runs again already


@pytest.mark.parametrize(
    ("kept", "now", "wait"),
    [
        pytest.param(None, 0, 0, id="never-failed"),
        pytest.param(failed("a", index=0, finished_at=T0), 4, 6, id="first-failure-10s"),
        pytest.param(failed("a", index=0, failure_count=1, finished_at=T0), 4, 16, id="second-20s"),
        pytest.param(
            failed("a", index=0, ignored_failure_count=1, finished_at=T0),
            4,
            16,
            id="ignored-failures-back-off-too",
        ),
        pytest.param(failed("a", index=0, finished_at=T0), 30, 0, id="over"),
    ],
)
def test_index_backoff_remaining(kept: PodRecord | None, now: int, wait: int) -> None:
    assert indexed.index_backoff_remaining(kept, at(now)) == timedelta(seconds=wait)


def test_ready_indexes_or_the_shortest_wait() -> None:
    delayed = {
        0: failed("a", index=0, finished_at=T0),
        1: failed("b", index=1, failure_count=1, finished_at=T0),
    }
    assert indexed.ready_indexes([0, 1, 2], delayed, at(4)) == ([2], timedelta(0))
    assert indexed.ready_indexes([0, 1], delayed, at(4)) == ([], timedelta(seconds=6))


@pytest.mark.parametrize(
    ("pods", "count", "expected"),
    [
        pytest.param([], 2, [0, 1], id="lowest-first"),
        pytest.param([pod("a", index=0, phase="Running")], 4, [1, 3], id="skip-active"),
        pytest.param([], 0, [], id="none-wanted"),
    ],
)
def test_first_pending_indexes(pods: list[PodRecord], count: int, expected: list[int]) -> None:
    succeeded = ((2, 2),)
    assert indexed.first_pending_indexes(INDEXED, pods, count, succeeded, None) == expected
