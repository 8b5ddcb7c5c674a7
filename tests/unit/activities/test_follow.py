"""The long poll's lease rule: a lease that ran out is never pushed on (its cluster may be
aborting the copy that moment, and the answer must still show the lease that ran out), and a
poll holding such a lease waits for news without blocking the worker's event loop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.dispatch import copywatch, follow
from activities.dispatch.copywatch import ClusterWatch
from activities.dispatch.follow import lapsed
from controllers.dispatch import mirror
from controllers.dispatch.results import EventMark
from models.dispatch import (
    GENERATION_ANNOTATION,
    LEASE_ANNOTATION,
    ORIGIN_ANNOTATION,
    RemoteCopy,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def test_a_lease_ahead_is_renewed_and_one_run_out_is_not() -> None:
    assert not lapsed(NOW + 5 * S, None, NOW)
    assert lapsed(NOW - S, None, NOW)
    assert lapsed(NOW, None, NOW)  # its cluster's timer fires at that very time


def test_the_lease_this_poll_wrote_counts_though_the_copy_was_read_before_it() -> None:
    assert not lapsed(NOW - S, NOW + 9 * S, NOW)  # read before our renewal, then not re-read
    assert lapsed(NOW - 9 * S, NOW - S, NOW)  # the poll was away past its own renewal


def test_a_copy_without_a_lease_is_renewed() -> None:
    assert not lapsed(None, None, NOW)


def test_a_renewal_that_waited_past_the_lease_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Due while the lease held, then stopped (SIGSTOP, a full thread pool) until after it ran
    # out: the write would push a lease its cluster has already acted on, and make the abort
    # look like the job's own end to the manager.
    writes: list[str] = []
    monkeypatch.setattr(follow.remote, "call", lambda cluster, what, fn, **kw: writes.append(what))
    now = datetime.now(UTC)
    request = _request(renew=True, lease_seconds=10)
    assert follow._renew(object(), request, "copy-uid", now - S, None) is None  # type: ignore[arg-type]
    assert follow._renew(object(), request, "copy-uid", now - 9 * S, now - S) is None  # type: ignore[arg-type]
    assert writes == []
    renewed = follow._renew(object(), request, "copy-uid", now + 5 * S, None)  # type: ignore[arg-type]
    assert renewed is not None and renewed >= (now + 9 * S).replace(microsecond=0)
    assert len(writes) == 1


# -- the long poll on the shared watch: a lease run out never freezes the worker ---------------

KNOWN_STATUS = {"state": {"phase": "Running"}}
RAN_OUT = "2026-01-01T00:00:00Z"  # the copy's lease, long gone


def _copy() -> dict[str, Any]:
    annotations = {
        ORIGIN_ANNOTATION: "uid-1",
        GENERATION_ANNOTATION: "1",
        LEASE_ANNOTATION: RAN_OUT,
    }
    meta = {"namespace": "ns", "name": "a", "uid": "copy-uid", "annotations": annotations}
    return {"metadata": meta, "status": KNOWN_STATUS}


async def test_a_poll_whose_lease_ran_out_waits_on_the_loop_instead_of_spinning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The copy as the manager holds it, its lease run out (its cluster has not aborted it
    # yet): nothing to renew, nothing to answer until news or the poll's end. Every other
    # coroutine of the worker (other polls' renewals, heartbeats) must go on meanwhile.
    renewals: list[str] = []
    monkeypatch.setattr(follow.remote, "api", lambda cluster: object())
    monkeypatch.setattr(follow.remote, "read", lambda *args: _copy())
    monkeypatch.setattr(follow, "_renew", lambda to, request, uid, *held: renewals.append(uid))
    monkeypatch.setattr(follow, "_events", lambda *args: [])
    subscription = _subscription()  # healthy, and showing the copy as the manager holds it
    request = _request(renew=True, lease_seconds=3)
    ticks = 0

    async def ticking() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(ticking())
    answer = await ActivityEnvironment().run(follow._follow, request, subscription)
    ticker.cancel()
    assert renewals == []  # a lease run out is not pushed on
    assert answer.remote is not None and answer.remote.found
    assert answer.lease_until == datetime(2026, 1, 1, tzinfo=UTC)
    # 2 s of the poll: the loop ran the ticker all along (a blocked loop: a tick or two).
    assert ticks >= 50, f"the event loop was blocked: {ticks} ticks in 2 s"


def _unused_api(cluster: str) -> Any:
    raise AssertionError(f"no call expected to {cluster}")


def _subscription() -> copywatch.Subscription:
    """A healthy watch of w0 showing the copy as the manager holds it."""
    watch = ClusterWatch("w0", api=_unused_api)
    watch._on_list([_copy()])
    follower = copywatch._Follower(asyncio.get_running_loop())
    return copywatch.Subscription(watch, ("ns", "a"), follower)


def _request(**poll: Any) -> follow.FollowInput:
    """A 2 s poll of the copy, its status the one the manager holds."""
    return follow.FollowInput(
        namespace="ns",
        name="a",
        origin="uid-1",
        target=RemoteCopy(cluster="w0", generation=1),
        known=mirror.digest(KNOWN_STATUS),
        events=EventMark(),
        seconds=2,
        **poll,
    )


@pytest.mark.parametrize("drained", [False, True])
async def test_a_poll_of_a_queue_that_moves_on_drain_answers_once_the_cluster_is_drained(
    monkeypatch: pytest.MonkeyPatch, drained: bool
) -> None:
    # Nothing changed on the copy: only the drain (its Secret's annotation) is news, and only
    # for a queue whose copies move on drain; otherwise the poll runs to its end.
    monkeypatch.setattr(follow.remote, "api", lambda cluster: object())
    monkeypatch.setattr(follow.remote, "read", lambda *args: _copy())
    monkeypatch.setattr(follow, "_events", lambda *args: [])
    monkeypatch.setattr(follow.cluster_secrets, "is_drained", lambda cluster: drained)
    subscription = _subscription()
    request = _request(renew=False, lease_seconds=60, move_on_drain=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = await ActivityEnvironment().run(follow._follow, request, subscription)
    assert answer.drained == drained and answer.remote is not None and answer.remote.found
    took = loop.time() - started
    assert took < 1.0 if drained else took >= 2.0
