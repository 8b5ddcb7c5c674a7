"""The schedule parser and its times, against what robfig's standard parser and Volcano's
mostRecentScheduleTime give."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from controllers.cronjob import cron
from tests.unit.controllers.cronjob.cronjobs import at

UTC_ZONE = ZoneInfo("UTC")
ORIGIN = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        pytest.param("*/5 * * * *", at(6, 3), at(6, 5), id="every-five-minutes"),
        pytest.param("*/5 * * * *", at(6, 5), at(6, 10), id="strictly-after"),
        pytest.param("0 0 1 1 *", at(6, 3), datetime(2027, 1, 1, tzinfo=UTC), id="yearly"),
        pytest.param("@hourly", at(6, 3), at(7, 0), id="descriptor"),
        pytest.param("30 9 * * mon-fri", at(10, 0), at(9, 30, day=3), id="weekday-names"),
        pytest.param("0 0 13 * 5", at(6, 3), at(0, 0, day=4), id="either-day-friday-first"),
        pytest.param("0 0 */2 * 5", at(6, 3), at(0, 0, day=3), id="day-step-is-not-star"),
        pytest.param("0 0 * * 5", at(6, 3), at(0, 0, day=4), id="star-day-means-both"),
        pytest.param("5/20 * * * *", at(6, 30), at(6, 45), id="start-slash-step-runs-to-end"),
        pytest.param(
            "@every 90s",
            ORIGIN + timedelta(seconds=100),
            ORIGIN + timedelta(seconds=180),
            id="every",
        ),
    ],
)
def test_next_after(text: str, after: datetime, expected: datetime) -> None:
    assert cron.next_after(cron.parse(text), after, UTC_ZONE, ORIGIN) == expected


def test_next_after_in_a_time_zone() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")  # 09:00 Tokyo is 00:00 UTC
    assert cron.next_after(cron.parse("0 9 * * *"), at(6, 0), tokyo, ORIGIN) == at(0, 0, day=3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "empty spec string", id="empty"),
        pytest.param("* * * *", "expected exactly 5 fields", id="four-fields"),
        pytest.param("0 * * * * *", "expected exactly 5 fields", id="seconds-field"),
        pytest.param("60 * * * *", r"above maximum \(59\)", id="minute-range"),
        pytest.param("* * * * 7", r"above maximum \(6\)", id="weekday-seven"),
        pytest.param("5-1 * * * *", "beyond end of range", id="backwards"),
        pytest.param("*/0 * * * *", "positive number", id="zero-step"),
        pytest.param("1-2-3 * * * *", "too many hyphens", id="hyphens"),
        pytest.param("a * * * *", "failed to parse int", id="not-a-number"),
        pytest.param("@fortnightly", "unrecognized descriptor", id="descriptor"),
        pytest.param("@every soon", "failed to parse duration", id="every-duration"),
        pytest.param("TZ=Mars/Base * * * * *", "bad location", id="tz-prefix"),
    ],
)
def test_parse_refuses(text: str, message: str) -> None:
    with pytest.raises(cron.CronError, match=message):
        cron.parse(text)


def test_tz_prefix_names_the_zone() -> None:
    assert cron.parse("CRON_TZ=Europe/Paris 0 1 * * *").zone == "Europe/Paris"


@pytest.mark.parametrize(
    ("earliest", "now", "expected"),
    [
        pytest.param(at(6, 0), at(6, 4), None, id="none-missed"),
        pytest.param(at(6, 0), at(6, 5), at(6, 5), id="exactly-now"),
        pytest.param(at(6, 0), at(6, 59), at(6, 55), id="many-missed-most-recent"),
        pytest.param(at(6, 0, day=1), at(6, 2), at(6, 0), id="a-day-missed"),
    ],
)
def test_most_recent(earliest: datetime, now: datetime, expected: datetime | None) -> None:
    found = cron.most_recent(cron.parse("*/5 * * * *"), earliest, now, UTC_ZONE, ORIGIN)
    assert found == expected


def test_most_recent_after_a_long_outage_of_a_yearly_schedule() -> None:
    found = cron.most_recent(
        cron.parse("@yearly"), datetime(2020, 6, 1, tzinfo=UTC), at(6, 0), UTC_ZONE, ORIGIN
    )
    assert found == datetime(2026, 1, 1, tzinfo=UTC)
