"""The pod-failure back-off record and its delays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controllers.batchjob import backoff
from controllers.batchjob.state import Backoff, PodRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _pod(name: str, seconds: int) -> PodRecord:
    return PodRecord(name=name, uid=name, finished_at=T0 + timedelta(seconds=seconds))


@pytest.mark.parametrize(
    ("failures", "wait"),
    [
        pytest.param(0, 0, id="none"),
        pytest.param(1, 10, id="first"),
        pytest.param(2, 20, id="second"),
        pytest.param(3, 40, id="third"),
        pytest.param(6, 320, id="sixth"),
        pytest.param(7, 600, id="capped-at-10m"),
        pytest.param(30, 600, id="far-beyond-cap"),
    ],
)
def test_pod_failure_delay(failures: int, wait: int) -> None:
    got = backoff.delay(failures, backoff.POD_FAILURE_BASE, backoff.POD_FAILURE_CAP)
    assert got == timedelta(seconds=wait)


@pytest.mark.parametrize(
    ("failures", "wait"),
    [(1, 1), (2, 2), (6, 32), (7, 60), (12, 60)],
    ids=["1", "2", "6", "7-capped", "12-capped"],
)
def test_api_retry_delay(failures: int, wait: int) -> None:
    assert backoff.api_retry(failures) == timedelta(seconds=wait)


def test_failures_add_up_and_last_one_is_newest() -> None:
    old = Backoff(failures=1, last_failure=T0)
    got = backoff.record(old, [], [_pod("b", 30), _pod("a", 20)])
    assert got == Backoff(failures=3, last_failure=T0 + timedelta(seconds=30))


def test_success_resets_and_later_failures_count_again() -> None:
    old = Backoff(failures=4, last_failure=T0)
    got = backoff.record(old, [_pod("s", 15)], [_pod("early", 10), _pod("late", 20)])
    assert got == Backoff(failures=1, last_failure=T0 + timedelta(seconds=20))
    assert backoff.record(old, [_pod("s", 15)], []) == Backoff()


def test_nothing_new_keeps_the_record() -> None:
    old = Backoff(failures=2, last_failure=T0)
    assert backoff.record(old, [], []) is old


@pytest.mark.parametrize(
    ("failures", "elapsed", "left"),
    [(1, 4, 6), (2, 5, 15), (2, 20, 0), (2, 25, 0), (0, 0, 0)],
    ids=["1-after-4s", "2-after-5s", "2-exactly-due", "2-overdue", "no-failure"],
)
def test_remaining(failures: int, elapsed: int, left: int) -> None:
    now = T0 + timedelta(seconds=elapsed)
    assert backoff.remaining(failures, T0, now) == timedelta(seconds=left)
