"""The Temporal Schedule a CronJob stands for, as plain data. Pure.

- The cron fields become calendar specs. Temporal matches a time when every field matches, so
  a schedule whose two day fields are both restricted (cron's "either day") becomes two
  calendars, one per day field; `@every` becomes an interval anchored at the CronJob's
  creation, as Volcano counts it from there.
- The zone is the schedule's `TZ=`/`CRON_TZ=` prefix (it wins over `timeZone`, as in Volcano),
  else `timeZone`, else UTC.
- concurrencyPolicy → overlap policy: Allow → AllowAll; Forbid → BufferAll (no second run
  while one runs; the held-back runs start once it ends and each asks the CronJob whether it
  is still due, so at most the most recent one makes a Job, as Volcano starts a skipped time
  late when the active Job finishes); Replace → CancelOther (the running run is cancelled and
  deletes its Job before the new one starts).
- startingDeadlineSeconds → catch-up window (Temporal's minimum is 10 s; the run's own check
  against its scheduled time enforces the exact deadline); none → a year, Temporal's default.
- suspend → paused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from controllers.cronjob import cron
from models.cronjob import ConcurrencyPolicy, CronJob

MIN_CATCHUP: Final = timedelta(seconds=10)
DEFAULT_CATCHUP: Final = timedelta(days=365)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class Overlap(StrEnum):
    ALLOW_ALL = "AllowAll"
    BUFFER_ALL = "BufferAll"
    CANCEL_OTHER = "CancelOther"


OVERLAP: Final = {
    ConcurrencyPolicy.ALLOW: Overlap.ALLOW_ALL,
    ConcurrencyPolicy.FORBID: Overlap.BUFFER_ALL,
    ConcurrencyPolicy.REPLACE: Overlap.CANCEL_OTHER,
}


class Calendar(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    minute: list[int]
    hour: list[int]
    day_of_month: list[int]
    month: list[int]
    day_of_week: list[int]


class SchedulePlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    calendars: list[Calendar] = Field(default_factory=list)
    every: timedelta | None = None  # None: a calendar schedule
    offset: timedelta = timedelta(0)  # of the interval from the epoch
    time_zone: str = "UTC"
    overlap: Overlap = Overlap.ALLOW_ALL
    catchup: timedelta = DEFAULT_CATCHUP
    paused: bool = False
    comment: str = ""  # the cron text, shown with the schedule


def zone_name(cj: CronJob, parsed: cron.Cron) -> str:
    return parsed.zone or cj.spec.time_zone or "UTC"


def origin(cj: CronJob) -> datetime:
    """Where an `@every` schedule counts from: the CronJob's creation."""
    created = cj.metadata.creation_timestamp
    return created.replace(microsecond=0) if created is not None else _EPOCH


def plan(cj: CronJob, parsed: cron.Cron) -> SchedulePlan:
    spec = cj.spec
    deadline = spec.starting_deadline_seconds
    base = SchedulePlan(
        time_zone=zone_name(cj, parsed),
        overlap=OVERLAP[spec.concurrency_policy],
        catchup=DEFAULT_CATCHUP
        if deadline is None
        else max(MIN_CATCHUP, timedelta(seconds=deadline)),
        paused=spec.suspended,
        comment=spec.schedule,
    )
    if parsed.every is not None:
        offset = (origin(cj) - _EPOCH) % parsed.every
        return base.model_copy(update={"every": parsed.every, "offset": offset})
    return base.model_copy(update={"calendars": _calendars(parsed)})


def _calendars(parsed: cron.Cron) -> list[Calendar]:
    base = {
        "minute": sorted(parsed.minutes),
        "hour": sorted(parsed.hours),
        "month": sorted(parsed.months),
    }
    days, weekdays = sorted(parsed.days), sorted(parsed.weekdays)
    if not parsed.either_day:
        return [Calendar(day_of_month=days, day_of_week=weekdays, **base)]
    return [
        Calendar(day_of_month=days, day_of_week=list(range(7)), **base),
        Calendar(day_of_month=list(range(1, 32)), day_of_week=weekdays, **base),
    ]
