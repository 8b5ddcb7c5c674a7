"""Following the copy and moving the job: each long poll's answer is mirrored onto the
manager's Job; a cluster silent for the queue's lost-after moves the job to another as the
next generation; stale copies are deleted (fenced) once their cluster answers. Pure.

What never happens: a job whose mirrored phase is finished moving (it ran to its end; a
cluster that goes silent then only delays the cleanup), a copy of the current generation
being deleted (the delete names the generation, and the activity checks it), and a cluster
getting a new copy while it may still hold a stale one (the stale one goes first). A stale
copy found Completed when its cluster is back, while a newer generation runs, is recorded
(`StaleCopyCompleted`) and deleted all the same: the newer copy decides how the job ends, so
the job reaches its end once.
"""

from __future__ import annotations

from datetime import datetime

from controllers import effects as fx
from controllers import lifetime
from controllers.dispatch import effects as dfx
from controllers.dispatch import mirror, reach, steps
from controllers.dispatch.results import CopyDeleted, CopyUpdated, Followed
from controllers.dispatch.state import DispatchState, Stale
from models.dispatch import RemoteState

Out = list[dfx.AnyEffect]
_TTL_PHASES = frozenset({"Completed", "Failed", "Terminated"})  # Volcano's: not Aborted


def followed(state: DispatchState, answer: Followed, now: datetime) -> tuple[DispatchState, Out]:
    current = state.current
    if state.deleted or current is None:
        return state, []
    if (current.cluster, current.generation) != (answer.cluster, answer.generation):
        return state, []  # a poll of a copy given up since
    if not answer.reachable or answer.remote is None:
        return reach.unreachable(state, answer.error, now)
    state, out = reach.reached(state)
    remote = answer.remote
    if not remote.found:
        state, more = _gone(state)
        return state, out + more
    if mirror.fenced(remote, answer.lease_until):
        state, more = move(state, "fenced", "CopyFenced", "aborted itself: its lease ran out")
        return state, out + more
    if answer.drained and state.settings and state.settings.move_on_drain and not state.finished:
        why = f"cluster {answer.cluster} drained"
        state, more = move(state, why, "ClusterDrained", "is on a drained cluster (on-drain: Move)")
        return state, out + more
    state, more = _mirror(state, remote, answer, now)
    out += more
    state, sends = steps.send(state, state.commands)
    state, spec = steps.pass_spec(state)
    return state, [*out, *sends, *spec, *steps.follow(state)]


def updated(state: DispatchState, answer: CopyUpdated, now: datetime) -> tuple[DispatchState, Out]:
    """The spec change's answer: said on the Job once passed or refused; a silent cluster
    gets it again when it answers (the copy gone or replaced: the next poll tells)."""
    current = state.current
    if state.deleted or current is None:
        return state, []
    if (current.cluster, current.generation) != (answer.cluster, answer.generation):
        return state, []
    if not answer.reachable:
        return reach.unreachable(state.model_copy(update={"spec_given": ""}), answer.error, now)
    where = steps.described(current)
    if answer.outcome == "updated":
        return state, [
            fx.RecordEvent(reason="SpecPassed", message=f"spec change passed to {where}")
        ]
    if answer.outcome == "refused":
        message = f"{where} refused the spec change: {answer.refused}"[:1000]
        return state, [fx.RecordEvent(type="Warning", reason="SpecRefused", message=message)]
    return state, []


def _gone(state: DispatchState) -> tuple[DispatchState, Out]:
    """The copy is not there: never made (make it), gone after it ended (its TTL: nothing to
    follow), or gone while it ran (someone deleted it: the job runs again elsewhere)."""
    current = state.current
    assert current is not None
    if not current.uid:
        return state, steps.create(state)
    if state.finished:
        note = fx.RecordEvent(
            reason="CopyGone", message=f"the copy on {steps.described(current)} is gone"
        )
        return state, [note]
    return move(state, "", "CopyVanished", f"is gone while {state.phase or 'Pending'}")


