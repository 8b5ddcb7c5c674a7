"""The BatchJobWorkflow's pure core: `decide(state, input, now) -> Decision`.

Every input (the Job observed or deleted, a batch of pod snapshots, a timer, an activity's
outcome) updates the pod table and then runs one `sync.sync`, as every informer event enqueues
a syncJob in the built-in controller. The controller's requeues become durable timers: the
pod-failure back-off, activeDeadlineSeconds, the expectations timeout, the API back-off after
a failed action, and ttlSecondsAfterFinished (the TTL-after-finished controller's job).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from controllers import binding, lifetime
from controllers import effects as fx
from controllers.batchjob import backoff, conditions, pods, sync, tracking, workload
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import BatchJobRecord
from controllers.outcomes import ActionFailed, BindOutcome, PodsAbsent, TimerFired
from controllers.parsed import ParsedJob
from models import keys
from models.batchv1 import (
    TERMINAL_CONDITIONS,
    BatchJob,
    BatchJobStatus,
    ConditionType,
    CreatedPod,
    defaulted,
)
from models.signals import batchjob as batchjob_signals
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import scheduler as scheduler_signals

TTL_TIMER: Final = "ttl"
RETRY_TIMER: Final = sync.RETRY_TIMER
SYNC_TIMERS: Final = (sync.BACKOFF_TIMER, sync.DEADLINE_TIMER, sync.EXPECTATIONS_TIMER)


class Input(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PodsCreated(Input):
    """What creating a batch of pods came to (failed ones and those skipped after them)."""

    kind: Literal["PodsCreated"] = "PodsCreated"
    created: dict[str, CreatedPod]  # pod name → the pod as created
    failed: dict[str, str]  # pod name → why it was not created


class FinalizersRemoved(Input):
    kind: Literal["FinalizersRemoved"] = "FinalizersRemoved"
    pods: dict[str, str]  # name → uid


AnyInput = (
    ParsedJob[BatchJob]
    | common_signals.JobDeleted
    | batchjob_signals.BatchPodsChanged
    | job_signals.PodsListed
    | TimerFired
    | PodsCreated
    | FinalizersRemoved
    | workload.WorkloadEnsured
    | ActionFailed
    | scheduler_signals.PodsPlaced
    | BindOutcome
    | PodsAbsent
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: BatchJobRecord
    effects: tuple[batch_fx.AnyEffect, ...] = ()


def _observe(state: BatchJobRecord, observed: ParsedJob[BatchJob]) -> tuple[BatchJobRecord, bool]:
    """The Job as now seen; True: it is a new Job under the same name (start over)."""
    job = defaulted(observed.job)
    if state.job is not None and job.metadata.uid != state.job.metadata.uid:
        return state, True
    update: dict[str, object] = {"job": job.model_copy(update={"status": None})}
    if state.job is None:
        # Adopt what is recorded (a workflow started again for a Job synced before).
        recorded = job.status or BatchJobStatus()
        update.update(status=recorded, written=recorded)
    elif job.status is not None:
        update["status"] = _with_terminal(state.status, job.status)
    return state.model_copy(update=update), False


def _with_terminal(ours: BatchJobStatus, recorded: BatchJobStatus) -> BatchJobStatus:
    """The apiserver refuses to take back a terminal condition, so one it holds and this core
    lacks is adopted: a write from a workflow task that was never recorded (its worker died
    after a local write) put it there, and every later write must keep it."""
    adopted = [
        c
        for c in recorded.conditions or ()
        if c.type in TERMINAL_CONDITIONS and c.status == "True" and not ours.is_true(c.type)
    ]
    if not adopted:
        return ours
    kept = [c for c in ours.conditions or () if c.type not in {a.type for a in adopted}]
    return ours.model_copy(update={"conditions": [*kept, *adopted]})


def _created(
    state: BatchJobRecord, outcome: PodsCreated, now: datetime
) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    pods = dict(state.pods)
    for name, pod in outcome.created.items():
        old = pods.get(name)
        if old is not None and old.uid is None:
            pods[name] = old.model_copy(update={"uid": pod.uid, "created_at": pod.created_at})
    for name in outcome.failed:
        old = pods.get(name)
        if old is not None and old.uid is None:
            del pods[name]
    state = state.model_copy(update={"pods": pods})
    if not outcome.failed:
        return state.model_copy(update={"api_failures": 0}), []
    first = next(iter(sorted(outcome.failed.items())))
    why = f"{len(outcome.failed)} pods not created, first {first[0]}: {first[1]}"
    return _retry(state, "CreatePods", why, now)


def _retry(
    state: BatchJobRecord, what: str, why: str, now: datetime
) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    """The API back-off: sync again in 1 s, 2 s, … up to a minute (a durable timer)."""
    failures = state.api_failures + 1
    wait = backoff.api_retry(failures)
    fires_at = now + wait
    timers = {**state.timers, RETRY_TIMER: fires_at}
    state = state.model_copy(update={"api_failures": failures, "timers": timers})
    return state, [
        fx.RecordEvent(type="Warning", reason="SyncFailed", message=f"{what}: {why}"[:1000]),
        fx.StartTimer(
            key=RETRY_TIMER,
            fires_at=fires_at,
            summary=f"sync again in {wait.total_seconds():g}s after {what} failed",
        ),
    ]


def _failed(
    state: BatchJobRecord, failed: ActionFailed, now: datetime
) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    update: dict[str, object] = {}
    if failed.effect == "WriteStatus":
        update["written"] = None  # the apiserver may hold anything: write it again
    if failed.effect == "RemoveFinalizers":
        update["removing"] = ()  # the pods tell which finalizers are left
    state = workload.failed(state.model_copy(update=update), failed.effect)
    return _retry(state, failed.effect, failed.error, now)


def _timers(
    state: BatchJobRecord, wanted: dict[str, sync.Timer]
) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    """Start, move or cancel the timers a sync asks for."""
    timers = dict(state.timers)
    out: list[batch_fx.AnyEffect] = []
    for key in SYNC_TIMERS:
        want = wanted.get(key)
        if want is None and key in timers:
            del timers[key]
            out.append(fx.CancelTimer(key=key))
        elif want is not None and timers.get(key) != (at := conditions.next_second(want.fires_at)):
            # A sync sees whole seconds: a timer firing before the next whole second would find
            # its deadline not yet passed and ask for itself again, in the same activation.
            timers[key] = at
            out.append(fx.StartTimer(key=key, fires_at=at, summary=want.summary))
    return state.model_copy(update={"timers": timers}), out


def _finished_at(status: BatchJobStatus) -> datetime | None:
    for type_ in (ConditionType.COMPLETE, ConditionType.FAILED):
        found = status.condition(type_)
        if found is not None and found.status == "True":
            return found.last_transition_time
    return None


def _ttl(state: BatchJobRecord, now: datetime) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    """ttlSecondsAfterFinished: a durable timer from the Complete/Failed transition, moved or
    cancelled when the field is edited later (it stays mutable, and the TTL controller reads
    the Job as it is now)."""
    job = state.job
    if job is None or state.deleted or state.ttl_expired:
        return state, []
    ttl = job.spec.ttl_seconds_after_finished
    finished = _finished_at(state.status)
    armed = state.timers.get(TTL_TIMER)
    if armed is not None and armed <= now:
        return state, []  # due: it fires as it is
    if ttl is None or finished is None:
        if armed is None:
            return state, []
        timers = {k: v for k, v in state.timers.items() if k != TTL_TIMER}
        return state.model_copy(update={"timers": timers}), [fx.CancelTimer(key=TTL_TIMER)]
    fires_at = lifetime.ttl_deadline(finished, ttl, now)
    if fires_at == armed:
        return state, []
    state = state.model_copy(update={"timers": {**state.timers, TTL_TIMER: fires_at}})
    summary = f"delete job in {(fires_at - now).total_seconds():g}s: ttlSecondsAfterFinished {ttl}"
    return state, [fx.StartTimer(key=TTL_TIMER, fires_at=fires_at, summary=summary)]


def _expire(state: BatchJobRecord) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    job = state.job
    if job is None or state.deleted or state.ttl_expired:
        return state, []
    return state.model_copy(update={"ttl_expired": True}), [*lifetime.expired(state.identity)]


def restored_timers(state: BatchJobRecord) -> list[fx.StartTimer]:
    """The timers a run that continued as new re-arms, for the time they have left."""
    return [
        fx.StartTimer(key=key, fires_at=at, summary=f"{key} (continued)")
        for key, at in sorted(state.timers.items())
    ]


def _gone(state: BatchJobRecord) -> Decision:
    """The Job was deleted, or its namespace is going (which deletes it): nothing is left to
    do but cancel what is armed."""
    armed = sorted(state.timers)
    state = state.model_copy(update={"deleted": True, "timers": {}})
    return Decision(state=state, effects=lifetime.ended(armed))


def decide(state: BatchJobRecord, event: AnyInput, now: datetime) -> Decision:
    """The next state and the effects that carry it out, for one input."""
    before = tracking.phase(state.status)
    out: list[batch_fx.AnyEffect] = []
    match event:
        case ParsedJob():
            state, start_over = _observe(state, event)
            if start_over:
                return Decision(state=state, effects=(fx.StartOver(observed=event.signal),))
        case common_signals.JobDeleted():
            if state.job is not None and event.uid != state.job.metadata.uid:
                return Decision(state=state)
            return _gone(state)
        case ActionFailed(namespace_gone=True):
            return _gone(state)
        case batchjob_signals.BatchPodsChanged():
            state = pods.observed(state, event)
        case job_signals.PodsListed():
            state, unheard = pods.listed(state, event)
            out = [fx.CheckPods(names=unheard)] if unheard else []
        case PodsAbsent():
            unheard = [p.name for p in state.pods.values() if p.name in event.names and not p.heard]
            state = pods.vanished(state, unheard)
        case TimerFired():
            timers = {k: v for k, v in state.timers.items() if k != event.key}
            state = state.model_copy(update={"timers": timers})
            if event.key == TTL_TIMER:
                state, out = _expire(state)
        case PodsCreated():
            state, out = _created(state, event, now)
        case FinalizersRemoved():
            state = pods.finalizers_removed(state, event.pods)
        case workload.WorkloadEnsured():
            state = workload.ensured(state, event)
        case ActionFailed():
            # No sync now: it would repeat the write that failed at once; the back-off's
            # timer (or the next change) syncs again.
            state, out = _failed(state, event, now)
            return Decision(state=state, effects=tuple(out))
        case scheduler_signals.PodsPlaced():
            return Decision(state=state, effects=tuple(binding.placed(gang(state), event)))
        case BindOutcome():
            out = [*binding.bound(gang(state), event.failed)] if state.job else []
    state, gang_effects = workload.follow(state)
    if workload.waiting(state):  # no pod before the Job's PodGroup exists
        return Decision(state=state, effects=(*out, *gang_effects))
    state, group = _pod_group(state)
    plan = sync.sync(state, now)
    state, timed = _timers(plan.state, plan.timers)
    state, ttl = _ttl(state, now)
    after = tracking.phase(state.status)
    changed: list[batch_fx.AnyEffect] = []
    if after != before:
        reason = _reason(state.status)
        changed.append(fx.PhaseChanged(phase=after, previous=before, reason=reason))
    synced = workload.named(state, plan.effects)
    effects = (*out, *gang_effects, *group, *synced, *timed, *ttl, *changed)
    return Decision(state=state, effects=effects)


def gang(state: BatchJobRecord) -> binding.Gang:
    """The Job as placement sees it: which pods still wait for a node."""
    job = state.job
    return binding.Gang(
        namespace=(job.metadata.namespace if job else None) or "",
        scheduler=keys.scheduler_workflow_id(job.scheduler_name if job else "volcano"),
        gone=job is None or state.deleted or job.metadata.deletion_timestamp is not None,
        waiting=frozenset(
            n for n, p in state.pods.items() if p.active and p.node is None and p.phase == "Pending"
        ),
    )


def _pod_group(state: BatchJobRecord) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    """Before the first pod of a gang-scheduled Job: the PodGroup its pods are placed by."""
    job = state.job
    if job is None or state.pod_group or state.deleted or not job.gang_scheduled:
        return state, []
    if state.kube_gang is not None:
        return state, []  # its pods are placed through the mirror of its Kubernetes PodGroup
    if state.status.finished:
        return state, []
    return state.model_copy(update={"pod_group": True}), [batch_fx.EnsurePodGroup(job=job)]


def _reason(status: BatchJobStatus) -> str:
    """The newest condition's reason and message, for the UI's current details."""
    latest = [c for c in status.conditions or [] if c.status == "True"]
    if not latest:
        return "started" if status.start_time else "created"
    last = latest[-1]
    return f"{last.type} {last.reason}: {last.message}"
