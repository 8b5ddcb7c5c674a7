"""JobFlowWorkflow: one durable workflow per Volcano JobFlow (id `jobflow/<namespace>/<name>`).

It runs on the entity shell (`workflows.entity`) with the JobFlow controller's core
(`controllers.jobflow`). The forwarder signals-with-start `jobflow_observed` when it sees the
flow, and signals `flow_job_changed` when a Job labelled with the flow changes phase,
`job_template_observed` when a template the flow names appears, and `jobflow_deleted` when
the flow goes (which ends the run; its Jobs go with it through their owner reference). What
is its own: the status query and four activities (make a Job, write the status, delete the
Jobs, record a template's Jobs). A Job's creation is durable and by deterministic name, so a
worker restart in the middle of a flow never makes a finished Job again.

Patches in force: none yet.
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import jobflows
    from controllers.jobflow import controller
    from controllers.jobflow import effects as jf_fx
    from controllers.jobflow.state import FlowRecord
    from controllers.outcomes import AnyOutcome
    from models import jobflow
    from models.signals import common as common_signals
    from models.signals import job as job_signals
    from models.signals import jobflow as jobflow_signals
    from workflows import activity_call
    from workflows.entity import Entity, Ref


class JobFlowWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.jobflow.FlowStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: FlowRecord | None = None  # None: a new run
    observed: jobflow_signals.FlowObserved | None = None  # a flow made again as the last run ended
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=jobflow_signals.JOBFLOW_WORKFLOW)
class JobFlowWorkflow:
    @workflow.init
    def __init__(self, start: JobFlowWorkflowInput) -> None:
        self._entity = Entity[FlowRecord, controller.Input, jf_fx.Own](
            self, start.state or FlowRecord(), start.max_history
        )
        if start.observed is not None:
            self._entity.accept(start.observed)

    @workflow.run
    async def run(self, start: JobFlowWorkflowInput) -> None:
        await self._entity.run(controller.restored_timers(self._entity.state))

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self, state: FlowRecord, item: controller.Input | AnyOutcome, now: datetime
    ) -> controller.Decision:
        return controller.decide(state, item, now)

    def carry(
        self, state: FlowRecord, start_over: job_signals.JobObserved | None, max_history: int
    ) -> JobFlowWorkflowInput:
        return JobFlowWorkflowInput(state=state, max_history=max_history)

    def made_again(
        self, state: FlowRecord, item: object, max_history: int
    ) -> JobFlowWorkflowInput | None:
        if not isinstance(item, jobflow_signals.FlowObserved) or item.uid == state.uid:
            return None
        return JobFlowWorkflowInput(observed=item, max_history=max_history)

    def answer(self, state: FlowRecord) -> str:
        return state.status.phase

    def ref(self, state: FlowRecord) -> Ref:
        return Ref(
            namespace=state.namespace,
            name=state.name,
            uid=state.uid,
            api_version=jobflow.API_VERSION,
            kind=jobflow.FLOW_KIND,
        )

    def decided(self, before: FlowRecord, after: FlowRecord) -> None:
        return None

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=jobflow_signals.SIGNAL_JOBFLOW_OBSERVED)
    def jobflow_observed(self, seen: jobflow_signals.FlowObserved) -> None:
        self._entity.accept(seen)

    @workflow.signal(name=jobflow_signals.SIGNAL_JOBFLOW_DELETED)
    def jobflow_deleted(self, deleted: common_signals.JobDeleted) -> None:
        self._entity.accept(deleted)

    @workflow.signal(name=jobflow_signals.SIGNAL_FLOW_JOB_CHANGED)
    def flow_job_changed(self, changed: jobflow_signals.FlowJobChanged) -> None:
        self._entity.accept(changed)

    @workflow.signal(name=jobflow_signals.SIGNAL_TEMPLATE_OBSERVED)
    def job_template_observed(self, seen: jobflow_signals.TemplateObserved) -> None:
        self._entity.accept(seen)

    @workflow.query
    def status(self) -> jobflow_signals.FlowView:
        state = self._entity.state
        return jobflow_signals.FlowView(
            namespace=state.namespace,
            name=state.name,
            phase=state.status.phase,
            jobs={n: j.phase for n, j in sorted(state.jobs.items())},
            created=list(state.created),
            waiting_for_template=state.missing,
            backlog=self._entity.inbox.backlog,
        )

    # -- the effects only this kind has ----------------------------------------------------------

    async def apply(self, effect: jf_fx.Own) -> None:
        match effect:
            case jf_fx.CreateFlowJob():
                made = await activity_call.run(
                    jobflows.create_flow_job,
                    jobflows.CreateFlowJobInput(
                        namespace=effect.namespace,
                        flow=effect.flow,
                        flow_uid=effect.flow_uid,
                        template=effect.template,
                    ),
                    options.KUBE_WRITE,
                    f"create job {jobflow.job_name(effect.flow, effect.template)}"
                    f" from JobTemplate {effect.template}",
                )
                done = controller.FlowJobCreated(template=effect.template, outcome=made.outcome)
                self._entity.inbox.internal(done, first=True)
            case jf_fx.WriteFlowStatus():
                await activity_call.run(
                    jobflows.write_flow_status,
                    jobflows.WriteFlowStatusInput(
                        namespace=effect.namespace, name=effect.name, status=effect.status
                    ),
                    options.KUBE_WRITE,
                    f"write status: {effect.status.phase}",
                )
            case jf_fx.DeleteFlowJobs():
                await activity_call.run(
                    jobflows.delete_flow_jobs,
                    jobflows.DeleteFlowJobsInput(namespace=effect.namespace, names=effect.names),
                    options.KUBE_WRITE,
                    f"delete {len(effect.names)} Jobs (jobRetainPolicy delete)",
                )
            case jf_fx.RecordTemplateJobs():
                await activity_call.run(
                    jobflows.record_template_jobs,
                    jobflows.TemplateJobsInput(
                        namespace=effect.namespace, template=effect.template
                    ),
                    options.KUBE_WRITE,
                    f"record the Jobs of JobTemplate {effect.template}",
                )
            case _:
                assert_never(effect)
