"""flow.volcano.sh/v1alpha1 JobFlow and JobTemplate: Volcano's flows of Jobs, field for field.

A JobTemplate's spec is a Volcano Job spec kept as written: Volcano checks it only when a Job
is made from it (the Job's own admission), so its CRD carries none of the Job's CEL rules
(`models.crd` leaves them out). A JobFlow names templates; its controller makes one Job per
flow entry (`<flow>-<template>`) once the entries it depends on have Completed. Probes and
patches are part of the API but Volcano's controller does not act on them, so neither does
Caldera's: they are stored and round-trip unchanged.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from models import vcjob
from models.base import ApiModel, NonNegInt32
from models.meta import ObjectMeta

GROUP: Final = "flow.volcano.sh"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
FLOW_KIND: Final = "JobFlow"
TEMPLATE_KIND: Final = "JobTemplate"

# On every Job a flow makes, as label and annotation: "<namespace>.<name>" of each.
CREATED_BY_JOB_TEMPLATE: Final = "volcano.sh/createdByJobTemplate"
CREATED_BY_JOB_FLOW: Final = "volcano.sh/createdByJobFlow"

Port = Annotated[int, Field(ge=0, le=65535)]
TaskName = Annotated[str, Field(max_length=253)]


class RetainPolicy(StrEnum):
    RETAIN = "retain"
    DELETE = "delete"


class FlowPhase(StrEnum):
    SUCCEED = "Succeed"
    TERMINATING = "Terminating"
    FAILED = "Failed"
    RUNNING = "Running"
    PENDING = "Pending"


class HttpHeader(ApiModel):
    name: str
    value: str


class HttpGet(ApiModel):
    task_name: TaskName | None = None  # None: no task named
    path: str | None = None  # None: "/"
    port: Port | None = None  # None: not given
    http_header: HttpHeader | None = None  # None: no header


class TcpSocket(ApiModel):
    task_name: TaskName | None = None  # None: no task named
    port: Port


class TaskStatus(ApiModel):
    task_name: TaskName | None = None  # None: no task named
    phase: str | None = Field(default=None, max_length=63)  # None: no phase asked for


class Probe(ApiModel):
    """Stored, not acted on: Volcano's controller judges dependencies by phase alone."""

    http_get_list: list[HttpGet] | None = None  # None: no HTTP probe
    tcp_socket_list: list[TcpSocket] | None = None  # None: no TCP probe
    task_status_list: list[TaskStatus] | None = None  # None: no task-phase probe


class DependsOn(ApiModel):
    targets: list[str] | None = None  # None: depends on nothing
    probe: Probe | None = None  # None: no probe (and a probe changes nothing)


class Patch(ApiModel):
    """Stored, not applied: Volcano makes the Job from the template's spec alone."""

    job_spec: dict[str, Any] | None = None  # None: nothing to patch


class Flow(ApiModel):
    name: str = Field(min_length=1)  # the JobTemplate's name
    depends_on: DependsOn | None = None  # None: created at once
    patch: Patch | None = None  # None: no patch

    @property
    def targets(self) -> tuple[str, ...]:
        """The entries this one waits for (empty: none)."""
        return tuple(self.depends_on.targets or ()) if self.depends_on else ()


class JobFlowSpec(ApiModel):
    flows: list[Flow] | None = None  # None: no entries
    job_retain_policy: RetainPolicy | None = None  # None: retain

    @property
    def entries(self) -> tuple[Flow, ...]:
        return tuple(self.flows or ())


class JobRunningHistory(ApiModel):
    start_timestamp: datetime | None = None  # None: not recorded
    end_timestamp: datetime | None = None  # None: the phase still holds
    state: str | None = None  # the Job's phase; None: unknown


class JobStatus(ApiModel):
    """One Job of the flow, as its status list keeps it (also after the Job is gone)."""

    name: str | None = None  # None: not recorded
    state: str | None = None  # the Job's phase; None: it had none yet
    start_timestamp: datetime | None = None  # the Job's creation; None: unknown
    end_timestamp: datetime | None = None  # creation + running duration; None: no duration
    restart_count: NonNegInt32 | None = None  # the Job's retryCount; None: 0
    running_histories: list[JobRunningHistory] | None = None  # None: no phase seen yet


class Condition(ApiModel):
    phase: str | None = None  # the Job's phase; None: it had none yet
    create_time: datetime | None = None  # None: unknown
    running_duration: str | None = None  # None: not reported by the Job
    task_status_count: dict[str, vcjob.TaskState] | None = None  # None: no pods counted


class FlowState(ApiModel):
    phase: FlowPhase | None = None  # None: not reconciled yet, read as Pending


class JobFlowStatus(ApiModel):
    pending_jobs: list[str] | None = None  # every list None: empty
    running_jobs: list[str] | None = None
    failed_jobs: list[str] | None = None
    completed_jobs: list[str] | None = None
    terminated_jobs: list[str] | None = None
    un_know_jobs: list[str] | None = None  # Volcano's spelling: "unKnowJobs"
    job_status_list: list[JobStatus] | None = None
    conditions: dict[str, Condition] | None = None  # Job name → condition
    state: FlowState | None = None  # None: not reconciled yet

    @property
    def phase(self) -> FlowPhase:
        return (self.state.phase if self.state else None) or FlowPhase.PENDING


class JobFlow(ApiModel):
    """A Volcano JobFlow (`jf`)."""

    api_version: Literal["flow.volcano.sh/v1alpha1"] = "flow.volcano.sh/v1alpha1"
    kind: Literal["JobFlow"] = "JobFlow"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobFlowSpec = Field(default_factory=JobFlowSpec)
    status: JobFlowStatus | None = None  # None: not reconciled yet


class JobTemplateStatus(ApiModel):
    job_depends_on_list: list[str] | None = None  # Jobs made from it; None: none recorded


class JobTemplate(ApiModel):
    """A Volcano JobTemplate (`jt`): a Job spec to make Jobs from."""

    api_version: Literal["flow.volcano.sh/v1alpha1"] = "flow.volcano.sh/v1alpha1"
    kind: Literal["JobTemplate"] = "JobTemplate"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: vcjob.JobSpec
    status: JobTemplateStatus | None = None  # None: no Job made from it yet


def object_string(namespace: str, name: str) -> str:
    """The label value naming a flow or template: "<namespace>.<name>"."""
    return f"{namespace}.{name}"


def job_name(flow: str, template: str) -> str:
    """The Job a flow entry makes; deterministic, so a retried creation finds it."""
    return f"{flow}-{template}"
