"""The JobWorkflow's pure core: `decide(state, input, now) -> Decision`.

Each input (a forwarder signal, a command, a timer, a failed activity) becomes Volcano
requests, which `actions` runs: delayed-action cleanup, applyPolicies, then either a durable
timer or the state table's rule (syncJob, killJob).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from controllers import binding, lifetime
from controllers import effects as fx
from controllers.job import actions, bus_events, clock, lease, markers, naming, results
from controllers.job import effects as job_fx
from controllers.job.policies import Request, Resolution
from controllers.job.state import JobRecord, PodRecord
from controllers.job.transitions import FINISHED
from controllers.outcomes import ActionFailed, BindOutcome, PodsAbsent, TimerFired
from controllers.parsed import ParsedJob
from models import keys
from models.bus import Action, Event
from models.defaults import default_job
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import scheduler as scheduler_signals
from models.vcjob import Job, JobPhase

Input = (
    ParsedJob[Job]
    | common_signals.JobDeleted
    | job_signals.PodsChanged
    | job_signals.PodsListed
    | job_signals.PodGroupObserved
    | common_signals.CommandIssued
    | TimerFired
    | ActionFailed
    | scheduler_signals.PodsPlaced
    | BindOutcome
    | PodsAbsent
    | results.VolumesEnsured
    | results.PluginsApplied
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: JobRecord
    effects: tuple[job_fx.AnyEffect, ...] = ()


def _observe(
    state: JobRecord, observed: ParsedJob[Job], now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    job = default_job(observed.job)
    if state.job is not None and job.metadata.uid != state.job.metadata.uid:
        return state, [fx.StartOver(observed=observed.signal)]
    if state.job is None and job.status is not None:
        # Adopt what is recorded, markers included (a run that starts over after a loss).
        adopted = dict(job.status.controlled_resources or {}) if state.job_io else {}
        ran_before = job.status.state is not None and job.status.state.phase is not None
        state = state.model_copy(
            update={"status": job.status, "controlled": adopted, "ran_before": ran_before}
        )
    job = markers.with_claims(job.model_copy(update={"status": None}), state.volume_claims)
    state, fenced = lease.arm(state.model_copy(update={"job": job}), now)
    state, out = actions.handle(state, [Request(event=Event.OUT_OF_SYNC)], now)
    return state, [*out, *fenced]


def _volumes_ensured(
    state: JobRecord, ensured: results.VolumesEnsured, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """The claims exist and are named: keep them, then sync, which goes on to the PodGroup."""
    if state.job is None:
        return state, []
    return actions.handle(
        markers.claims_ensured(state, ensured), [Request(event=Event.OUT_OF_SYNC)], now
    )


def _pods(
    state: JobRecord, changed: job_signals.PodsChanged, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    pods = dict(state.pods)
    requests = []
    for snapshot in changed.pods:
        old = pods.get(snapshot.name)
        if snapshot.deleted:
            pods.pop(snapshot.name, None)
        else:
            pods[snapshot.name] = bus_events.record_of(snapshot)
        if state.job is not None:
            event = bus_events.event_of(old, snapshot, state.job.spec, pods)
            requests.append(bus_events.request_of(event, snapshot))
    return actions.handle(state.model_copy(update={"pods": pods}), requests, now)


def _listed(
    state: JobRecord, listed: job_signals.PodsListed, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """Pods a full list lacks went unseen: one the workflow heard of is handled as its deletion
    would be; one it only created is read first (it may be newer than the list)."""
    missing = [p for p in state.pods.values() if listed.lacks(p.name, p.uid)]
    unheard = sorted(p.name for p in missing if p.uid is None)
    state, out = _vanished(state, [p for p in missing if p.uid is not None], now)
    return state, [*out, fx.CheckPods(names=unheard)] if unheard else out


def _vanished(
    state: JobRecord, pods: list[PodRecord], now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """These pods are gone, unreported: as if the forwarder had reported their deletion."""
    if not pods:
        return state, []
    gone = [
        job_signals.PodSnapshot(
            name=p.name,
            uid=p.uid or "",
            task=p.task,
            index=p.index,
            job_version=p.job_version,
            phase=p.phase,
            deleted=True,
            out_of_sync=p.out_of_sync,
            partition=p.partition,
        )
        for p in pods
    ]
    return _pods(state, job_signals.PodsChanged(pods=gone), now)


def _pod_group(
    state: JobRecord, observed: job_signals.PodGroupObserved, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    if state.job is None:
        return state, []
    if observed.name == naming.legacy_pod_group_name(state.job) and state.legacy_pod_groups:
        return _legacy_pod_group(state, observed, now)
    if observed.name != naming.pod_group_name(state.job):
        return state, []  # another controller's PodGroup
    if observed.deleted:
        update = {"pod_group_exists": False, "pod_group_phase": None, "pod_group_generation": None}
        return actions.handle(state.model_copy(update=update), [Request()], now)
    changed = observed.phase != state.pod_group_phase
    state = state.model_copy(update={"pod_group_phase": observed.phase, "pod_group_exists": True})
    if not changed:
        return state, []
    event = Event.JOB_UNKNOWN if observed.phase == "Unknown" else Event.OUT_OF_SYNC
    return actions.handle(state, [Request(event=event)], now)


def _legacy_pod_group(
    state: JobRecord, observed: job_signals.PodGroupObserved, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """The job's PodGroup from before Volcano 1.5: it gates the job while its own does not
    exist; once it is deleted, the next sync makes the job's own."""
    was_on = naming.on_legacy_pod_group(state)
    before = naming.gate_phase(state)
    update: dict[str, object] = {
        "legacy_pod_group_exists": not observed.deleted,
        "legacy_pod_group_phase": None if observed.deleted else observed.phase,
    }
    if observed.deleted and was_on:
        update.update(pod_group_exists=False, pod_group_generation=None)
    state = state.model_copy(update=update)
    if observed.deleted:
        return actions.handle(state, [Request()], now) if was_on else (state, [])
    phase = naming.gate_phase(state)
    if phase == before:
        return state, []
    event = Event.JOB_UNKNOWN if phase == "Unknown" else Event.OUT_OF_SYNC
    return actions.handle(state, [Request(event=event)], now)


