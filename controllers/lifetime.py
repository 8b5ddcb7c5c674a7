"""How a job's life ends, the same for every job kind: ttlSecondsAfterFinished counted from
when it finished, the Job deleted once that passes, and the workflow finished once the Job is
gone."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from controllers import effects as fx
from models.meta import Identity


def ttl_deadline(finished_at: datetime, ttl_seconds: int, now: datetime) -> datetime:
    """When the TTL fires; a deadline already past (a late start, a restart) fires now."""
    return max(finished_at + timedelta(seconds=ttl_seconds), now)


def expired(who: Identity) -> list[fx.RecordEvent | fx.DeleteJob]:
    """The TTL passed: say so on the Job, then delete it (its deletion ends the workflow)."""
    return [
        fx.RecordEvent(reason="TTLExpired", message="ttlSecondsAfterFinished expired"),
        fx.DeleteJob(namespace=who.namespace, name=who.name, uid=who.uid),
    ]


def ended(timers: Iterable[str]) -> tuple[fx.CancelTimer | fx.Finish, ...]:
    """The Job is gone: cancel what is armed, then finish."""
    return (*(fx.CancelTimer(key=k) for k in timers), fx.Finish())
