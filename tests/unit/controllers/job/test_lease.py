"""The fencing of a dispatched copy on its worker cluster: a lease timer armed, re-armed on
renewal, aborting the job when it runs out; nothing for a Job without one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers import effects as fx
from controllers.job import controller, lease
from controllers.job import effects as job_fx
from controllers.job.state import JobRecord
from controllers.outcomes import TimerFired
from models.dispatch import LEASE_ANNOTATION
from models.signals import common as common_signals
from models.vcjob import JobPhase
from tests.builders import make_job, observed_job

NOW = datetime(2026, 1, 1, tzinfo=UTC)
UNTIL = NOW + timedelta(seconds=60)


def _manifest(until: str | None) -> dict[str, Any]:
    doc = make_job("j", namespace="ns").task("w", replicas=1).manifest()
    doc["metadata"]["uid"] = "u1"
    if until is not None:
        doc["metadata"]["annotations"] = {LEASE_ANNOTATION: until}
    return doc


def _run(
    state: JobRecord, *inputs: controller.Input, now: datetime = NOW
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    out: list[job_fx.AnyEffect] = []
    for item in inputs:
        decision = controller.decide(state, item, now)
        state, out = decision.state, out + list(decision.effects)
    return state, out


def _timers(out: list[job_fx.AnyEffect]) -> list[job_fx.AnyEffect]:
    return [
        e for e in out if isinstance(e, fx.StartTimer | fx.CancelTimer) and e.key == lease.LEASE_KEY
    ]


def test_job_without_a_lease_arms_nothing() -> None:
    state, out = _run(JobRecord(), observed_job(_manifest(None)))
    assert _timers(out) == [] and state.lease_until is None
    assert lease.restored(state) == []


def test_lease_arms_a_timer_and_a_renewal_rearms_it() -> None:
    state, out = _run(JobRecord(), observed_job(_manifest("2026-01-01T00:01:00Z")))
    assert state.lease_until == UNTIL
    (timer,) = _timers(out)
    assert isinstance(timer, fx.StartTimer) and timer.fires_at == UNTIL
    state, out = _run(state, observed_job(_manifest("2026-01-01T00:01:00Z")))
    assert _timers(out) == []  # the same lease: nothing to re-arm
    state, out = _run(state, observed_job(_manifest("2026-01-01T00:01:20Z")))
    (timer,) = _timers(out)
    assert isinstance(timer, fx.StartTimer) and timer.fires_at == UNTIL + timedelta(seconds=20)
    state, out = _run(state, observed_job(_manifest(None)))
    assert _timers(out) == [fx.CancelTimer(key=lease.LEASE_KEY)]


def test_lease_run_out_aborts_the_job() -> None:
    state, _ = _run(JobRecord(), observed_job(_manifest("2026-01-01T00:01:00Z")))
    state, out = _run(state, TimerFired(key=lease.LEASE_KEY), now=UNTIL)
    assert state.phase == JobPhase.ABORTING
    warn = out[0]
    assert isinstance(warn, fx.RecordEvent) and warn.reason == "DispatchLeaseExpired"
    assert state.status.state is not None
    assert lease.LEASE_EXPIRED in (state.status.state.message or "")


@pytest.mark.parametrize(
    ("when", "renewed"),
    [
        pytest.param(UNTIL - timedelta(seconds=1), False, id="early"),
        pytest.param(UNTIL, True, id="renewed"),
    ],
)
def test_stale_firing_does_nothing(when: datetime, renewed: bool) -> None:
    state, _ = _run(JobRecord(), observed_job(_manifest("2026-01-01T00:01:00Z")))
    if renewed:
        state, _ = _run(state, observed_job(_manifest("2026-01-01T00:02:00Z")))
    state, out = _run(state, TimerFired(key=lease.LEASE_KEY), now=when)
    assert out == [] and state.phase == JobPhase.PENDING


def test_deleted_job_cancels_its_lease_timer() -> None:
    state, _ = _run(JobRecord(), observed_job(_manifest("2026-01-01T00:01:00Z")))
    state, out = _run(state, common_signals.JobDeleted(uid="u1"))
    assert fx.CancelTimer(key=lease.LEASE_KEY) in out
    assert lease.restored(state) == []


def test_unparsable_lease_fences_nothing() -> None:
    state, out = _run(JobRecord(), observed_job(_manifest("soon")))
    assert _timers(out) == [] and state.lease_until is None


def test_aborted_copy_still_says_its_lease_expired_after_a_late_renewal() -> None:
    """A renewal its manager sent before it stopped may land after the abort: the copy goes on
    to Aborted, and its story still names the lease, which is how the
    manager tells this fenced copy from a job that ended (`controllers.dispatch.mirror`)."""
    state, _ = _run(JobRecord(), observed_job(_manifest("2026-01-01T00:01:00Z")))
    state, _ = _run(state, TimerFired(key=lease.LEASE_KEY), now=UNTIL)
    later = UNTIL + timedelta(seconds=5)
    state, _ = _run(state, observed_job(_manifest("2026-01-01T00:01:30Z")), now=later)
    assert state.phase == JobPhase.ABORTED
    assert state.status.state is not None
    assert lease.LEASE_EXPIRED in (state.status.state.message or "")
