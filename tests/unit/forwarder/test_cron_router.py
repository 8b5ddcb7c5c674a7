"""CronJobs and their Jobs through the router: what reaches a CronJobWorkflow, under which id,
and what is left out (status echoes, Job changes that are not phase changes, late events)."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder import signaller
from forwarder.routing import envelopes, router
from models.signals import cronjob as cronjob_signals
from tests.unit.forwarder.inbound import added, deleted, modified, route_all

pytestmark = pytest.mark.unit

K = envelopes.Kind
CRON = envelopes.CronJobRef("ns", "nightly")


def cron_job(uid: str = "cj-uid", schedule: str = "*/5 * * * *", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": uid},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"tasks": [{"name": "t"}]}}},
        "status": status,
    }


def job(phase: str | None = None, rv: str = "1", owner_uid: str = "cj-uid") -> dict[str, Any]:
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "name": "nightly",
        "uid": owner_uid,
        "controller": True,
    }
    obj: dict[str, Any] = {
        "metadata": {
            "name": "nightly-1",
            "namespace": "ns",
            "uid": "job-uid",
            "resourceVersion": rv,
            "ownerReferences": [owner],
        },
        "spec": {"tasks": [{"name": "t"}]},
    }
    if phase:
        obj["status"] = {"state": {"phase": phase}}
    return obj


def _to_cron(out: list[envelopes.Outbound]) -> list[envelopes.Signal]:
    return [o for o in out if isinstance(o, envelopes.Signal) and o.target == CRON]


def test_cronjob_is_signalled_with_start_and_typed() -> None:
    [signal] = _to_cron(router.Router().route(added(K.CRON_JOB, cron_job())))
    assert signal.start and signal.name == cronjob_signals.SIGNAL_CRON_JOB_OBSERVED
    assert signal.target.workflow_id == "cronjob/ns/nightly"
    assert isinstance(signal.payload, cronjob_signals.CronJobObserved)
    assert signal.payload.cron_job.spec.schedule == "*/5 * * * *"
    assert signaller.summary(signal.target) == "Volcano CronJob ns/nightly"


def test_status_write_is_an_echo_but_a_spec_change_is_news() -> None:
    r = router.Router()
    route_all(r, added(K.CRON_JOB, cron_job()))
    assert (
        _to_cron(r.route(modified(K.CRON_JOB, cron_job(lastScheduleTime="2026-01-01T00:00:00Z"))))
        == []
    )
    [signal] = _to_cron(r.route(modified(K.CRON_JOB, cron_job(schedule="@hourly"))))
    assert signal.name == cronjob_signals.SIGNAL_CRON_JOB_OBSERVED


def test_deleted_cronjob_is_told_and_never_started_again() -> None:
    r = router.Router()
    route_all(r, added(K.CRON_JOB, cron_job()))
    [gone] = _to_cron(r.route(deleted(K.CRON_JOB, cron_job())))
    assert gone.name == cronjob_signals.SIGNAL_CRON_JOB_DELETED and not gone.start
    assert _to_cron(r.route(modified(K.CRON_JOB, cron_job()))) == []
    assert _to_cron(r.route(modified(K.JOB, job("Running")))) == []


def test_an_unparseable_cronjob_is_left_alone() -> None:
    broken = cron_job()
    del broken["spec"]["jobTemplate"]
    assert _to_cron(router.Router().route(added(K.CRON_JOB, broken))) == []


def test_its_jobs_phase_changes_only_reach_it() -> None:
    r = router.Router()
    route_all(r, added(K.CRON_JOB, cron_job()))
    assert _to_cron(r.route(added(K.JOB, job()))) == []  # the run just made it
    [running] = _to_cron(r.route(modified(K.JOB, job("Running", rv="2"))))
    assert running.name == cronjob_signals.SIGNAL_CRON_JOB_RUN_CHANGED and not running.start
    assert _to_cron(r.route(modified(K.JOB, job("Running", rv="3")))) == []
    [done] = _to_cron(r.route(modified(K.JOB, job("Completed", rv="4"))))
    assert isinstance(done.payload, cronjob_signals.CronJobRunChanged)
    assert (done.payload.job.name, done.payload.job.phase) == ("nightly-1", "Completed")
    [gone] = _to_cron(r.route(deleted(K.JOB, job("Completed", rv="5"))))
    assert isinstance(gone.payload, cronjob_signals.CronJobRunChanged) and gone.payload.job.deleted


def test_a_job_of_no_cronjob_is_not_its_news() -> None:
    r = router.Router()
    route_all(r, added(K.CRON_JOB, cron_job()))
    plain = job("Running")
    plain["metadata"]["ownerReferences"] = []
    assert _to_cron(r.route(added(K.JOB, plain))) == []
