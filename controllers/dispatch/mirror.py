"""What of a copy is mirrored onto the manager's Job, and how it reads there. Pure.

The status goes across whole, as the copy's controller wrote it (phase, counts, conditions),
and only when it differs from what was written last (compared by `digest`, which also travels
to the long poll so the worker cluster is not asked to send what the manager has). An Event
goes across once (`new_events`), its reason kept and its message prefixed with the cluster.
A copy its own cluster aborted because its lease ran out (`fenced`) is not mirrored: the job
did not end, its manager lost touch, and it runs again as the next generation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from controllers.dispatch.results import EventMark, RemoteEvent
from controllers.job.lease import LEASE_EXPIRED
from models.dispatch import RemoteState
from models.meta import parse_time

MAX_EVENTS = 20  # mirrored per answer: a copy's flood of Events is not the manager's story


def digest(status: Mapping[str, object]) -> str:
    """A short stable fingerprint of a status ("" for none)."""
    if not status:
        return ""
    text = json.dumps(status, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def phase_of(status: Mapping[str, object]) -> str:
    state = status.get("state")
    phase = state.get("phase") if isinstance(state, dict) else None
    return phase if isinstance(phase, str) else ""


def fenced(remote: RemoteState, lease_until: datetime | None) -> bool:
    """Aborted (or aborting) by its own cluster's Caldera because its lease ran out: its
    story says so (Aborting does, and Aborted keeps the story of the stop that began it), or,
    for a copy whose Aborted told only of the last pod's going (a worker before that), it
    began aborting once its lease had passed (`lease_until`, read with the status): while the
    manager reaches the cluster it keeps the lease ahead, so an abort it passed on begins
    before. A renewal that lands after the abort defeats only the second rule."""
    if remote.phase not in ("Aborting", "Aborted"):
        return False
    state = remote.status.get("state")
    message = state.get("message") if isinstance(state, dict) else None
    if isinstance(message, str) and LEASE_EXPIRED in message:
        return True
    began = _entered(remote.status, "Aborting")
    return lease_until is not None and began is not None and began >= lease_until


def _entered(status: Mapping[str, object], phase: str) -> datetime | None:
    """When the status's condition for `phase` says the job entered it (None: it does not)."""
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("status") == phase:
            return parse_time(condition.get("lastTransitionTime"))
    return None


def _past(event: RemoteEvent, mark: EventMark) -> bool:
    if event.last_seen is None:
        return False  # the activity dates every Event (its creation at worst)
    if mark.since is None or event.last_seen > mark.since:
        return True
    return event.last_seen == mark.since and event.name not in mark.seen


def new_events(
    events: Sequence[RemoteEvent], mark: EventMark
) -> tuple[list[RemoteEvent], EventMark]:
    """The Events past `mark`, oldest first, at most MAX_EVENTS (the newest), and the mark
    after them."""
    fresh = sorted((e for e in events if _past(e, mark)), key=lambda e: (e.last_seen, e.name))
    if not fresh:
        return [], mark
    latest = fresh[-1].last_seen
    seen = [e.name for e in fresh if e.last_seen == latest]
    if latest == mark.since:
        seen = [*mark.seen, *seen]
    return fresh[-MAX_EVENTS:], EventMark(since=latest, seen=seen)


def event_message(cluster: str, event: RemoteEvent) -> str:
    return f"on cluster {cluster}: {event.message}"


def waiting_status(reason: str, message: str, now: datetime) -> dict[str, object]:
    """The manager Job's status while no cluster takes it: Pending, and why."""
    return {
        "state": {
            "phase": "Pending",
            "reason": reason,
            "message": message[:1024],
            "lastTransitionTime": now.isoformat().replace("+00:00", "Z"),
        }
    }


def ended_status(phase: str, reason: str, message: str, now: datetime) -> dict[str, object]:
    """The manager Job's status when it ends with no copy (aborted while waiting)."""
    stamp = now.isoformat().replace("+00:00", "Z")
    return {
        "state": {
            "phase": phase,
            "reason": reason,
            "message": message,
            "lastTransitionTime": stamp,
        },
        "conditions": [{"status": phase, "lastTransitionTime": stamp}],
    }
