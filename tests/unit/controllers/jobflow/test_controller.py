"""The JobFlow core: Volcano's deployJob order and judge, the status and phase it writes,
jobRetainPolicy delete, a missing JobTemplate, and the flow's end. Whole decisions by value."""

from __future__ import annotations

from datetime import timedelta

import pytest

from controllers import effects as fx
from controllers.jobflow import controller
from controllers.jobflow import effects as jf_fx
from controllers.jobflow.state import FlowRecord
from controllers.outcomes import ActionFailed, TimerFired
from models.jobflow import FlowPhase, FlowState, JobFlowStatus
from models.signals import common as common_signals
from models.signals import jobflow as jobflow_signals
from tests.unit.controllers.jobflow.flows import NOW, NS, UID, changed, observed, record, spec

pytestmark = pytest.mark.unit
CHAIN = spec("a", "b<a")


def _create(template: str) -> jf_fx.CreateFlowJob:
    return jf_fx.CreateFlowJob(namespace=NS, flow="f", flow_uid=UID, template=template)


def _made(template: str) -> controller.FlowJobCreated:
    return controller.FlowJobCreated(template=template, outcome="Created")


def _writes(decision: controller.Decision) -> list[JobFlowStatus]:
    return [e.status for e in decision.effects if isinstance(e, jf_fx.WriteFlowStatus)]


def test_first_sight_creates_the_entries_without_targets_one_at_a_time() -> None:
    decision = controller.decide(FlowRecord(), observed(spec("a", "c", "b<a")), NOW)
    assert decision.effects == (_create("a"),)
    assert decision.state.spec == spec("a", "c", "b<a")


def test_a_job_made_goes_on_with_the_next_entry_then_writes_the_status() -> None:
    state = record(spec("a", "c", "b<a"))
    decision = controller.decide(state, _made("a"), NOW)
    assert decision.effects == (
        fx.RecordEvent(reason="Created", message="create a job named f-a!"),
        jf_fx.RecordTemplateJobs(namespace=NS, template="a"),
        _create("c"),
    )
    then = controller.decide(decision.state, _made("c"), NOW)
    pending = JobFlowStatus(state=FlowState(phase=FlowPhase.PENDING))
    assert then.effects[-2:] == (
        jf_fx.WriteFlowStatus(namespace=NS, name="f", status=pending),
        fx.PhaseChanged(phase=FlowPhase.PENDING, previous=FlowPhase.PENDING, reason="SyncJobFlow"),
    )
    assert then.state.created == ["f-a", "f-c"]


def test_an_existing_job_counts_as_made_without_an_event() -> None:
    exists = controller.FlowJobCreated(template="a", outcome="Exists")
    decision = controller.decide(record(CHAIN), exists, NOW)
    assert decision.effects[0] == jf_fx.RecordTemplateJobs(namespace=NS, template="a")
    assert not any(isinstance(e, fx.RecordEvent) for e in decision.effects)
    assert not any(isinstance(e, jf_fx.CreateFlowJob) for e in decision.effects)


@pytest.mark.parametrize("phase", ["Pending", "Running", "Completing", "Failed", "Aborted"])
def test_a_target_not_completed_holds_its_dependents(phase: str) -> None:
    decision = controller.decide(record(CHAIN, a=phase), changed("a", phase), NOW)
    assert not any(isinstance(e, jf_fx.CreateFlowJob) for e in decision.effects)


def test_a_target_completed_creates_its_dependent() -> None:
    decision = controller.decide(record(CHAIN, a="Running"), changed("a", "Completed"), NOW)
    assert decision.effects == (_create("b"),)


def test_every_target_must_complete() -> None:
    flow = spec("a", "c", "b<a,c")
    held = controller.decide(record(flow, a="Completed", c="Running"), changed("c", "Running"), NOW)
    assert not any(isinstance(e, jf_fx.CreateFlowJob) for e in held.effects)
    ready = controller.decide(held.state, changed("c", "Completed"), NOW)
    assert ready.effects == (_create("b"),)


def test_status_lists_jobs_by_phase_and_the_flow_succeeds() -> None:
    state = record(CHAIN, a="Completed", b="Running")
    running = controller.decide(state, changed("b", "Running"), NOW)
    [status] = _writes(running)
    assert (status.completed_jobs, status.running_jobs, status.phase) == (
        ["f-a"],
        ["f-b"],
        FlowPhase.RUNNING,
    )
    later = NOW + timedelta(minutes=1)
    done = controller.decide(running.state, changed("b", "Completed"), later)
    [status] = _writes(done)
    assert status.completed_jobs == ["f-a", "f-b"]
    assert status.phase == FlowPhase.SUCCEED
    assert status.conditions is not None and status.conditions["f-b"].phase == "Completed"
    [entry] = [s for s in status.job_status_list or [] if s.name == "f-b"]
    histories = entry.running_histories or []
    assert [(h.state, h.start_timestamp, h.end_timestamp) for h in histories] == [
        ("Running", NOW, later),
        ("Completed", later, None),
    ]
    assert (
        fx.PhaseChanged(phase=FlowPhase.SUCCEED, previous=FlowPhase.RUNNING, reason="SyncJobFlow")
        in done.effects
    )
    assert not any(isinstance(e, jf_fx.DeleteFlowJobs) for e in done.effects)


