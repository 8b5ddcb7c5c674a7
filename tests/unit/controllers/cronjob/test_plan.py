"""The Temporal Schedule a CronJob stands for: calendars, zone, interval, overlap, pause."""

from __future__ import annotations

from datetime import timedelta

from controllers.cronjob import cron, plan
from tests.unit.controllers.cronjob.cronjobs import cron_job


def _plan(schedule: str, **spec: object) -> plan.SchedulePlan:
    cj = cron_job(schedule=schedule, **spec)
    return plan.plan(cj, cron.parse(schedule))


def test_both_day_fields_restricted_become_two_calendars() -> None:
    either = _plan("0 0 13 * 5")
    assert [(c.day_of_month, c.day_of_week) for c in either.calendars] == [
        ([13], list(range(7))),
        (list(range(1, 32)), [5]),
    ]
    [both] = _plan("0 0 * * 5").calendars
    assert (both.day_of_month, both.day_of_week) == (list(range(1, 32)), [5])


def test_zone_from_the_prefix_wins_over_time_zone() -> None:
    assert _plan("0 9 * * *", timeZone="Asia/Tokyo").time_zone == "Asia/Tokyo"
    assert _plan("CRON_TZ=Europe/Paris 0 9 * * *", timeZone="Asia/Tokyo").time_zone == (
        "Europe/Paris"
    )
    assert _plan("0 9 * * *").time_zone == "UTC"


def test_every_is_an_interval_counted_from_creation() -> None:
    p = _plan("@every 1h")
    assert (p.every, p.offset, p.calendars) == (timedelta(hours=1), timedelta(seconds=30), [])


def test_suspend_is_paused_and_deadline_the_catchup_window() -> None:
    p = _plan("@hourly", suspend=True, startingDeadlineSeconds=120)
    assert p.paused and p.catchup == timedelta(minutes=2)
    assert _plan("@hourly").catchup == plan.DEFAULT_CATCHUP
