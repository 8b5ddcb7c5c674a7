"""A CronJob's Kubernetes writes: the Job of one run, and the CronJob's status.

The Job is created as the core built it. A Job of that name already there is read and
reported, as Volcano's createJob does on AlreadyExists: whether the CronJob controls it and
its phase (a finished duplicate or a foreign Job makes no run). The status goes through the
status subresource, replaced whole as Volcano's UpdateStatus does; a CronJob already deleted
needs none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio import activity

from activities import errors, kube, status
from activities.messages import Done
from models import cronjob, vcjob


class CreateRunJobInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    job: vcjob.Job
    owner_uid: str  # the CronJob's: a Job of that name it does not control is foreign


class RunJobCreated(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    uid: str
    resource_version: str = ""
    created: datetime | None = None  # None: the apiserver gave none
    owned: bool = True  # False: a Job of that name another owner controls
    phase: str = ""  # of a Job that was there already; "": new


class CronJobStatusInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    name: str
    status: cronjob.CronJobStatus


def _created(found: dict[str, Any], owner_uid: str) -> RunJobCreated:
    job = vcjob.Job.load(found)
    refs = job.metadata.owner_references or []
    owned = any(r.controller and r.uid == owner_uid for r in refs)
    state = job.status.state if job.status else None
    return RunJobCreated(
        uid=job.metadata.uid or "",
        resource_version=job.metadata.resource_version or "",
        created=job.metadata.creation_timestamp,
        owned=owned,
        phase=str(state.phase) if state and state.phase else "",
    )


@activity.defn(name="create_cron_job_run")
def create_cron_job_run(request: CreateRunJobInput) -> RunJobCreated:
    meta = request.job.metadata
    namespace, name = meta.namespace or "", meta.name or ""
    custom = kube.custom()
    made: object = None  # stays None when the Job exists already
    with errors.kube_call(f"create job {namespace}/{name}", ok=errors.EXISTS_OK):
        made = custom.create_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, "jobs", request.job.dump()
        )
    if made is not None:
        activity.logger.info("cronjob run created job=%s/%s", namespace, name)
        return _created(kube.as_dict(made), request.owner_uid).model_copy(update={"phase": ""})
    with errors.kube_call(f"read job {namespace}/{name}"):
        found = custom.get_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, "jobs", name
        )
    return _created(kube.as_dict(found), request.owner_uid)


@activity.defn(name="write_cron_job_status")
def write_cron_job_status(request: CronJobStatusInput) -> Done:
    status.replace_status(cronjob.PLURAL, request.namespace, request.name, request.status.dump())
    return Done()