def _mirror(
    state: DispatchState, remote: RemoteState, answer: Followed, now: datetime
) -> tuple[DispatchState, Out]:
    """The copy's status and Events onto the manager's Job; a status equal to the last one
    written is not written again."""
    out: Out = []
    update: dict[str, object] = {"resource_version": remote.resource_version}
    digest = mirror.digest(remote.status)
    cluster = answer.cluster
    if remote.status and digest != state.digest:
        out.append(dfx.WriteStatus(status=dict(remote.status), why=f"mirror {cluster}"))
        update["digest"] = digest
    if remote.phase and remote.phase != state.phase:
        out.append(
            fx.PhaseChanged(
                phase=remote.phase, previous=state.phase or None, reason=f"on cluster {cluster}"
            )
        )
        update["phase"] = remote.phase
    events, mark = mirror.new_events(answer.events, state.events)
    if events:
        out.append(dfx.MirrorEvents(cluster=cluster, events=events))
    update["events"] = mark
    state = state.model_copy(update=update)
    state, armed = _arm_ttl(state, remote, now)
    return state, out + armed


def _arm_ttl(state: DispatchState, remote: RemoteState, now: datetime) -> tuple[DispatchState, Out]:
    """ttlSecondsAfterFinished deletes the manager's Job too (the copy's own deletes it)."""
    ttl = state.job.spec.ttl_seconds_after_finished if state.job else None
    if ttl is None or state.ttl_at is not None or remote.phase not in _TTL_PHASES:
        return state, []
    fires_at = lifetime.ttl_deadline(now, ttl, now)
    state = state.model_copy(update={"ttl_at": fires_at})
    return state, [steps.ttl_timer(fires_at, f"in {ttl}s")]


def move(state: DispatchState, why: str, reason: str, what: str) -> tuple[DispatchState, Out]:
    """The current copy is given up (`why` "": it is gone, nothing to delete): the job runs
    again as the next generation, on a cluster the probe chooses (never one holding a stale
    copy, so never the lost one while it may still run there)."""
    current = state.current
    assert current is not None
    stale = [*state.stale, Stale(target=current, why=why)] if why else state.stale
    note = fx.RecordEvent(
        type="Warning",
        reason=reason,
        message=f"the copy on {steps.described(current)} {what}: the job runs again as "
        f"generation {state.generation + 1}",
    )
    state = state.model_copy(
        update={
            "current": None,
            "stale": stale,
            "unreachable_since": None,
            "lost_at": None,
            "misses": 0,
        }
    )
    out: Out = [dfx.StopFollowing(), fx.CancelTimer(key=steps.LOST)]
    out += [fx.CancelTimer(key=steps.REACH), note]
    state, probe = steps.probe(state)
    out += probe
    if why:
        out.append(steps.delete(stale[-1]))
    return state, out


def lost(state: DispatchState, now: datetime) -> tuple[DispatchState, Out]:
    """The lost timer fired: if the cluster is still silent, the job moves."""
    current = state.current
    silent = state.unreachable_since is not None and state.lost_at is not None
    if current is None or state.deleted or state.finished or not silent:
        return state.model_copy(update={"lost_at": None}), []
    assert state.lost_at is not None and state.unreachable_since is not None
    if now < state.lost_at:
        return state, []  # replaced meanwhile
    what = f"has not answered since {state.unreachable_since} ({state.lost_after}s)"
    return move(state, f"cluster {current.cluster} lost", "ClusterLost", what)


def reach_again(state: DispatchState) -> tuple[DispatchState, Out]:
    """The backoff after a miss is over: ask the current copy's cluster again."""
    if state.deleted or state.current is None:
        return state, []
    return state, steps.create(state) if not state.current.uid else steps.follow(state)


