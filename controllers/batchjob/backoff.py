"""The pod-failure back-off before failed pods are re-created, and the API back-off. Pure.

The built-in controller (1.37) keeps, per Job, the failures since the last success and the
finish time of the last one; pods are re-created no sooner than 10 s x 2^(failures-1) after
it, capped at 10 minutes. A success resets the count, and failures that finished after the
last success count again. That record lives in process memory there (a controller restart
forgets it); here it is workflow state and the wait is a durable timer.

API errors (a pod that could not be created, a finalizer that could not be removed) are
retried like the controller's rate-limited work queue: 1 s doubling up to 1 minute.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

from controllers.batchjob.state import Backoff, PodRecord

POD_FAILURE_BASE: Final = timedelta(seconds=10)
POD_FAILURE_CAP: Final = timedelta(minutes=10)
API_BASE: Final = timedelta(seconds=1)
API_CAP: Final = timedelta(minutes=1)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def finished_at(pod: PodRecord) -> datetime:
    """When the pod finished; its creation when nothing better is known (as the controller)."""
    return pod.finished_at or pod.created_at or _EPOCH


def record(old: Backoff, succeeded: Sequence[PodRecord], failed: Sequence[PodRecord]) -> Backoff:
    """The record after this sync's newly finished pods (newBackoffRecord)."""
    failed = sorted(failed, key=finished_at)
    if not succeeded:
        if not failed:
            return old
        return Backoff(failures=old.failures + len(failed), last_failure=finished_at(failed[-1]))
    last_success = max(finished_at(p) for p in succeeded)
    after = [p for p in failed if finished_at(p) > last_success]
    if not after:
        return Backoff()
    return Backoff(failures=len(after), last_failure=finished_at(after[-1]))


def delay(failures: int, base: timedelta, cap: timedelta) -> timedelta:
    """base x 2^(failures-1), capped; zero for no failure."""
    if failures <= 0:
        return timedelta(0)
    wait = base
    for _ in range(1, failures):
        wait *= 2
        if wait >= cap:
            return cap
    return wait


def remaining(failures: int, last_failure: datetime | None, now: datetime) -> timedelta:
    """How long pod creation must still wait; zero when it may go ahead."""
    if failures <= 0 or last_failure is None:
        return timedelta(0)
    wait = delay(failures, POD_FAILURE_BASE, POD_FAILURE_CAP)
    elapsed = now - last_failure
    return timedelta(0) if wait < elapsed else wait - elapsed


def api_retry(failures: int) -> timedelta:
    return delay(failures, API_BASE, API_CAP)