def _command(
    state: JobRecord, command: common_signals.CommandIssued, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    note = fx.RecordEvent(
        reason="CommandIssued",
        message=f"Command {command.command or '(update)'} issued {command.action}"
        + (f": {command.reason}" if command.reason else ""),
    )
    try:
        action = Action(command.action)
    except ValueError:
        return state, [note.model_copy(update={"type": "Warning", "reason": "InvalidCommand"})]
    request = Request(
        event=Event.COMMAND_ISSUED, action=action, reason=f"command {command.command or 'update'}"
    )
    state, out = actions.handle(state, [request], now)
    return state, [note, *out]


def _timer(
    state: JobRecord, fired: TimerFired, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    if fired.key == clock.TTL_KEY:
        state, expired = clock.ttl_fired(state)
        return state, [*expired]
    if fired.key == lease.LEASE_KEY:
        return lease.fired(state, now)
    entry = state.delayed.get(fired.key)
    if entry is None or entry.timer != fired.timer:
        return state, []  # cancelled or replaced meanwhile
    state = state.model_copy(
        update={"delayed": {k: v for k, v in state.delayed.items() if k != fired.key}}
    )
    request = Request(
        event=Event(entry.event),
        task=entry.task,
        pod=entry.pod,
        pod_uid=entry.pod_uid,
        partition=entry.partition,
        reason="timeout expired",
    )
    return actions.act(state, request, Resolution(action=entry.action), now)


def _failed(
    state: JobRecord, failed: ActionFailed, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """Volcano terminates a job whose sync keeps failing (its requeue budget); the activity
    already spent its retries, so the budget is gone."""
    warn = fx.RecordEvent(
        type="Warning",
        reason="ActionFailed",
        message=f"{failed.effect} failed, retries exhausted: {failed.error}"[:1000],
    )
    # Pods a refused creation was to make may not exist: read them, or the job would wait in
    # Terminating for deletions no one will report.
    unheard = sorted(p.name for p in state.pods.values() if p.uid is None)
    check = [fx.CheckPods(names=unheard)] if failed.effect == "CreatePods" and unheard else []
    if state.phase in FINISHED or state.phase == JobPhase.TERMINATING:
        return state, [warn, *check]
    request = Request(event=Event.OUT_OF_SYNC, reason=f"{failed.effect} failed")
    state, out = actions.act(state, request, Resolution(action=Action.TERMINATE_JOB), now)
    return state, [warn, *out, *check]


def gang(state: JobRecord) -> binding.Gang:
    """The job as placement sees it: which pods still wait for a node."""
    job = state.job
    name = (job.spec.scheduler_name if job else None) or "volcano"
    return binding.Gang(
        namespace=(job.metadata.namespace if job else None) or "",
        scheduler=keys.scheduler_workflow_id(name),
        gone=job is None or state.deleted or job.metadata.deletion_timestamp is not None,
        waiting=frozenset(
            n
            for n, p in state.pods.items()
            if not p.deleting and p.node is None and p.phase == "Pending"
        ),
    )


def _gone(state: JobRecord) -> Decision:
    """The Job was deleted, or its namespace is going (which deletes it): nothing is left to
    do but cancel what is armed."""
    timers = sorted(state.delayed)
    if state.ttl_fires_at is not None and not state.ttl_expired:
        timers.append(clock.TTL_KEY)
    if state.lease_until is not None:
        timers.append(lease.LEASE_KEY)
    state = state.model_copy(update={"deleted": True, "delayed": {}, "ttl_fires_at": None})
    return Decision(state=state, effects=lifetime.ended(timers))


def decide(state: JobRecord, event: Input, now: datetime) -> Decision:
    """The next state and the effects that carry it out, for one input."""
    before = state.phase
    match event:
        case ParsedJob():
            state, out = _observe(state, event, now)
        case common_signals.JobDeleted():
            if state.job is not None and event.uid != state.job.metadata.uid:
                return Decision(state=state)
            return _gone(state)
        case ActionFailed(namespace_gone=True):
            return _gone(state)
        case job_signals.PodsChanged():
            state, out = _pods(state, event, now)
        case job_signals.PodsListed():
            state, out = _listed(state, event, now)
        case PodsAbsent():
            unheard = [p for p in state.pods.values() if p.name in event.names and p.uid is None]
            state, out = _vanished(state, unheard, now)
        case job_signals.PodGroupObserved():
            state, out = _pod_group(state, event, now)
        case common_signals.CommandIssued():
            state, out = _command(state, event, now)
        case TimerFired():
            state, out = _timer(state, event, now)
        case ActionFailed():
            state, out = _failed(state, event, now)
        case scheduler_signals.PodsPlaced():
            out = [*binding.placed(gang(state), event)]
        case BindOutcome():
            out = [*binding.bound(gang(state), event.failed)] if state.job else []
        case results.VolumesEnsured():
            state, out = _volumes_ensured(state, event, now)
        case results.PluginsApplied():
            state, out = markers.plugins_applied(state, event), []
    state, out = _echo(before, state, out, now)
    state, armed = clock.arm_ttl(state, now)
    return Decision(state=state, effects=(*out, *armed))


# Phases whose echo the forwarder does not send (Caldera's own write, no news to the job).
_NOT_ECHOED = frozenset({JobPhase.PENDING, JobPhase.RUNNING})


def _echo(
    before: JobPhase | None, state: JobRecord, out: list[job_fx.AnyEffect], now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """Volcano's controller syncs again on the echo of its own phase change. For Pending and
    Running that echo is not sent, so the sync it causes happens here, kept only when it moves
    the job on: a job that learns at once that its pods ran and finished (after a restart of
    Caldera, say) goes Pending → Running → Completed, not Running for ever."""
    if state.phase == before or state.phase not in _NOT_ECHOED:
        return state, out
    again, more = actions.handle(state, [Request(event=Event.OUT_OF_SYNC)], now)
    return (again, out + more) if again.phase != state.phase else (state, out)
