"""What of a copy reaches the manager's Job: Events once each, a status digest, fencing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controllers.dispatch import mirror
from controllers.dispatch.results import EventMark, RemoteEvent
from controllers.job.lease import LEASE_EXPIRED
from models.dispatch import RemoteState

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=1)


def _event(name: str, when: datetime | None) -> RemoteEvent:
    return RemoteEvent(name=name, reason="R", message=name, last_seen=when)


CASES = [
    pytest.param([], EventMark(), [], EventMark(), id="none"),
    pytest.param(
        [_event("b", T1), _event("a", T0)],
        EventMark(),
        ["a", "b"],
        EventMark(since=T1, seen=["b"]),
        id="first-all-oldest-first",
    ),
    pytest.param(
        [_event("a", T0), _event("b", T0), _event("c", T1)],
        EventMark(since=T0, seen=["a"]),
        ["b", "c"],
        EventMark(since=T1, seen=["c"]),
        id="same-second-told-apart-by-name",
    ),
    pytest.param(
        [_event("a", T0), _event("b", T0)],
        EventMark(since=T0, seen=["a"]),
        ["b"],
        EventMark(since=T0, seen=["a", "b"]),
        id="mark-keeps-its-second",
    ),
    pytest.param(
        [_event("a", T0), _event("x", None)],
        EventMark(since=T0, seen=["a"]),
        [],
        EventMark(since=T0, seen=["a"]),
        id="seen-and-undated-left-out",
    ),
]


@pytest.mark.parametrize(("events", "mark", "names", "after"), CASES)
def test_new_events_once_each(
    events: list[RemoteEvent], mark: EventMark, names: list[str], after: EventMark
) -> None:
    fresh, moved = mirror.new_events(events, mark)
    assert [e.name for e in fresh] == names
    assert moved == after


def test_new_events_capped_at_the_newest() -> None:
    many = [_event(f"e{i:02}", T0 + timedelta(seconds=i)) for i in range(30)]
    fresh, mark = mirror.new_events(many, EventMark())
    assert len(fresh) == mirror.MAX_EVENTS and fresh[-1].name == "e29"
    assert mark.since == T0 + timedelta(seconds=29)


def test_digest_is_stable_and_empty_for_none() -> None:
    assert mirror.digest({}) == ""
    assert mirror.digest({"a": 1, "b": {"c": 2}}) == mirror.digest({"b": {"c": 2}, "a": 1})
    assert mirror.digest({"a": 1}) != mirror.digest({"a": 2})


LEASE = T0 + timedelta(seconds=60)


def _stamp(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("phase", "message", "aborting_at", "fenced"),
    [
        pytest.param("Aborting", f"OutOfSync, {LEASE_EXPIRED} at x", None, True, id="its-story"),
        pytest.param("Aborted", "no pod left running after SyncJob", LEASE, True, id="at-lease"),
        pytest.param(
            "Aborted", "no pod left running", LEASE - timedelta(seconds=5), False, id="before"
        ),
        pytest.param("Aborted", "Command abort", None, False, id="no-condition"),
        pytest.param("Running", LEASE_EXPIRED, LEASE, False, id="running"),
    ],
)
def test_fenced_only_by_its_lease(
    phase: str, message: str, aborting_at: datetime | None, fenced: bool
) -> None:
    status: dict[str, object] = {"state": {"phase": phase, "message": message}}
    if aborting_at is not None:
        status["conditions"] = [
            {"status": "Running", "lastTransitionTime": _stamp(T0)},
            {"status": "Aborting", "lastTransitionTime": _stamp(aborting_at)},
        ]
    remote = RemoteState(cluster="a", generation=1, found=True, phase=phase, status=status)
    assert mirror.fenced(remote, LEASE) == fenced
    assert not mirror.fenced(remote, None) or LEASE_EXPIRED in message
