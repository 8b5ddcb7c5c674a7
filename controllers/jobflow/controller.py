"""The JobFlow controller's decisions for one flow. Pure.

Every input is one of Volcano's syncs (`syncJobFlow`), unless the flow's phase does not sync
(`states.IGNORED`):

1. jobRetainPolicy delete and Succeed: delete the flow's Jobs, and nothing else.
2. deployJob: the entries in spec order; the first whose Job does not exist and whose targets'
   Jobs have all Completed (`judge`) is created (`CreateFlowJob`); its outcome comes back as
   `FlowJobCreated` and the sync goes on from there, one Job at a time, as Volcano's loop does.
   A missing JobTemplate ends the sync there, with no status written (Volcano's sync returns
   its error before the status): the flow waits for the template, says so in a Warning Event,
   and tries again when the forwarder reports the template (`TemplateObserved`) or after
   `RETRY`.
3. The status from the Jobs (`status.compute`), the phase moved (`states.settle`), written
   when it differs from what was written last.

A Job made (or found made) also syncs its JobTemplate's status (`RecordTemplateJobs`), as
Volcano's JobTemplate controller does when a Job labelled with the template appears.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.jobflow import effects as jf_fx
from controllers.jobflow import states, status
from controllers.jobflow.state import FlowRecord
from controllers.outcomes import ActionFailed, AnyOutcome, BindOutcome, PodsAbsent, TimerFired
from models import jobflow, vcjob
from models.jobflow import Flow, FlowPhase, JobFlowSpec, RetainPolicy
from models.signals import common as common_signals
from models.signals import jobflow as jobflow_signals

RETRY: Final = timedelta(seconds=30)
RETRY_TIMER: Final = "retry"
Created = Literal["Created", "Exists", "TemplateMissing"]


class FlowJobCreated(BaseModel):
    """What `CreateFlowJob` found: the Job made, already there, or no template to make it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["FlowJobCreated"] = "FlowJobCreated"
    template: str
    outcome: Created


