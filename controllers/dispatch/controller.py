"""The DispatchWorkflow's pure core: `decide(state, input, now) -> Decision`.

Inputs are the forwarder's (the manager's Job observed with its queue's dispatch settings,
deleted, a Command aimed at it), the shell's (a timer fired, an activity gave up) and the
activities' answers (`results`). `placing` chooses a cluster and makes the copy, `following`
mirrors it and moves the job when its cluster is lost; this module routes the inputs, holds
or passes on Commands, and ends the workflow once the Job and every copy of it are gone.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.dispatch import effects as dfx
from controllers.dispatch import following, mirror, placing, reach, steps
from controllers.dispatch.results import (
    CommandSent,
    CopyDeleted,
    CopyMade,
    CopyUpdated,
    Followed,
    Probed,
    Resumed,
)
from controllers.dispatch.state import DispatchState, Stale
from controllers.outcomes import ActionFailed, AnyOutcome, BindOutcome, PodsAbsent, TimerFired
from controllers.parsed import ParsedJob
from models.bus import Action
from models.signals import common as common_signals
from models.signals.dispatch import DispatchObserved
from models.vcjob import Job

Input = (
    ParsedJob[Job]
    | common_signals.JobDeleted
    | common_signals.CommandIssued
    | TimerFired
    | ActionFailed
    | Probed
    | CopyMade
    | CopyUpdated
    | Followed
    | CopyDeleted
    | CommandSent
    | Resumed
)
Out = list[dfx.AnyEffect]
# What a Command does to a job that has no copy to pass it to (none made yet, or moving).
_ENDS_HERE: dict[str, str] = {Action.ABORT_JOB: "Aborted", Action.TERMINATE_JOB: "Terminated"}


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: DispatchState
    effects: tuple[dfx.AnyEffect, ...] = ()


def _observed(
    state: DispatchState, seen: ParsedJob[Job], now: datetime
) -> tuple[DispatchState, Out]:
    job = seen.job
    signal = seen.signal
    if state.job is not None and job.metadata.uid != state.job.metadata.uid:
        # A new Job of that name: the old one went (its deletion may be on its way). Its copies
        # are deleted first, then a fresh run takes the new one.
        successor = signal if isinstance(signal, DispatchObserved) else None
        state, out = _deleted(state.model_copy(update={"successor": successor}))
        return state, out
    settings = signal.settings if isinstance(signal, DispatchObserved) else None
    first = state.job is None
    state = state.model_copy(
        update={
            "job": job.model_copy(update={"status": None}),
            "settings": settings or state.settings,
        }
    )
    if state.deleted:
        return state, []
    if job.metadata.deletion_timestamp is not None:
        return _deleted(state)
    if first and not state.finished:
        return steps.probe(state)
    return steps.pass_spec(state)


def _deleted(state: DispatchState) -> tuple[DispatchState, Out]:
    """The manager's Job went: every copy of it goes (fenced), then the workflow ends."""
    if state.deleted:
        return state, []
    stale = list(state.stale)
    if state.current is not None:
        stale.append(Stale(target=state.current, why="job deleted"))
    state = state.model_copy(
        update={
            "deleted": True,
            "current": None,
            "probing": False,
            "stale": stale,
            "lost_at": None,
            "unreachable_since": None,
            "commands": [],
        }
    )
    out: Out = [dfx.StopFollowing()]
    out += [fx.CancelTimer(key=k) for k in (steps.RECHECK, steps.LOST, steps.REACH, steps.TTL)]
    out += [steps.delete(s) for s in stale]
    return state, out + _end(state)


def _end(state: DispatchState) -> Out:
    """Once the Job is gone and no copy is left: finish, or start over for its successor."""
    if not state.deleted or state.stale:
        return []
    return [fx.StartOver(observed=state.successor) if state.successor else fx.Finish()]


def _command(
    state: DispatchState, command: common_signals.CommandIssued, now: datetime
) -> tuple[DispatchState, Out]:
    """Passed to the copy as a Command on its cluster, the Volcano way; held while there is
    none to pass it to, but for an abort or terminate of a job with no copy at all, which ends
    it here."""
    if state.deleted:
        return state, []
    name = command.command or "(update)"
    current = state.current
    if current is not None and current.uid and state.unreachable_since is None:
        passed = f"Command {name} issued {command.action}: passed to cluster {current.cluster}"
        state, sends = steps.send(state, [*state.commands, command])
        return state, [fx.RecordEvent(reason="CommandIssued", message=passed), *sends]
    ends = _ENDS_HERE.get(command.action)
    if current is None and ends is not None and not state.finished:
        return _end_here(state, ends, command, now)
    if current is None and command.action == Action.RESUME_JOB and state.ended_here == "Aborted":
        state = state.model_copy(update={"ended_here": ""})
        resumed = fx.RecordEvent(reason="CommandIssued", message=f"Command {name} resumed the job")
        state, probe = steps.probe(state)
        return state, [resumed, *probe]
    held = f"Command {name} issued {command.action}: held until the job's copy answers"
    state = state.model_copy(update={"commands": [*state.commands, command]})
    return state, [fx.RecordEvent(reason="CommandIssued", message=held)]


