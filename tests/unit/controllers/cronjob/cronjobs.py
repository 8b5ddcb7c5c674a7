"""CronJobs and scheduled times for the CronJob core's tests, a few lines per case."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from models.cronjob import CronJob

CREATED = datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)


def at(hour: int, minute: int, second: int = 0, day: int = 2) -> datetime:
    return datetime(2026, 12, day, hour, minute, second, tzinfo=UTC)


def cron_job(
    schedule: str = "*/5 * * * *", name: str = "nightly", uid: str = "cj-uid", **spec: Any
) -> CronJob:
    return CronJob.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": uid,
                "creationTimestamp": CREATED.isoformat(),
            },
            "spec": {
                "schedule": schedule,
                "jobTemplate": {
                    "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                    "spec": {"tasks": [{"name": "t", "replicas": 1, "template": {}}]},
                },
                **spec,
            },
        }
    )
