"""Routing of CronJobs (`Kind.CRON_JOB`) and of the Volcano Jobs they control (from
`Kind.JOB`), each to the CronJob's CronJobWorkflow.

A CronJob is an owner (`index.Owners`): its first sight or a spec change is a signal-with-start
of `cron_job_observed`, its deletion `cron_job_deleted`, and a deleted uid never starts a run
again. Its Jobs are members (`index.Members`), sent on a phase change only, as Volcano's
CronJob controller reads nothing else of them but the times that ride along; a Job with no
phase yet is the one a run just made (the run reports it), and is not news. A Job whose
CronJob was seen deleted is news to nobody.
"""

from __future__ import annotations

from collections.abc import Set

from forwarder.routing import cron_translate as ct
from forwarder.routing import envelopes, index
from models.signals import common as common_signals
from models.signals import cronjob as cronjob_signals

CRON_JOBS = index.OwnerRules(
    ref=ct.cron_job_ref,
    fingerprint=ct.fingerprint,
    observed=ct.observed,
    observed_signal=cronjob_signals.SIGNAL_CRON_JOB_OBSERVED,
    deleted=lambda uid: common_signals.JobDeleted(uid=uid),
    deleted_signal=cronjob_signals.SIGNAL_CRON_JOB_DELETED,
    ours=ct.parses,
)


def _changed(cron: envelopes.CronJobRef, job: cronjob_signals.CronJobRun) -> envelopes.Outbound:
    changed = cronjob_signals.CronJobRunChanged(job=job)
    return envelopes.Signal(cron, cronjob_signals.SIGNAL_CRON_JOB_RUN_CHANGED, changed)


def _same_phase(a: cronjob_signals.CronJobRun, b: cronjob_signals.CronJobRun) -> bool:
    return a.phase == b.phase


def _made_just_now(job: cronjob_signals.CronJobRun) -> bool:
    return not job.phase


class CronJobs:
    """CronJobs by uid, and the Jobs they control by uid."""

    def __init__(self, deleted_capacity: int = index.DELETED_REMEMBERED) -> None:
        self._owners = index.Owners(CRON_JOBS, deleted_capacity)
        self._jobs = index.Members(
            index.MemberRules(
                owner=self._owner,
                snapshot=ct.run_job,
                message=_changed,
                same=_same_phase,
                forget_unowned=True,
                echo=_made_just_now,
            )
        )
        self.cron_job = self._owners.event
        self.cron_jobs_vanished = self._owners.vanished
        self.namespace_gone = self._owners.namespace_gone
        self.job = self._jobs.event

    def jobs_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        return self._jobs.vanished(listed)

    def _owner(self, obj: envelopes.Obj) -> envelopes.CronJobRef | None:
        found = ct.owner(obj)
        if found is None or self._owners.deleted(found[0]):
            return None
        return found[1]