def _end_here(
    state: DispatchState, phase: str, command: common_signals.CommandIssued, now: datetime
) -> tuple[DispatchState, Out]:
    reason = command.action
    message = f"Command {command.command or '(update)'}: no copy runs anywhere"
    status = mirror.ended_status(phase, reason, message, now)
    state = state.model_copy(
        update={
            "ended_here": phase,
            "waiting": "",
            "probing": False,
            "digest": mirror.digest(status),
            "phase": phase,
        }
    )
    return state, [
        fx.CancelTimer(key=steps.RECHECK),
        dfx.WriteStatus(status=status, why=reason),
        fx.PhaseChanged(phase=phase, previous=None, reason=f"{reason}: {message}"),
        fx.RecordEvent(reason="CommandIssued", message=message),
    ]


def _timer(state: DispatchState, fired: TimerFired, now: datetime) -> tuple[DispatchState, Out]:
    if fired.key == steps.RECHECK:
        if state.current is not None or state.deleted or state.finished:
            return state, []
        return steps.probe(state.model_copy(update={"refused": {}}))
    if fired.key == steps.LOST:
        return following.lost(state, now)
    if fired.key == steps.REACH:
        return following.reach_again(state)
    if fired.key == steps.TTL:
        if state.deleted or state.job is None:
            return state, []
        who = state.identity
        return state, [
            fx.RecordEvent(reason="TTLExpired", message="ttlSecondsAfterFinished expired"),
            fx.DeleteJob(namespace=who.namespace, name=who.name, uid=who.uid),
        ]
    entry = next((s for s in state.stale if steps.stale_key(s.target) == fired.key), None)
    return state, [steps.delete(entry)] if entry is not None else []


def _failed(state: DispatchState, failed: ActionFailed) -> tuple[DispatchState, Out]:
    """An activity gave up. A copy its cluster refuses (invalid there, forbidden) rules that
    cluster out until the next re-check; a status write is tried again with the next one."""
    warn = fx.RecordEvent(
        type="Warning",
        reason="DispatchStepFailed",
        message=f"{failed.effect} failed, retries exhausted: {failed.error}"[:1000],
    )
    if failed.effect == "CreateCopy" and state.current is not None and not state.deleted:
        cluster = state.current.cluster
        refused = {**state.refused, cluster: f"refused the copy: {failed.error}"[:300]}
        state = state.model_copy(update={"current": None, "refused": refused})
        state, probe = steps.probe(state)
        return state, [warn, *probe]
    if failed.effect == "WriteStatus":
        return state.model_copy(update={"digest": ""}), [warn]
    return state, [warn]


def _resumed(state: DispatchState) -> tuple[DispatchState, Out]:
    """A continued run: ask again whatever the last run was waiting on."""
    out: Out = [steps.delete(s) for s in state.stale]
    if state.deleted:
        return state, out + _end(state)
    if state.current is not None:
        again = steps.create(state) if not state.current.uid else steps.follow(state)
        return state, out + again
    if state.job is not None and not state.finished:
        state, probe = steps.probe(state.model_copy(update={"probing": False}))
        out += probe
    return state, out


def decide(state: DispatchState, item: Input | AnyOutcome, now: datetime) -> Decision:
    """The next state and the effects that carry it out, for one input."""
    match item:
        case BindOutcome() | PodsAbsent():
            return Decision(state=state)  # a job's, never a dispatch's
        case ParsedJob():
            state, out = _observed(state, item, now)
        case common_signals.JobDeleted():
            if state.job is not None and item.uid != state.job.metadata.uid:
                return Decision(state=state)
            state, out = _deleted(state)
        case common_signals.CommandIssued():
            state, out = _command(state, item, now)
        case TimerFired():
            state, out = _timer(state, item, now)
        case ActionFailed():
            state, out = _failed(state, item)
        case Probed():
            state, out = placing.probed(state, item, now)
        case CopyMade():
            state, out = placing.made(state, item, now)
        case Followed():
            state, out = following.followed(state, item, now)
        case CopyUpdated():
            state, out = following.updated(state, item, now)
        case CopyDeleted():
            state, out = following.deleted(state, item, now)
            out += _end(state)
        case CommandSent():
            state, out = _sent(state, item, now)
        case Resumed():
            state, out = _resumed(state)
    return Decision(state=state, effects=tuple(out))


def _sent(state: DispatchState, sent: CommandSent, now: datetime) -> tuple[DispatchState, Out]:
    """A Command its copy's cluster did not take is held for the next answer."""
    if sent.reachable or state.deleted:
        return state, []
    state = state.model_copy(update={"commands": [sent.command, *state.commands]})
    current = state.current
    if current is not None and (current.cluster, current.generation) == (
        sent.cluster,
        sent.generation,
    ):
        return reach.unreachable(state, sent.error, now)
    return state, []
