"""Lease election against an in-memory Lease with optimistic concurrency and a fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client

from forwarder import leader


class FakeLeases:
    """One Lease; writes must carry the current resourceVersion, like the apiserver's."""

    def __init__(self) -> None:
        self.lease: client.V1Lease | None = None
        self.version = 0

    def _stored(self, body: client.V1Lease) -> client.V1Lease:
        self.version += 1
        body = body.model_copy(deep=True)
        body.metadata.resource_version = str(self.version)
        self.lease = body
        return body.model_copy(deep=True)

    def read_namespaced_lease(self, name: str, ns: str, **_: Any) -> client.V1Lease:
        if self.lease is None:
            raise client.ApiException(status=404)
        return self.lease.model_copy(deep=True)

    def create_namespaced_lease(self, ns: str, body: client.V1Lease, **_: Any) -> client.V1Lease:
        if self.lease is not None:
            raise client.ApiException(status=409)
        return self._stored(body)

    def replace_namespaced_lease(
        self, name: str, ns: str, body: client.V1Lease, **_: Any
    ) -> client.V1Lease:
        assert self.lease is not None
        if body.metadata.resource_version != self.lease.metadata.resource_version:
            raise client.ApiException(status=409)
        return self._stored(body)

    @property
    def holder(self) -> str | None:
        return self.lease.spec.holder_identity if self.lease else None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def elector(leases: FakeLeases, clock: Clock, identity: str) -> leader.Elector:
    cfg = leader.LeaseConfig(namespace="ns", identity=identity, duration=15)
    return leader.Elector(leases, cfg, clock)  # type: ignore[arg-type]


def test_first_replica_takes_free_lease_second_stands_by() -> None:
    leases, clock = FakeLeases(), Clock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert a.try_acquire()
    assert not b.try_acquire()
    assert (leases.holder, b.holder) == ("a", "a")


def test_standby_takes_over_after_duration_without_renewal() -> None:
    leases, clock = FakeLeases(), Clock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    a.try_acquire()
    assert not b.try_acquire()  # b starts its own count now
    clock.now = 14.9
    assert not b.try_acquire()
    clock.now = 15.0
    assert b.try_acquire()
    assert leases.holder == "b"
    assert leases.lease is not None and leases.lease.spec.lease_transitions == 1


def test_renewals_keep_the_standby_waiting() -> None:
    leases, clock = FakeLeases(), Clock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    a.try_acquire()
    for t in (0.0, 10.0, 20.0, 30.0):
        clock.now = t
        assert a.try_acquire()
        assert not b.try_acquire()


def test_released_lease_is_taken_at_once() -> None:
    leases, clock = FakeLeases(), Clock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    a.try_acquire()
    assert not b.try_acquire()
    a.release()
    assert leases.holder is None
    assert b.try_acquire()


def test_release_by_non_holder_changes_nothing() -> None:
    leases, clock = FakeLeases(), Clock()
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    a.try_acquire()
    b.release()
    assert leases.holder == "a"


def test_hold_returns_when_another_replica_took_the_lease() -> None:
    leases, clock = FakeLeases(), Clock()
    cfg = leader.LeaseConfig(identity="a", duration=2, renew_interval=0.01, retry_interval=0.01)
    a = leader.Elector(leases, cfg, clock)  # type: ignore[arg-type]
    assert a.try_acquire()
    assert leases.lease is not None
    leases.lease.spec.holder_identity = "b"  # b won behind a's back
    asyncio.run(asyncio.wait_for(a.hold(), 2))
    assert a.holder == "b"
