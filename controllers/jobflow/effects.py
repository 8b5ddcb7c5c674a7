"""What only a JobFlowWorkflow's shell does on its core's behalf; with `controllers.effects`
(Events, timers, the phase, the end of the workflow), the closed union the shell executes."""

from __future__ import annotations

from typing import Literal

from controllers import effects as fx
from models.jobflow import JobFlowStatus


class CreateFlowJob(fx.Effect):
    """Read the JobTemplate and create the entry's Job from it; the outcome comes back as
    `FlowJobCreated` (made, found made already, or the template is missing)."""

    kind: Literal["CreateFlowJob"] = "CreateFlowJob"
    namespace: str
    flow: str
    flow_uid: str
    template: str


class WriteFlowStatus(fx.Effect):
    kind: Literal["WriteFlowStatus"] = "WriteFlowStatus"
    namespace: str
    name: str
    status: JobFlowStatus


class DeleteFlowJobs(fx.Effect):
    """jobRetainPolicy delete, once the flow Succeeded: a Job already gone is deleted."""

    kind: Literal["DeleteFlowJobs"] = "DeleteFlowJobs"
    namespace: str
    names: list[str]


class RecordTemplateJobs(fx.Effect):
    """The JobTemplate controller's sync: the template's status lists the Jobs made from it."""

    kind: Literal["RecordTemplateJobs"] = "RecordTemplateJobs"
    namespace: str
    template: str


Own = CreateFlowJob | WriteFlowStatus | DeleteFlowJobs | RecordTemplateJobs
AnyEffect = Own | fx.RecordEvent | fx.StartTimer | fx.CancelTimer | fx.PhaseChanged | fx.Finish