def test_an_unchanged_status_is_not_written_again() -> None:
    first = controller.decide(record(CHAIN, a="Running"), changed("a", "Running"), NOW)
    again = controller.decide(first.state, changed("a", "Running"), NOW + timedelta(seconds=5))
    assert _writes(first) and again.effects == ()


def test_unknown_phases_and_completing_are_listed_as_volcano_lists_them() -> None:
    state = record(spec("a", "b", "c"), a="Aborted", b="Completing", c="Terminated")
    [status] = _writes(controller.decide(state, changed("c", "Terminated"), NOW))
    assert status.un_know_jobs == ["f-a"]
    assert status.terminated_jobs == ["f-c"]
    assert status.completed_jobs is None and status.phase == FlowPhase.FAILED


def test_retain_policy_delete_deletes_the_jobs_once_succeeded() -> None:
    flow = spec("a", "b<a", delete=True)
    decision = controller.decide(
        record(flow, a="Completed", b="Running"), changed("b", "Completed"), NOW
    )
    assert decision.effects[-1] == jf_fx.DeleteFlowJobs(namespace=NS, names=["f-a", "f-b"])
    assert _writes(decision)[0].phase == FlowPhase.SUCCEED
    gone = controller.decide(decision.state, changed("a", "Completed", deleted=True), NOW)
    assert gone.effects == ()  # no status write, no new Job: the flow is done
    assert gone.state.jobs.keys() == {"f-b"}


def test_a_missing_template_waits_with_a_warning_and_no_status() -> None:
    missing = controller.FlowJobCreated(template="a", outcome="TemplateMissing")
    decision = controller.decide(record(CHAIN), missing, NOW)
    assert [type(e) for e in decision.effects] == [fx.RecordEvent, fx.StartTimer]
    assert decision.effects[0].type == "Warning"  # type: ignore[union-attr]
    assert decision.state.missing == "a"
    quiet = controller.decide(decision.state, observed(CHAIN), NOW)
    assert quiet.effects == ()
    appeared = controller.decide(decision.state, jobflow_signals.TemplateObserved(name="a"), NOW)
    assert appeared.effects == (_create("a"),)
    retried = controller.decide(decision.state, TimerFired(key=controller.RETRY_TIMER), NOW)
    assert retried.effects == (_create("a"),)
    again = controller.decide(retried.state, missing, NOW)
    assert [type(e) for e in again.effects] == [fx.StartTimer]  # warned once, retried


def test_a_template_appearing_records_its_jobs_for_a_flow_that_made_one() -> None:
    decision = controller.decide(
        record(CHAIN, a="Running"), jobflow_signals.TemplateObserved(name="a"), NOW
    )
    assert decision.effects[0] == jf_fx.RecordTemplateJobs(namespace=NS, template="a")


def test_a_job_deleted_before_the_flow_finished_is_made_again() -> None:
    decision = controller.decide(
        record(CHAIN, a="Running"), changed("a", "Running", deleted=True), NOW
    )
    assert decision.effects == (_create("a"),)


def test_a_failed_flow_does_nothing_more() -> None:
    state = record(CHAIN, a="Failed").model_copy(
        update={"status": JobFlowStatus(state=FlowState(phase=FlowPhase.FAILED))}
    )
    assert controller.decide(state, changed("a", "Pending"), NOW).effects == ()


def test_a_failed_creation_warns_and_retries() -> None:
    failed = ActionFailed(effect="CreateFlowJob", error="403 Forbidden")
    decision = controller.decide(record(CHAIN), failed, NOW)
    assert decision.effects == (
        fx.RecordEvent(
            type="Warning",
            reason="SyncJobFlow",
            message="SyncJobFlow JobFlow failed for 403 Forbidden",
        ),
        fx.StartTimer(
            key=controller.RETRY_TIMER,
            fires_at=NOW + controller.RETRY,
            summary="sync the JobFlow again",
        ),
    )
    assert controller.restored_timers(decision.state) == [decision.effects[1]]


def test_the_flow_deleted_ends_the_run_but_not_an_older_flows_deletion() -> None:
    state = record(CHAIN)
    assert controller.decide(state, common_signals.JobDeleted(uid=UID), NOW).effects == (
        fx.Finish(),
    )
    assert controller.decide(state, common_signals.JobDeleted(uid="old"), NOW).effects == ()


def test_a_new_flow_under_the_same_name_starts_afresh() -> None:
    state = record(CHAIN, a="Completed", b="Completed")
    decision = controller.decide(state, observed(spec("x"), uid="new-uid"), NOW)
    assert decision.state.jobs == {} and decision.state.uid == "new-uid"
    assert decision.effects == (
        jf_fx.CreateFlowJob(namespace=NS, flow="f", flow_uid="new-uid", template="x"),
    )


def test_the_first_sight_takes_the_phase_already_written() -> None:
    seen = observed(CHAIN).model_copy(
        update={"status": JobFlowStatus(state=FlowState(phase=FlowPhase.FAILED))}
    )
    decision = controller.decide(FlowRecord(), seen, NOW)
    assert decision.effects == () and decision.state.status.phase == FlowPhase.FAILED


def test_a_job_heard_of_before_its_flow_is_kept_for_the_first_sync() -> None:
    early = controller.decide(FlowRecord(), changed("a", "Completed"), NOW)
    assert early.effects == ()
    decision = controller.decide(early.state, observed(CHAIN), NOW)
    assert decision.effects == (_create("b"),)