def deleted(state: DispatchState, answer: CopyDeleted, now: datetime) -> tuple[DispatchState, Out]:
    """A stale copy's delete answered: gone (or kept: not that copy), or its cluster is still
    silent (try again after a backoff)."""
    entry = next(
        (
            s
            for s in state.stale
            if (s.target.cluster, s.target.generation) == (answer.cluster, answer.generation)
        ),
        None,
    )
    if entry is None:
        return state, []
    if not answer.reachable:
        silent_since = entry.silent_since or now
        if answer.deadline and _past_deadline(state, silent_since, now):
            return _left_behind(state, entry, answer, silent_since)
        again = entry.model_copy(update={"misses": entry.misses + 1, "silent_since": silent_since})
        stale = [again if s is entry else s for s in state.stale]
        timer = fx.StartTimer(
            key=steps.stale_key(entry.target),
            fires_at=now + steps.backoff(again.misses),
            summary=f"delete the stale copy on {steps.described(entry.target)} again",
        )
        return state.model_copy(update={"stale": stale}), [timer]
    state = state.model_copy(update={"stale": [s for s in state.stale if s is not entry]})
    out = [] if state.deleted else _story(state, entry, answer)
    return _next_after_stale(state, answer.cluster, out)


def _next_after_stale(state: DispatchState, cluster: str, out: Out) -> tuple[DispatchState, Out]:
    """A stale copy is off the books: a copy whose create waited for it is made, or a job
    waiting for a cluster probes again."""
    current = state.current
    if current is not None and not current.uid and current.cluster == cluster:
        out += steps.create(state)  # its create waited for this one to go
    elif state.waiting and not state.deleted:
        state, probe = steps.probe(state)
        out += probe
    return state, out


def _past_deadline(state: DispatchState, silent_since: datetime, now: datetime) -> bool:
    deadline = state.settings.stale_deadline_seconds if state.settings else 0
    return deadline > 0 and (now - silent_since).total_seconds() >= deadline


def _left_behind(
    state: DispatchState, entry: Stale, answer: CopyDeleted, silent_since: datetime
) -> tuple[DispatchState, Out]:
    """The stale copy's cluster stayed silent past the queue's deadline: the copy is given up,
    so a cluster that never comes back holds no workflow open. What is left there is recorded
    on the manager's Job (an Event and `caldera.dev/left-behind`); a copy left behind by its
    manager has stopped on its own once its lease ran out, where Caldera runs the worker. A
    Job that is gone gets no Event, as no stale copy's story is told on it."""
    copy = entry.target
    name = f"{copy.cluster}/{copy.generation}"
    left = [*state.left_behind, name]
    state = state.model_copy(
        update={"stale": [s for s in state.stale if s is not entry], "left_behind": left}
    )
    seconds = state.settings.stale_deadline_seconds if state.settings else 0
    error = f": {answer.error}" if answer.error else ""
    note = fx.RecordEvent(
        type="Warning",
        reason="StaleCopyLeftBehind",
        message=f"the stale copy on {steps.described(copy)} ({entry.why}) could not be deleted: "
        f"its cluster has not answered since {silent_since.isoformat()}, past the queue's "
        f"stale-copy deadline ({seconds}s){error}; delete Job {state.key} there by hand if "
        "that cluster returns",
    )
    out: Out = [] if state.deleted else [note, dfx.MarkLeftBehind(copies=left)]
    return _next_after_stale(state, answer.cluster, out)


def _story(state: DispatchState, entry: Stale, answer: CopyDeleted) -> Out:
    where = steps.described(entry.target)
    if answer.outcome == "kept":
        message = (
            f"the Job on {answer.cluster} is generation {answer.found_generation or 'none'}, "
            f"not the stale {entry.target.generation}: kept"
        )
        return [fx.RecordEvent(reason="StaleCopyKept", message=message)]
    out: Out = []
    current = state.current
    if answer.phase == "Completed" and current is not None:
        out.append(
            fx.RecordEvent(
                reason="StaleCopyCompleted",
                message=f"the stale copy on {where} had completed when its cluster came back; "
                f"generation {current.generation} on {current.cluster} runs on and decides "
                "how the job ends",
            )
        )
    verb = "deleted" if answer.outcome == "deleted" else "already gone:"
    message = f"stale copy on {where} {verb} ({entry.why})"
    return [*out, fx.RecordEvent(reason="StaleCopyDeleted", message=message)]
