"""Placing a job: the probe's answer chooses a cluster (`choose`), the copy is made there, or
the job waits, saying why on the manager's Job and probing again on a durable timer. Pure.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from controllers import effects as fx
from controllers.dispatch import choose, mirror, reach, steps
from controllers.dispatch import effects as dfx
from controllers.dispatch.results import CopyMade, EventMark, Probed
from controllers.dispatch.state import DispatchState, Stale
from models.dispatch import RemoteCopy

Out = list[dfx.AnyEffect]


def probed(state: DispatchState, answer: Probed, now: datetime) -> tuple[DispatchState, Out]:
    state = state.model_copy(update={"probing": False})
    if state.deleted or state.current is not None or state.finished:
        return state, []
    if state.job is None or state.settings is None:
        return state, []
    excluded = {
        **state.refused,
        **{s.target.cluster: "holds a stale copy of this job, deleted first" for s in state.stale},
    }
    need = choose.gang(state.job)
    at = choose.draw(state.identity.uid, state.generation + 1) if answer.spread else None
    choice = choose.choose(state.settings, answer.statuses, need, excluded, at)
    if choice.cluster:
        return _place(state, choice.cluster)
    return _wait(state, choice, now)


def _place(state: DispatchState, cluster: str) -> tuple[DispatchState, Out]:
    generation = state.generation + 1
    out: Out = [fx.CancelTimer(key=steps.RECHECK)] if state.waiting else []
    state = state.model_copy(
        update={
            "generation": generation,
            "current": RemoteCopy(cluster=cluster, generation=generation),
            "waiting": "",
            "misses": 0,
            "unreachable_since": None,
            "resource_version": "",
            "events": EventMark(),
        }
    )
    state = steps.placed(state)
    return state, [*out, *steps.create(state)]


def _wait(state: DispatchState, choice: choose.Choice, now: datetime) -> tuple[DispatchState, Out]:
    """No cluster takes the job now: Pending on the manager, with the reason, once per reason;
    then probe again."""
    out: Out = []
    if choice.message != state.waiting:
        if state.generation == 0 and not state.waiting:
            out.append(dfx.MarkDispatched(cluster=""))
        status = mirror.waiting_status(choice.reason, choice.message, now)
        out += [
            dfx.WriteStatus(status=status, why=choice.reason),
            fx.RecordEvent(type="Warning", reason=choice.reason, message=choice.message[:1000]),
        ]
        if state.phase != "Pending":
            out.append(
                fx.PhaseChanged(phase="Pending", previous=state.phase or None, reason=choice.reason)
            )
        state = state.model_copy(
            update={"phase": "Pending", "digest": mirror.digest(status), "waiting": choice.message}
        )
    fires_at = now + timedelta(seconds=steps.RECHECK_SECONDS)
    out.append(
        fx.StartTimer(key=steps.RECHECK, fires_at=fires_at, summary="probe the clusters again")
    )
    return state, out


def made(state: DispatchState, answer: CopyMade, now: datetime) -> tuple[DispatchState, Out]:
    """The create's answer: the copy runs there now, or an older copy of ours is in the way
    (deleted first, then made), or another Job of that name is (that cluster is refused)."""
    current = state.current
    mine = current is not None and (current.cluster, current.generation) == (
        answer.cluster,
        answer.generation,
    )
    if state.deleted or current is None or not mine:
        return _late(state, answer)
    if not answer.reachable:
        return reach.unreachable(state, answer.error, now)
    origin = state.identity.uid
    if answer.uid:
        return made_there(state, current.model_copy(update={"uid": answer.uid}), answer.created)
    if answer.found_origin == origin and answer.found_generation > current.generation:
        # A newer copy of ours than this run knows (a run that started over): it is the job.
        found = RemoteCopy(
            cluster=answer.cluster, generation=answer.found_generation, uid=answer.found_uid
        )
        state = state.model_copy(update={"generation": found.generation})
        return made_there(state, found, created=False)
    if answer.found_origin == origin and answer.found_deleting:
        # An older copy of ours still going (a foreground delete waits for its pods): the
        # create is tried again after a backoff, never in a loop of deletes and creates.
        misses = state.misses + 1
        timer = fx.StartTimer(
            key=steps.REACH,
            fires_at=now + steps.backoff(misses),
            summary=f"create the copy on {answer.cluster} once the older one is gone",
        )
        return state.model_copy(update={"misses": misses}), [timer]
    if answer.found_origin == origin:
        old = RemoteCopy(
            cluster=answer.cluster, generation=answer.found_generation, uid=answer.found_uid
        )
        stale = Stale(target=old, why="an older generation in the way")
        return state.model_copy(update={"stale": [*state.stale, stale]}), [steps.delete(stale)]
    why = (
        f"a Job {state.key} not dispatched from this one is there "
        f"(origin {answer.found_origin or 'none'})"
    )
    refused = {**state.refused, answer.cluster: why}
    state = state.model_copy(update={"current": None, "refused": refused})
    note = fx.RecordEvent(
        type="Warning", reason="ClusterRefused", message=f"{answer.cluster}: {why}"
    )
    state, probe = steps.probe(state)
    return state, [note, *probe]


def made_there(state: DispatchState, copy: RemoteCopy, created: bool) -> tuple[DispatchState, Out]:
    """The copy exists: say where on the manager's Job, hand it the Commands held, follow it."""
    held = state.commands
    state, out = reach.reached(state.model_copy(update={"current": copy, "commands": []}))
    verb = "dispatched to" if created else "found already on"
    out += [
        dfx.MarkDispatched(cluster=copy.cluster),
        fx.RecordEvent(
            reason="Dispatched",
            message=f"{verb} cluster {steps.described(copy)}, copy uid {copy.uid}",
        ),
    ]
    state, sends = steps.send(state, held)
    state, spec = steps.pass_spec(state)
    return state, [*out, *sends, *spec, *steps.follow(state)]


def _late(state: DispatchState, answer: CopyMade) -> tuple[DispatchState, Out]:
    """A create answered after the job gave that copy up (moved, or deleted): a copy it made
    is stale at once."""
    if not answer.uid:
        return state, []
    copy = RemoteCopy(cluster=answer.cluster, generation=answer.generation, uid=answer.uid)
    if any(s.target == copy for s in state.stale):
        return state, []
    stale = Stale(target=copy, why="made after it was given up")
    return state.model_copy(update={"stale": [*state.stale, stale]}), [steps.delete(stale)]
