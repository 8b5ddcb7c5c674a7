"""The DispatchWorkflow's steps as the core hands them to its shell: the effects that probe,
create, follow and delete copies, with the summaries the history shows, and its durable
timers (their keys, their backoff, the ones a continued run re-arms). Pure.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from controllers import effects as fx
from controllers.dispatch import effects as dfx
from controllers.dispatch import mirror
from controllers.dispatch.state import DispatchState, Stale
from models.dispatch import LEASE_SECONDS, DispatchSettings, RemoteCopy
from models.signals.common import CommandIssued

RECHECK: Final = "recheck"  # no cluster took the job: probe again
LOST: Final = "lost"  # the current copy's cluster has not answered since: move the job
REACH: Final = "reach"  # try the current copy's cluster again
TTL: Final = "ttl"  # ttlSecondsAfterFinished of the manager's Job
RECHECK_SECONDS: Final = 30
BACKOFF: Final = (2, 5, 10, 20, 30)  # seconds between tries of a cluster that does not answer


def lease_seconds(settings: DispatchSettings | None) -> int:
    """LEASE_SECONDS, or half of the queue's lost-after when that is shorter: a lease always
    runs out before the failover it guards against starts."""
    lost_after = settings.lost_after_seconds if settings else 0
    return min(LEASE_SECONDS, max(2, lost_after // 2)) if lost_after else LEASE_SECONDS


def backoff(misses: int) -> timedelta:
    return timedelta(seconds=BACKOFF[min(max(misses, 1), len(BACKOFF)) - 1])


def stale_key(copy: RemoteCopy) -> str:
    return f"stale/{copy.cluster}/{copy.generation}"


def described(copy: RemoteCopy) -> str:
    return f"{copy.cluster} (generation {copy.generation})"


def probe(state: DispatchState) -> tuple[DispatchState, list[dfx.AnyEffect]]:
    """Probe the clusters a copy may go to, for the job's queue there: the queue's clusters,
    but for those refused or holding a stale copy (left out by `choose` anyway; a lost one
    would only cost a timeout)."""
    if state.settings is None or state.probing:
        return state, []
    names = [
        c
        for c in sorted(state.settings.clusters)
        if c not in state.refused and not state.stale_on(c)
    ]
    probe = dfx.ProbeClusters(clusters=names, queue=state.settings.queue)
    return state.model_copy(update={"probing": True}), [probe]


def create(state: DispatchState) -> list[dfx.AnyEffect]:
    if state.current is None or state.job is None:
        return []
    lease = lease_seconds(state.settings)
    return [dfx.CreateCopy(target=state.current, job=state.job, lease_seconds=lease)]


def spec_digest(state: DispatchState) -> str:
    return mirror.digest(state.job.spec.dump()) if state.job is not None else ""


def placed(state: DispatchState) -> DispatchState:
    """The copy about to be made gets the manager Job's spec as it is now."""
    return state.model_copy(update={"spec_given": spec_digest(state)})


def pass_spec(state: DispatchState) -> tuple[DispatchState, list[dfx.AnyEffect]]:
    """The manager Job's spec, changed since the current copy got it, onto the copy: once the
    copy exists, while its cluster answers, until the job ends (Volcano's update rules, which
    admission on both clusters enforces, say which fields may change)."""
    current = state.current
    if (
        current is None
        or not current.uid
        or state.job is None
        or state.deleted
        or state.finished
        or state.unreachable_since is not None
    ):
        return state, []
    digest = spec_digest(state)
    if digest == state.spec_given:
        return state, []
    state = state.model_copy(update={"spec_given": digest})
    return state, [dfx.UpdateCopy(target=current, job=state.job)]


def follow(state: DispatchState) -> list[dfx.AnyEffect]:
    """The next long poll of the current copy (renewing its lease unless the job ended)."""
    if state.current is None:
        return []
    return [
        dfx.FollowCopy(
            target=state.current,
            known=state.digest,
            events=state.events,
            renew=not state.finished,
            lease_seconds=lease_seconds(state.settings),
            move_on_drain=bool(state.settings and state.settings.move_on_drain)
            and not state.finished,
        )
    ]


def send(
    state: DispatchState, commands: list[CommandIssued]
) -> tuple[DispatchState, list[dfx.AnyEffect]]:
    """Commands for the current copy, each with the next serial; none is held any more."""
    current = state.current
    if current is None:
        return state, []
    out: list[dfx.AnyEffect] = []
    serial = state.commands_sent
    for command in commands:
        serial += 1
        out.append(dfx.SendCommand(target=current, command=command, serial=serial))
    return state.model_copy(update={"commands_sent": serial, "commands": []}), out


def delete(stale: Stale) -> dfx.DeleteCopy:
    return dfx.DeleteCopy(target=stale.target, why=stale.why)


def lost_timer(state: DispatchState, fires_at: datetime, when: str) -> fx.StartTimer:
    cluster = state.current.cluster if state.current else "?"
    return fx.StartTimer(
        key=LOST,
        fires_at=fires_at,
        summary=f"move the job off {cluster} {when} if it still does not answer",
    )


def ttl_timer(fires_at: datetime, when: str) -> fx.StartTimer:
    return fx.StartTimer(
        key=TTL, fires_at=fires_at, summary=f"delete job {when}: ttlSecondsAfterFinished"
    )


def restored(state: DispatchState) -> list[fx.StartTimer]:
    """The timers a continued run re-arms for the time they have left; the rest of what was
    waiting (a probe, a reach, a stale copy's delete) is tried again at once (`Resumed`)."""
    out = []
    if state.lost_at is not None and state.current is not None and not state.deleted:
        out.append(lost_timer(state, state.lost_at, "(continued)"))
    if state.ttl_at is not None and not state.deleted:
        out.append(ttl_timer(state.ttl_at, "(continued)"))
    return out
