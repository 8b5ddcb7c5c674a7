"""JobFlowWorkflow on the time-skipping server: a → b made in order from what the forwarder
reports, the status written, a missing template waited for, state carried through
continue-as-new, and the flow's deletion ending the run. Activities are recording fakes under
the real names."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from activities.controllers import jobflows
from activities.messages import Done
from models import keys
from models.jobflow import DependsOn, Flow, JobFlowSpec
from models.signals import common as common_signals
from models.signals import jobflow as jobflow_signals
from tests.workflows.harness import fake_worker, last_run, settled
from workflows.jobflow import JobFlowWorkflow, JobFlowWorkflowInput

CHAIN = JobFlowSpec(flows=[Flow(name="a"), Flow(name="b", depends_on=DependsOn(targets=["a"]))])


@dataclass
class Calls:
    log: list[tuple[str, Any]] = field(default_factory=list)
    templates: set[str] = field(default_factory=lambda: {"a", "b"})

    def named(self, name: str) -> list[Any]:
        return [arg for n, arg in self.log if n == name]


def fakes(calls: Calls) -> list[Callable[..., Any]]:
    @activity.defn(name="create_flow_job")
    def create_flow_job(r: jobflows.CreateFlowJobInput) -> jobflows.FlowJobMade:
        calls.log.append(("create_flow_job", r))
        return jobflows.FlowJobMade(
            outcome="Created" if r.template in calls.templates else "TemplateMissing"
        )

    @activity.defn(name="write_flow_status")
    def write_flow_status(r: jobflows.WriteFlowStatusInput) -> Done:
        calls.log.append(("write_flow_status", r))
        return Done()

    @activity.defn(name="delete_flow_jobs")
    def delete_flow_jobs(r: jobflows.DeleteFlowJobsInput) -> Done:
        calls.log.append(("delete_flow_jobs", r))
        return Done()

    @activity.defn(name="record_template_jobs")
    def record_template_jobs(r: jobflows.TemplateJobsInput) -> Done:
        calls.log.append(("record_template_jobs", r))
        return Done()

    @activity.defn(name="record_event")
    def record_event(r: dict[str, Any]) -> Done:
        calls.log.append(("record_event", r))
        return Done()

    return [
        create_flow_job,
        write_flow_status,
        delete_flow_jobs,
        record_template_jobs,
        record_event,
    ]


@dataclass
class FlowHarness:
    env: WorkflowEnvironment
    task_queue: str
    calls: Calls
    namespace: str
    started: list[WorkflowHandle[Any, Any]] = field(default_factory=list)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, env: WorkflowEnvironment) -> AsyncIterator[FlowHarness]:
        calls = Calls()
        async with fake_worker(env, JobFlowWorkflow, fakes(calls)) as queue:
            harness = cls(env, queue, calls, f"ns-{uuid.uuid4().hex[:8]}")
            try:
                yield harness
            finally:
                # A flow left open keeps a retry timer: once its worker is gone, a firing would
                # hold the shared server's time skipping for the tests after this one.
                for handle in harness.started:
                    with contextlib.suppress(RPCError):
                        await handle.terminate("test over")

    async def observed(self, spec: JobFlowSpec, max_history: int = 0) -> WorkflowHandle[Any, Any]:
        """What the forwarder sends for the flow: signal-with-start."""
        seen = jobflow_signals.FlowObserved(
            namespace=self.namespace, name="f", uid="flow-uid", spec=spec
        )
        handle: WorkflowHandle[Any, Any] = await self.env.client.start_workflow(
            JobFlowWorkflow.run,
            JobFlowWorkflowInput(max_history=max_history),
            id=keys.jobflow_workflow_id(self.namespace, "f"),
            task_queue=self.task_queue,
            start_signal=jobflow_signals.SIGNAL_JOBFLOW_OBSERVED,
            start_signal_args=[seen],
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        self.started.append(handle)
        return handle

    async def job(self, handle: WorkflowHandle[Any, Any], template: str, phase: str) -> None:
        job = jobflow_signals.FlowJob(name=f"f-{template}", uid=f"uid-{template}", phase=phase)
        await handle.signal(
            jobflow_signals.SIGNAL_FLOW_JOB_CHANGED, jobflow_signals.FlowJobChanged(job=job)
        )


@pytest.fixture
async def h(env: WorkflowEnvironment) -> AsyncIterator[FlowHarness]:
    async with FlowHarness.running(env) as harness:
        yield harness


async def _view(handle: WorkflowHandle[Any, Any]) -> jobflow_signals.FlowView:
    result: jobflow_signals.FlowView = await handle.query(JobFlowWorkflow.status)
    return result


def _made(calls: Calls) -> list[str]:
    return [c.template for c in calls.named("create_flow_job")]


async def test_jobs_are_made_in_dependency_order_and_the_flow_succeeds(h: FlowHarness) -> None:
    handle = await h.observed(CHAIN)
    await settled(lambda: _view(handle), lambda v: v.created == ["f-a"], "f-a made", 10)
    await h.job(handle, "a", "Running")
    await settled(lambda: _view(handle), lambda v: v.phase == "Running", "Running", 10)
    assert _made(h.calls) == ["a"]
    await h.job(handle, "a", "Completed")
    await settled(lambda: _view(handle), lambda v: v.created == ["f-a", "f-b"], "f-b made", 10)
    await h.job(handle, "b", "Completed")
    await settled(lambda: _view(handle), lambda v: v.phase == "Succeed", "Succeed", 10)
    assert _made(h.calls) == ["a", "b"]
    last = h.calls.named("write_flow_status")[-1].status
    assert last.completed_jobs == ["f-a", "f-b"] and last.phase == "Succeed"
    await handle.signal(
        jobflow_signals.SIGNAL_JOBFLOW_DELETED, common_signals.JobDeleted(uid="flow-uid")
    )
    await handle.result()


async def test_a_missing_template_is_waited_for(h: FlowHarness) -> None:
    h.calls.templates = {"b"}
    handle = await h.observed(CHAIN)
    view = await settled(
        lambda: _view(handle), lambda v: v.waiting_for_template == "a", "waiting for a", 10
    )
    assert view.created == [] and h.calls.named("write_flow_status") == []
    h.calls.templates = {"a", "b"}
    await handle.signal(
        jobflow_signals.SIGNAL_TEMPLATE_OBSERVED, jobflow_signals.TemplateObserved(name="a")
    )
    await settled(lambda: _view(handle), lambda v: v.created == ["f-a"], "f-a made", 10)


async def test_state_carried_through_continue_as_new(h: FlowHarness) -> None:
    handle = await h.observed(CHAIN, max_history=40)
    for phase in ("Pending", "Running", "Pending", "Running", "Pending", "Running"):
        await h.job(handle, "a", phase)
    await h.job(handle, "a", "Completed")
    current = await last_run(h.env.client, handle.id, max_history=40)
    view = await settled(lambda: _view(current), lambda v: v.created == ["f-a", "f-b"], "f-b", 10)
    assert view.jobs == {"f-a": "Completed"}
    assert _made(h.calls) == ["a", "b"]  # never made again after continuing as new
