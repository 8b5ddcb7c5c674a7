"""The Jobs a CronJob makes: their names, their manifests, and which finished ones go. Pure.

A Job is named `<cronjob>-<scheduled time in minutes since the epoch>`, so one nominal time
never makes two Jobs. It takes the template's labels, annotations and spec, the scheduled
time as an annotation (RFC 3339 in `timeZone`, UTC without one; a `TZ=` prefix in the schedule
does not change it, as in Volcano), the CronJob's namespace, and a controller reference to the
CronJob, so it is garbage-collected with it. A Job is finished when Completed, Failed or
Terminated; of the finished ones, Completed count against successfulJobsHistoryLimit and Failed
against failedJobsHistoryLimit (Terminated against neither, as in Volcano), oldest first by
creation time, then name.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from pydantic import BaseModel, ConfigDict

from controllers.cronjob import cron
from models import cronjob, vcjob
from models.meta import ObjectMeta, controller_reference

FINISHED: Final = frozenset(
    {vcjob.JobPhase.COMPLETED, vcjob.JobPhase.FAILED, vcjob.JobPhase.TERMINATED}
)


class Run(BaseModel):
    """One Job of the CronJob, as its workflow knows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    uid: str = ""  # "": not created yet
    resource_version: str = ""
    scheduled: datetime | None = None  # None: a Job this workflow did not make
    workflow_id: str = ""  # the scheduled run following it; "": none
    phase: str = ""  # "": not observed yet
    created: datetime | None = None  # None: not observed yet
    finished_at: datetime | None = None  # the Job's last transition; None: unknown
    deleting: bool = False  # this workflow asked for its deletion

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def scheduled_stamp(cj: cronjob.CronJob, scheduled: datetime) -> str:
    """RFC 3339 as Go writes it: "Z" for a zero offset."""
    zone = cron.load_zone(cj.spec.time_zone or "") or UTC
    text = scheduled.astimezone(zone).replace(microsecond=0).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def job_for(cj: cronjob.CronJob, scheduled: datetime) -> vcjob.Job:
    """getJobFromTemplate: the Job for one nominal time."""
    meta = cj.spec.job_template.metadata
    labels = dict(meta.labels or {}) if meta else {}
    annotations = dict(meta.annotations or {}) if meta else {}
    annotations[cronjob.SCHEDULED_TIMESTAMP] = scheduled_stamp(cj, scheduled)
    owner = controller_reference(
        cj.api_version, cronjob.KIND, cj.metadata.name or "", cj.metadata.uid or ""
    )
    spec = vcjob.JobSpec.model_validate(cj.spec.job_template.spec.dump())
    return vcjob.Job(
        metadata=ObjectMeta(
            name=job_name(cj.metadata.name or "", scheduled),
            namespace=cj.metadata.namespace,
            labels=labels or None,
            annotations=annotations,
            owner_references=[owner],
        ),
        spec=spec,
    )


def _oldest_first(run: Run) -> tuple[bool, datetime, str]:
    """byJobCreationTimestamp: Jobs without a creation time sort last."""
    created = run.created or datetime.max.replace(tzinfo=UTC)
    return (run.created is None, created, run.name)


def beyond_limits(runs: list[Run], successful: int, failed: int) -> list[Run]:
    """The finished Jobs past their history limit, oldest first; those already being deleted
    are counted as gone."""
    out: list[Run] = []
    for phase, limit in ((vcjob.JobPhase.COMPLETED, successful), (vcjob.JobPhase.FAILED, failed)):
        kept = sorted((r for r in runs if r.phase == phase and not r.deleting), key=_oldest_first)
        out += kept[: max(0, len(kept) - limit)]
    return out
