"""JobFlows (JobFlowWorkflow): make a flow entry's Job from its JobTemplate, write the flow's
status, delete its Jobs (jobRetainPolicy delete), and keep a template's list of its Jobs.

A Job is made under its deterministic name, so a creation retried (or repeated by a run that
replays after a worker restart) finds the Job made and counts it as made, never a second one.
A template that is not there is an answer, not an error: the flow waits for it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube, status
from activities.messages import Done
from controllers.jobflow import build
from models import jobflow, vcjob
from models.jobflow import JobFlowStatus, JobTemplate
from models.meta import Identity


class CreateFlowJobInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    flow: str
    flow_uid: str
    template: str


class FlowJobMade(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: Literal["Created", "Exists", "TemplateMissing"]


class WriteFlowStatusInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    name: str
    status: JobFlowStatus


class DeleteFlowJobsInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    names: list[str] = Field(default_factory=list)


class TemplateJobsInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    template: str


def _template(namespace: str, name: str) -> dict[str, Any] | None:
    """The stored JobTemplate; None: there is none."""
    found: object = None
    with errors.kube_call(f"read jobtemplate {namespace}/{name}", ok=errors.GONE_OK):
        found = kube.custom().get_namespaced_custom_object(
            jobflow.GROUP, jobflow.VERSION, namespace, "jobtemplates", name
        )
    return None if found is None else kube.as_dict(found)


@activity.defn(name="create_flow_job")
def create_flow_job(request: CreateFlowJobInput) -> FlowJobMade:
    stored = _template(request.namespace, request.template)
    if stored is None:
        return FlowJobMade(outcome="TemplateMissing")
    try:
        template = JobTemplate.model_validate(stored)
    except ValidationError as e:
        what = f"jobtemplate {request.namespace}/{request.template}"
        raise ApplicationError(f"{what}: {e}", type="Invalid", non_retryable=True) from e
    flow = Identity(namespace=request.namespace, name=request.flow, uid=request.flow_uid)
    job = build.job(flow, request.template, template.spec)
    name = job.metadata.name or ""
    made = False  # stays so when it exists already
    with errors.kube_call(f"create job {request.namespace}/{name}", ok=errors.EXISTS_OK):
        kube.custom().create_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, request.namespace, "jobs", job.dump()
        )
        made = True
    activity.logger.info(
        "flow job %s job=%s/%s flow=%s",
        "created" if made else "exists",
        request.namespace,
        name,
        request.flow,
    )
    return FlowJobMade(outcome="Created" if made else "Exists")


@activity.defn(name="write_flow_status")
def write_flow_status(request: WriteFlowStatusInput) -> Done:
    """Replaced whole, as Volcano's UpdateStatus does; the flow's workflow is its one writer."""
    status.replace_status(
        "jobflows",
        request.namespace,
        request.name,
        request.status.dump(),
        (jobflow.GROUP, jobflow.VERSION),
    )
    return Done()


@activity.defn(name="delete_flow_jobs")
def delete_flow_jobs(request: DeleteFlowJobsInput) -> Done:
    for name in request.names:
        with errors.kube_call(f"delete job {request.namespace}/{name}", ok=errors.GONE_OK):
            kube.custom().delete_namespaced_custom_object(
                vcjob.GROUP, vcjob.VERSION, request.namespace, "jobs", name
            )
    return Done()


@activity.defn(name="record_template_jobs")
def record_template_jobs(request: TemplateJobsInput) -> Done:
    """syncJobTemplate: the Jobs labelled with the template, by name, as its status; nothing
    when there are none. Written against the resourceVersion read first, so two flows making
    Jobs from one template at once never drop each other's (a conflict is retried)."""
    ns, name = request.namespace, request.template
    stored = _template(ns, name)
    if stored is None:
        return Done()
    selector = f"{jobflow.CREATED_BY_JOB_TEMPLATE}={jobflow.object_string(ns, name)}"
    with errors.kube_call(f"list jobs of jobtemplate {ns}/{name}"):
        listed = kube.as_dict(
            kube.custom().list_namespaced_custom_object(
                vcjob.GROUP, vcjob.VERSION, ns, "jobs", label_selector=selector
            )
        )
    names = sorted(str((j.get("metadata") or {}).get("name", "")) for j in listed["items"])
    if not names or (stored.get("status") or {}).get("jobDependsOnList") == names:
        return Done()
    stored["status"] = {**(stored.get("status") or {}), "jobDependsOnList": names}
    with errors.kube_call(f"write status of jobtemplate {ns}/{name}", ok=errors.GONE_OK):
        kube.custom().replace_namespaced_custom_object_status(
            jobflow.GROUP, jobflow.VERSION, ns, "jobtemplates", name, stored
        )
    return Done()
