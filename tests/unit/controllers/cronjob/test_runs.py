"""The Job of one run as Volcano's getJobFromTemplate makes it."""

from __future__ import annotations

from controllers.cronjob import runs
from models import cronjob
from tests.unit.controllers.cronjob.cronjobs import at, cron_job


def test_job_name_is_the_scheduled_minute() -> None:
    assert runs.job_name("nightly", at(6, 5)) == "nightly-29936525"


def test_job_from_template_carries_labels_annotations_owner_and_timestamp() -> None:
    job = runs.job_for(cron_job(timeZone="Asia/Tokyo"), at(6, 5))
    meta = job.metadata
    assert (meta.name, meta.namespace, meta.labels) == ("nightly-29936525", "ns", {"team": "a"})
    assert meta.annotations == {
        "note": "x",
        cronjob.SCHEDULED_TIMESTAMP: "2026-12-02T15:05:00+09:00",
    }
    [owner] = meta.owner_references or []
    assert (owner.kind, owner.name, owner.uid, owner.controller, owner.block_owner_deletion) == (
        "CronJob",
        "nightly",
        "cj-uid",
        True,
        True,
    )
    assert owner.api_version == "batch.volcano.sh/v1alpha1"
    assert [t.name for t in job.spec.tasks] == ["t"]


def test_timestamp_is_utc_without_a_time_zone() -> None:
    job = runs.job_for(cron_job(), at(6, 5))
    assert (job.metadata.annotations or {})[cronjob.SCHEDULED_TIMESTAMP] == "2026-12-02T06:05:00Z"
