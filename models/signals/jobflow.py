"""What a JobFlowWorkflow hears and answers: Volcano JobFlows (flow.volcano.sh), their Jobs and
the JobTemplates they name.

Signal and workflow type names are stored in histories and used by the forwarder: they never
change. Pure: pydantic only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from models.jobflow import JobFlowSpec, JobFlowStatus
from models.signals import common
from models.vcjob import TaskState


class FlowStart(common.Payload):
    """What the forwarder starts a JobFlowWorkflow with (signal-with-start)."""


class FlowObserved(common.Payload):
    """The JobFlow as the apiserver holds it now (added, spec changed, relisted); its status
    stays behind: the workflow computes it."""

    namespace: str
    name: str
    uid: str
    spec: JobFlowSpec
    status: JobFlowStatus | None = None  # as stored; None: never written


class FlowJob(common.Payload):
    """A Volcano Job labelled with a flow, as far as the flow's status reads it."""

    name: str
    uid: str
    phase: str = ""  # "": the Job has no phase yet
    created_at: datetime | None = None  # None: not known
    running_duration: str | None = None  # None: not reported
    retry_count: int = 0
    task_status_count: dict[str, TaskState] = Field(default_factory=dict)
    deleted: bool = False  # gone from the apiserver


class FlowJobChanged(common.Payload):
    job: FlowJob


class TemplateObserved(common.Payload):
    """A JobTemplate the flow names appeared (or was relisted)."""

    name: str


class FlowView(common.Payload):
    """The `status` query of a JobFlowWorkflow."""

    namespace: str
    name: str
    phase: str
    jobs: dict[str, str] = Field(default_factory=dict)  # Job name → phase, as last heard
    created: list[str] = Field(default_factory=list)  # Jobs this flow made
    waiting_for_template: str = ""  # "": none missing
    backlog: int = 0
    kind: Literal["FlowView"] = "FlowView"


# Workflow type and message names: histories and the forwarder use these strings.
JOBFLOW_WORKFLOW = "JobFlowWorkflow"
SIGNAL_JOBFLOW_OBSERVED = "jobflow_observed"
SIGNAL_JOBFLOW_DELETED = "jobflow_deleted"  # with JobDeleted: the flow's uid
SIGNAL_FLOW_JOB_CHANGED = "flow_job_changed"
SIGNAL_TEMPLATE_OBSERVED = "job_template_observed"
