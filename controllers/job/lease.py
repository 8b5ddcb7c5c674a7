"""Fencing a dispatched copy on its worker cluster: a Job carrying
`caldera.dev/dispatch-lease-until` (set and renewed by the manager that dispatched it) is
aborted, as Volcano's AbortJob, once that time passes unrenewed. Its manager could not reach
it for a lease's time, so it may be moving the job elsewhere: the copy stops before the
manager's failover timer (longer than a lease) starts another, and two never run at once.

A renewal is an annotation change, which the forwarder sends (`translate.job_fingerprint`);
it re-arms the one durable timer. A Job without the annotation arms nothing and costs nothing.
The abort's story says `LEASE_EXPIRED`, by which the manager tells a fenced copy from one a
user aborted. Pure.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from controllers import effects as fx
from controllers.job import actions
from controllers.job import effects as job_fx
from controllers.job.policies import Request, Resolution
from controllers.job.state import JobRecord
from models.bus import Action
from models.dispatch import LEASE_ANNOTATION
from models.meta import parse_time
from models.vcjob import Job, JobPhase

LEASE_KEY: Final = "dispatch-lease"
LEASE_EXPIRED: Final = "dispatch lease expired"
# Phases an abort would not change: the job ended, or is already stopping.
_AT_REST: Final = frozenset(
    {
        JobPhase.ABORTING,
        JobPhase.ABORTED,
        JobPhase.COMPLETED,
        JobPhase.FAILED,
        JobPhase.TERMINATING,
        JobPhase.TERMINATED,
    }
)


def lease_of(job: Job) -> datetime | None:
    """The lease's end; None: no lease (or one that does not parse, which fences nothing)."""
    return parse_time((job.metadata.annotations or {}).get(LEASE_ANNOTATION))


def _timer(until: datetime, when: str) -> fx.StartTimer:
    return fx.StartTimer(
        key=LEASE_KEY,
        fires_at=until,
        summary=f"AbortJob {when}: dispatch lease until {until.isoformat()} unless renewed",
    )


def arm(state: JobRecord, now: datetime) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """A lease seen for the first time, renewed or removed: (re-)arm or cancel its timer."""
    if state.job is None or state.deleted:
        return state, []
    until = lease_of(state.job)
    if until == state.lease_until:
        return state, []
    state = state.model_copy(update={"lease_until": until})
    if until is None:
        return state, [fx.CancelTimer(key=LEASE_KEY)]
    return state, [_timer(until, "when the lease runs out")]


def restored(state: JobRecord) -> list[fx.StartTimer]:
    """The lease timer a run that continued as new re-arms."""
    if state.lease_until is None or state.deleted or state.phase in _AT_REST:
        return []
    return [_timer(state.lease_until, "(continued)")]


def fired(state: JobRecord, now: datetime) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """The lease ran out unrenewed: abort the job (a renewal since re-armed it: nothing)."""
    until = state.lease_until
    if until is None or now < until or state.deleted or state.phase in _AT_REST:
        return state, []
    note = fx.RecordEvent(
        type="Warning",
        reason="DispatchLeaseExpired",
        message=f"{LEASE_ANNOTATION} {until.isoformat()} passed unrenewed: its manager cannot "
        "reach this cluster, so the job is aborted before it runs elsewhere",
    )
    request = Request(reason=f"{LEASE_EXPIRED} at {until.isoformat()}")
    state, out = actions.act(state, request, Resolution(action=Action.ABORT_JOB), now)
    return state, [note, *out]
