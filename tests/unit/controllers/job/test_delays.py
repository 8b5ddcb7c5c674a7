"""Delayed actions (§5.2): register, cancel on recovery, clean up by action type."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controllers.job import delays
from controllers.job.policies import Request
from controllers.job.state import DelayedAction
from models.bus import Action, Event

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(key: str, action: Action, event: Event, **kw: str) -> DelayedAction:
    return DelayedAction(key=key, action=action, event=event, pod=key, fires_at=NOW, timer=1, **kw)


def test_register_same_action_keeps_running_timer() -> None:
    existing = {"p": _entry("p", Action.RESTART_JOB, Event.POD_EVICTED)}
    request = Request(event=Event.POD_EVICTED, pod="p")
    assert delays.register(existing, request, Action.RESTART_JOB, timedelta(1), NOW, 2) == (
        None,
        None,
    )


def test_register_other_action_replaces_and_cancels_old_timer() -> None:
    existing = {"p": _entry("p", Action.RESTART_JOB, Event.POD_EVICTED)}
    request = Request(event=Event.POD_FAILED, pod="p", task="w")
    entry, replaced = delays.register(
        existing, request, Action.ABORT_JOB, timedelta(minutes=5), NOW, 2
    )
    assert replaced == "p"
    assert entry is not None
    assert (entry.action, entry.fires_at, entry.timer, entry.task) == (
        Action.ABORT_JOB,
        NOW + timedelta(minutes=5),
        2,
        "w",
    )


@pytest.mark.parametrize(
    ("armed_by", "uid", "event", "cancelled"),
    [
        pytest.param(Event.POD_PENDING, "u1", Event.POD_RUNNING, True, id="left-pending"),
        pytest.param(Event.POD_PENDING, "u1", Event.POD_EVICTED, True, id="pending-pod-deleted"),
        pytest.param(Event.POD_PENDING, "u2", Event.POD_RUNNING, False, id="pending-other-uid"),
        pytest.param(Event.POD_EVICTED, "u9", Event.POD_RUNNING, True, id="evicted-pod-runs"),
        pytest.param(Event.POD_FAILED, "u9", Event.POD_RUNNING, True, id="failed-pod-runs"),
        pytest.param(Event.POD_FAILED, "u9", Event.POD_FAILED, False, id="failed-again"),
        pytest.param(
            Event.POD_EVICTED, "u9", Event.POD_PENDING, False, id="pending-is-not-recovery"
        ),
    ],
)
def test_recovered(armed_by: Event, uid: str, event: Event, cancelled: bool) -> None:
    delayed = {"p": _entry("p", Action.RESTART_JOB, armed_by, pod_uid="u1")}
    request = Request(event=event, pod="p", pod_uid=uid)
    assert delays.recovered(delayed, request) == (["p"] if cancelled else [])


def test_cleanup_by_action_type_and_scope() -> None:
    delayed = {
        "a": _entry("a", Action.RESTART_JOB, Event.POD_EVICTED),
        "b": _entry("b", Action.ABORT_JOB, Event.POD_FAILED),
        "c": _entry("c", Action.RESTART_TASK, Event.POD_FAILED, task="w"),
        "d": _entry("d", Action.RESTART_TASK, Event.POD_FAILED, task="m"),
        "e": _entry("e", Action.RESTART_POD, Event.POD_FAILED),
    }
    assert delays.cleanup(delayed, Action.TERMINATE_JOB, Request()) == ["a", "b"]
    assert delays.cleanup(delayed, Action.RESTART_TASK, Request(task="w")) == ["c"]
    assert delays.cleanup(delayed, Action.RESTART_POD, Request(pod="e")) == ["e"]
    assert delays.cleanup(delayed, Action.SYNC_JOB, Request()) == []
