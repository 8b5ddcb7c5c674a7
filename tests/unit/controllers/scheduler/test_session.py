"""Assumed placements: kept until bound, expired, or refused by the binder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controllers.scheduler import session
from controllers.scheduler.session import SchedulerState
from models.signals import scheduler as scheduler_signals

NOW = datetime(2026, 1, 1, tzinfo=UTC)
JOB = "vcjob/ns/train"


def _placed(*pods: str) -> list[scheduler_signals.PlacedPod]:
    return [scheduler_signals.PlacedPod(pod=p, node=f"node-{p[-1]}") for p in pods]


def _after(
    state: SchedulerState, *pods: str, bound: tuple[str, ...] = (), now: datetime = NOW
) -> SchedulerState:
    placements = [(JOB, "ns", _placed(*pods))] if pods else []
    return session.after_session(state, placements, list(bound), 0, now)[0]


def test_placements_are_assumed_and_handed_to_their_job() -> None:
    state, handoffs = session.after_session(
        SchedulerState(), [(JOB, "ns", _placed("w-0", "w-1"))], [], 0, NOW
    )
    assert session.live(state, NOW) == {"ns/w-0": "node-0", "ns/w-1": "node-1"}
    (handoff,) = handoffs
    assert (handoff.job, handoff.placed.session, [p.pod for p in handoff.placed.placements]) == (
        JOB,
        0,
        ["w-0", "w-1"],
    )
    assert state.session == 1


def test_bound_pods_confirm_their_assumption() -> None:
    state = _after(_after(SchedulerState(), "w-0", "w-1"), bound=("ns/w-0",))
    assert session.live(state, NOW) == {"ns/w-1": "node-1"}


def test_assumptions_expire() -> None:
    state = _after(SchedulerState(), "w-0")
    later = NOW + session.ASSUME_TTL + timedelta(seconds=1)
    assert session.live(state, later) == {}
    assert _after(state, now=later).assumed == {}


def test_bind_failure_drops_the_assumption() -> None:
    state = _after(SchedulerState(), "w-0", "w-1")
    state = session.dropped(state, scheduler_signals.BindFailed(pods={"ns/w-1": "node not found"}))
    assert session.live(state, NOW) == {"ns/w-0": "node-0"}


def test_idle_scheduler_backs_off_and_work_resets_it() -> None:
    base = timedelta(seconds=1)
    state = SchedulerState()
    periods = []
    for _ in range(5):
        state = _after(state)
        periods.append(session.period(state, base).total_seconds())
    assert periods == [2, 4, 8, 8, 8]
    assert session.period(_after(state, "w-0"), base) == base


def test_device_allocations_stay_in_flight_with_their_assumption() -> None:
    """A worker killed between decision and bind double-books no device: the devices a placed
    pod's claims were given live in the durable assumption, for whichever worker runs the
    next session, until the pod is confirmed (or the assumption expires or is dropped)."""
    gpu = scheduler_signals.ClaimPlan(
        claim="w-0-gpu",
        uid="c1",
        devices=[scheduler_signals.DeviceResult(request="gpu", driver="d", pool="n", device="g0")],
        node="n",
    )
    shared = scheduler_signals.ClaimPlan(claim="shared", uid="c2")  # reserve only
    placed = [scheduler_signals.PlacedPod(pod="w-0", node="n", claims=[gpu, shared])]
    state = session.after_session(SchedulerState(), [(JOB, "ns", placed)], [], 0, NOW)[0]
    assert session.claims_in_flight(state, NOW) == {"ns/w-0": [gpu]}
    assert session.claims_in_flight(state, NOW + session.ASSUME_TTL) == {}
    dropped = session.dropped(state, scheduler_signals.BindFailed(pods={"ns/w-0": "refused"}))
    assert session.claims_in_flight(dropped, NOW) == {}
    assert session.claims_in_flight(_after(state, bound=("ns/w-0",)), NOW) == {}