Input = (
    jobflow_signals.FlowObserved
    | common_signals.JobDeleted
    | jobflow_signals.FlowJobChanged
    | jobflow_signals.TemplateObserved
    | FlowJobCreated
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: FlowRecord
    effects: tuple[jf_fx.AnyEffect, ...] = ()


def decide(state: FlowRecord, item: Input | AnyOutcome, now: datetime) -> Decision:
    match item:
        case jobflow_signals.FlowObserved():
            return _sync(_observed(state, item), now)
        case common_signals.JobDeleted():
            if state.uid and item.uid != state.uid:
                return Decision(state=state)  # an older flow of the same name
            return Decision(state=state, effects=_ended(state))
        case jobflow_signals.FlowJobChanged():
            return _sync(_job_changed(state, item.job), now)
        case jobflow_signals.TemplateObserved():
            return _template_observed(state, item.name, now)
        case FlowJobCreated():
            return _created(state, item, now)
        case TimerFired():
            if item.key != RETRY_TIMER:
                return Decision(state=state)
            return _sync(state.model_copy(update={"retry_at": None, "missing": ""}), now)
        case ActionFailed():
            return _failed(state, item, now)
        case BindOutcome() | PodsAbsent():
            return Decision(state=state)  # this workflow binds nothing and creates no pod


def restored_timers(state: FlowRecord) -> list[fx.StartTimer]:
    """The timer a run that continued as new re-arms."""
    return [] if state.retry_at is None else [_retry(state.retry_at)]


def _observed(state: FlowRecord, seen: jobflow_signals.FlowObserved) -> FlowRecord:
    """A flow of another uid under the same name starts from nothing (Jobs heard of before
    the first sight stay); the first sight takes the phase the object already has (a run that
    lost its history goes on from there)."""
    first = state.uid != seen.uid
    base = FlowRecord(jobs=state.jobs) if state.uid == "" else FlowRecord() if first else state
    update: dict[str, object] = {
        "namespace": seen.namespace,
        "name": seen.name,
        "uid": seen.uid,
        "spec": seen.spec,
    }
    if first and seen.status is not None:
        update["status"] = seen.status
    return base.model_copy(update=update)


def _job_changed(state: FlowRecord, job: jobflow_signals.FlowJob) -> FlowRecord:
    if not job.deleted:
        return state.model_copy(update={"jobs": {**state.jobs, job.name: job}})
    known = state.jobs.get(job.name)
    if known is not None and known.uid != job.uid:
        return state  # an older Job of that name
    jobs = {n: j for n, j in state.jobs.items() if n != job.name}
    created = [n for n in state.created if n != job.name]
    deleting = [n for n in state.deleting if n != job.name]
    return state.model_copy(update={"jobs": jobs, "created": created, "deleting": deleting})


def _template_observed(state: FlowRecord, template: str, now: datetime) -> Decision:
    made = state.spec is not None and any(
        f.name == template and state.exists(jobflow.job_name(state.name, f.name))
        for f in state.spec.entries
    )
    if state.missing == template:
        state = state.model_copy(update={"missing": ""})
    decision = _sync(state, now)
    if not made:
        return decision
    record = jf_fx.RecordTemplateJobs(namespace=state.namespace, template=template)
    return decision.model_copy(update={"effects": (record, *decision.effects)})


def _created(state: FlowRecord, done: FlowJobCreated, now: datetime) -> Decision:
    job = jobflow.job_name(state.name, done.template)
    if done.outcome == "TemplateMissing":
        until = now + RETRY
        waiting = state.model_copy(
            update={"missing": done.template, "warned": done.template, "retry_at": until}
        )
        if state.warned == done.template:
            return Decision(state=waiting, effects=(_retry(until),))  # said so already
        event = fx.RecordEvent(
            type="Warning",
            reason="SyncJobFlow",
            message=f'SyncJobFlow JobFlow failed for jobtemplates.flow.volcano.sh "{done.template}"'
            f" not found: Job {job} waits for it",
        )
        return Decision(state=waiting, effects=(event, _retry(until)))
    created = sorted({*state.created, job})
    state = state.model_copy(update={"created": created, "missing": "", "warned": ""})
    effects: list[jf_fx.AnyEffect] = []
    if done.outcome == "Created":
        effects.append(fx.RecordEvent(reason="Created", message=f"create a job named {job}!"))
    effects.append(jf_fx.RecordTemplateJobs(namespace=state.namespace, template=done.template))
    then = _sync(state, now)
    return then.model_copy(update={"effects": (*effects, *then.effects)})


def _sync(state: FlowRecord, now: datetime) -> Decision:
    spec = state.spec
    if spec is None:
        return Decision(state=state)  # a Job heard of before its flow
    phase = state.status.phase
    if not states.syncs(phase):
        return Decision(state=state)
    if spec.job_retain_policy == RetainPolicy.DELETE and phase == FlowPhase.SUCCEED:
        return _delete_jobs(state)
    entry = _next_to_create(state, spec)
    if entry is not None:
        if state.missing == entry.name:
            return Decision(state=state)  # still waiting for its template
        create = jf_fx.CreateFlowJob(
            namespace=state.namespace, flow=state.name, flow_uid=state.uid, template=entry.name
        )
        return Decision(state=state, effects=(create,))
    return _write_status(state, spec, now)


def _next_to_create(state: FlowRecord, spec: JobFlowSpec) -> Flow | None:
    """deployJob: the first entry whose Job does not exist and whose targets all Completed."""
    for entry in spec.entries:
        if state.exists(jobflow.job_name(state.name, entry.name)):
            continue
        if all(_completed(state, target) for target in entry.targets):
            return entry
    return None


def _completed(state: FlowRecord, target: str) -> bool:
    job = state.jobs.get(jobflow.job_name(state.name, target))
    return job is not None and job.phase == vcjob.JobPhase.COMPLETED


def _write_status(state: FlowRecord, spec: JobFlowSpec, now: datetime) -> Decision:
    computed = status.compute(state.status, state.jobs, now)
    before = state.status.phase
    after = states.settle(before, states.counts(computed, len(spec.entries)))
    computed = status.with_phase(computed, after)
    first = state.written is None
    state = state.model_copy(update={"status": computed})
    effects: list[jf_fx.AnyEffect] = []
    if computed != state.written:
        effects.append(
            jf_fx.WriteFlowStatus(namespace=state.namespace, name=state.name, status=computed)
        )
        state = state.model_copy(update={"written": computed})
    if after != before or first:  # the first write shows the phase too
        effects.append(fx.PhaseChanged(phase=after, previous=before, reason="SyncJobFlow"))
    then = Decision(state=state, effects=tuple(effects))
    if after == FlowPhase.SUCCEED and spec.job_retain_policy == RetainPolicy.DELETE:
        deleted = _delete_jobs(state)
        return Decision(state=deleted.state, effects=(*then.effects, *deleted.effects))
    return then


def _delete_jobs(state: FlowRecord) -> Decision:
    names = sorted(n for n in state.jobs if n not in state.deleting)
    if not names:
        return Decision(state=state)
    delete = jf_fx.DeleteFlowJobs(namespace=state.namespace, names=names)
    deleting = sorted({*state.deleting, *names})
    return Decision(state=state.model_copy(update={"deleting": deleting}), effects=(delete,))


def _failed(state: FlowRecord, failed: ActionFailed, now: datetime) -> Decision:
    if failed.namespace_gone:
        return Decision(state=state, effects=_ended(state))  # the flow goes with it
    if failed.effect == "RecordTemplateJobs":
        return Decision(state=state)  # the next Job made from the template records it again
    update: dict[str, object] = {"retry_at": now + RETRY}
    if failed.effect == "WriteFlowStatus":
        update["written"] = None
    elif failed.effect == "DeleteFlowJobs":
        update["deleting"] = []
    retry = state.model_copy(update=update)
    event = fx.RecordEvent(
        type="Warning",
        reason="SyncJobFlow",
        message=f"SyncJobFlow JobFlow failed for {failed.error}",
    )
    return Decision(state=retry, effects=(event, _retry(now + RETRY)))


def _ended(state: FlowRecord) -> tuple[jf_fx.AnyEffect, ...]:
    if state.retry_at is None:
        return (fx.Finish(),)
    return (fx.CancelTimer(key=RETRY_TIMER), fx.Finish())


def _retry(until: datetime) -> fx.StartTimer:
    return fx.StartTimer(key=RETRY_TIMER, fires_at=until, summary="sync the JobFlow again")
