"""Job conditions as the built-in controller writes them. Pure.

Times have whole seconds, as a metav1.Time keeps them; messages and reasons are the
controller's own strings, so a user comparing a Caldera Job with a built-in one sees the same.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from controllers import effects as fx
from models.batchv1 import BatchJobStatus, ConditionType, JobCondition, Reason

BACKOFF_LIMIT_MESSAGE: Final = "Job has reached the specified backoff limit"
DEADLINE_MESSAGE: Final = "Job was active longer than specified deadline"
MAX_FAILED_INDEXES_MESSAGE: Final = (
    "Job has exceeded the specified maximal number of failed indexes"
)
FAILED_INDEXES_MESSAGE: Final = "Job has failed indexes"
COMPLETIONS_MESSAGE: Final = "Reached expected number of succeeded pods"


def seconds(now: datetime) -> datetime:
    """A time as the apiserver stores it (RFC 3339, whole seconds)."""
    return now.replace(microsecond=0)


def next_second(at: datetime) -> datetime:
    """The first whole second not before `at`: when a sync, which sees time in whole seconds,
    will find a deadline at `at` passed."""
    whole = seconds(at)
    return whole if whole == at else whole + timedelta(seconds=1)


def new(type_: str, reason: str, message: str, now: datetime, status: str = "True") -> JobCondition:
    at = seconds(now)
    return JobCondition(
        type=type_,
        status="True" if status == "True" else "False",
        last_probe_time=at,
        last_transition_time=at,
        reason=reason,
        message=message,
    )


def failure_target(reason: Reason, message: str, now: datetime) -> JobCondition:
    return new(ConditionType.FAILURE_TARGET, reason, message, now)


def completions_reached(now: datetime) -> JobCondition:
    return new(
        ConditionType.SUCCESS_CRITERIA_MET, Reason.COMPLETIONS_REACHED, COMPLETIONS_MESSAGE, now
    )


def ensure(
    conditions: list[JobCondition],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> tuple[list[JobCondition], bool]:
    """ensureJobConditionStatus: update the condition of this type if anything differs, or
    append it unless it would be a new False one; returns the list and whether it changed."""
    out = list(conditions)
    for i, c in enumerate(out):
        if c.type == type_:
            if c.status != status or c.reason != reason or c.message != message:
                out[i] = new(type_, reason, message, now, status)
                return out, True
            return out, False
    if status == "False":
        return out, False
    return [*out, new(type_, reason, message, now, status)], True


def suspension(
    status: BatchJobStatus, suspended: bool, now: datetime
) -> tuple[BatchJobStatus, tuple[fx.RecordEvent, ...]]:
    """Suspended=True ("JobSuspended", startTime cleared) or, on resume, Suspended=False
    ("JobResumed", startTime reset to now: activeDeadlineSeconds counts from the resume);
    an event only when the condition changed."""
    current = list(status.conditions or [])
    if suspended:
        found, changed = ensure(
            current, ConditionType.SUSPENDED, "True", Reason.JOB_SUSPENDED, "Job suspended", now
        )
        if not changed:
            return status, ()
        update = {"conditions": found, "start_time": None}
        event = fx.RecordEvent(reason="Suspended", message="Job suspended")
        return status.model_copy(update=update), (event,)
    found, changed = ensure(
        current, ConditionType.SUSPENDED, "False", Reason.JOB_RESUMED, "Job resumed", now
    )
    if not changed:
        return status, ()
    event = fx.RecordEvent(reason="Resumed", message="Job resumed")
    return status.model_copy(update={"conditions": found, "start_time": now}), (event,)
