"""Cron schedules as Volcano's CronJob controller reads them, and their times. Pure.

Volcano parses with robfig/cron's standard parser: five fields (minute, hour, day of month,
month, day of week), month and weekday names, `*` and `?`, ranges, steps (`N/step` runs to the
field's end), the descriptors @yearly/@annually, @monthly, @weekly, @daily/@midnight, @hourly
and `@every <duration>`, and a leading `TZ=<zone>` or `CRON_TZ=<zone>`. No seconds field. When
both day fields are restricted (neither starts with `*` or `?` without a step above 1), a day
matches either; otherwise both. The same rules parse the schedule for the webhook and compute
the times the controller needs (the next run after one, the most recent one missed), so what is
admitted is what runs.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from models import duration

MINUTE: Final = timedelta(minutes=1)
_BOUNDS: Final = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_MONTHS: Final = {
    n: i + 1
    for i, n in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DAYS: Final = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_NAMES: Final[tuple[dict[str, int], ...]] = ({}, {}, {}, _MONTHS, _DAYS)
_DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_HORIZON: Final = 5  # years searched for a next time (robfig gives up after five)
_WINDOWS: Final = (
    timedelta(minutes=1),
    timedelta(hours=1),
    timedelta(days=1),
    timedelta(days=32),
    timedelta(days=367),
    timedelta(days=5 * 366),
)


class CronError(ValueError):
    """The schedule does not parse; the message says why, as robfig's parser does."""


@dataclasses.dataclass(frozen=True)
class Cron:
    """A parsed schedule: five value sets, or a constant delay (`@every`)."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()  # of the month
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()  # 0 is Sunday
    either_day: bool = False  # both day fields restricted: a day matches if either does
    every: timedelta | None = None  # None: a calendar schedule
    zone: str | None = None  # from a TZ= or CRON_TZ= prefix; None: none given

    def day_matches(self, day: datetime) -> bool:
        dom, dow = day.day in self.days, (day.isoweekday() % 7) in self.weekdays
        return (dom or dow) if self.either_day else (dom and dow)


def parse(text: str) -> Cron:
    spec = text.strip()
    zone: str | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        head, _, rest = spec.partition(" ")
        zone = head.partition("=")[2]
        if load_zone(zone) is None:
            raise CronError(f"provided bad location {zone}")
        spec = rest.strip()
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith("@every "):
        return Cron(every=_every(spec.removeprefix("@every ").strip()), zone=zone)
    if spec.startswith("@"):
        if spec not in _DESCRIPTORS:
            raise CronError(f"unrecognized descriptor: {spec}")
        spec = _DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: {spec}")
    sets = [_field(f, _BOUNDS[i], _NAMES[i]) for i, f in enumerate(fields)]
    return Cron(
        minutes=sets[0][0],
        hours=sets[1][0],
        days=sets[2][0],
        months=sets[3][0],
        weekdays=sets[4][0],
        either_day=not (sets[2][1] or sets[4][1]),
        zone=zone,
    )


def _every(text: str) -> timedelta:
    try:
        delay = duration.parse_duration(text)
    except ValueError as e:
        raise CronError(f"failed to parse duration {text}: {e}") from e
    if delay < timedelta(seconds=1):
        return timedelta(seconds=1)  # robfig's minimum
    return timedelta(seconds=int(delay.total_seconds()))  # whole seconds, as robfig truncates


def _number(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.lstrip("-").isdigit() or not text.isascii():
        raise CronError(f"failed to parse int from {text}")
    value = int(text)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _field(
    text: str, bounds: tuple[int, int], names: dict[str, int]
) -> tuple[frozenset[int], bool]:
    """The values of one field, and whether it counts as `*` for the day rule."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        got, part_star = _range(part, bounds, names)
        values |= got
        star = star or part_star
    return frozenset(values), star


def _range(expr: str, bounds: tuple[int, int], names: dict[str, int]) -> tuple[set[int], bool]:
    low, high = bounds
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    star = low_high[0] in ("*", "?")
    if star:
        start, end = low, high
    else:
        start = _number(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _number(low_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1], {})
        if len(low_high) == 1:
            end = high  # "N/step" runs from N to the field's end
        star = star and step <= 1
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def load_zone(name: str) -> ZoneInfo | None:
    """The IANA zone; None: unknown here. "" and "UTC" are UTC, as Go's LoadLocation has it."""
    if name in ("", "UTC"):
        return ZoneInfo("UTC")
    if name == "Local" or name.startswith(("/", ".")) or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def next_after(cron: Cron, after: datetime, zone: ZoneInfo, origin: datetime) -> datetime | None:
    """The first time strictly after `after`; None: none within five years. `origin` anchors an
    `@every` schedule (its times are origin + k x delay, as the Temporal interval has them)."""
    if cron.every is not None:
        step = cron.every
        k = (after - origin) // step + 1
        return origin + max(k, 1) * step
    local = after.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0) + MINUTE
    limit = local.replace(year=local.year + _HORIZON)
    while local < limit:
        if local.month not in cron.months:
            year, month = (
                (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
            )
            local = local.replace(year=year, month=month, day=1, hour=0, minute=0)
        elif not cron.day_matches(local):
            local = local.replace(hour=0, minute=0) + timedelta(days=1)
        elif local.hour not in cron.hours:
            local = local.replace(minute=0) + timedelta(hours=1)
        elif local.minute not in cron.minutes:
            local += MINUTE
        else:
            found = local.replace(tzinfo=zone).astimezone(UTC)
            if found > after:
                return found
            local += MINUTE
    return None


def most_recent(
    cron: Cron, earliest: datetime, now: datetime, zone: ZoneInfo, origin: datetime
) -> datetime | None:
    """The latest time in (earliest, now]; None: there is none. Searched over growing windows
    back from now, so a long outage costs a few steps, not one per missed time."""
    for window in (*_WINDOWS, now - earliest):
        start = max(earliest, now - window)
        found: datetime | None = None
        at = next_after(cron, start, zone, origin)
        while at is not None and at <= now:
            found = at
            at = next_after(cron, at, zone, origin)
        if found is not None or start == earliest:
            return found
    return None
