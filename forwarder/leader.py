"""Lease-based leader election (coordination.k8s.io/v1), so exactly one replica forwards.

Two forwarders signalling the same workflows would double every event and, worse, both
consume Commands. client-go's leaderelection is reproduced in its essentials:
- a holder renews the Lease every `renew_interval` and gives up if it cannot renew within
  `duration - renew_interval` (client-go's renew deadline);
- a standby takes the Lease when it is free, or when its record has not changed for
  `duration` seconds *as measured on the standby's own clock* (no trust in other clocks);
- every write carries the resourceVersion it read, so two standbys cannot both win;
- a graceful stop releases the Lease (empty holder) so the standby takes over at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kubernetes import client

from forwarder import kube

logger = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str = "default"
    name: str = "caldera-forwarder"
    identity: str = field(default_factory=default_identity)
    duration: int = 15  # seconds; written to the Lease, so whole seconds
    renew_interval: float = 5.0
    retry_interval: float = 2.0  # standby polling, and renewal retries after a failure


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


def _version(lease: client.V1Lease) -> str:
    return str(lease.metadata.resource_version) if lease.metadata is not None else ""


class Elector:
    def __init__(
        self,
        leases: client.CoordinationV1Api,
        config: LeaseConfig,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._leases = leases
        self._clock = clock
        self.holder: str | None = None  # last holder seen; None: the Lease is free or unread
        # (holder, resourceVersion) last seen; None: never read
        self._record: tuple[str | None, str] | None = None
        self._record_seen_at = 0.0  # local clock when `_record` last changed

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait until this replica holds the Lease (True) or `stop` is set (False)."""
        announced = False
        while not stop.is_set():
            try:
                if await asyncio.to_thread(self.try_acquire):
                    logger.info(
                        "leader elected lease=%s identity=%s", self._ref, self.config.identity
                    )
                    return True
            except kube.TRANSIENT as e:
                logger.warning("lease unreadable lease=%s error=%s", self._ref, e)
            if not announced:
                logger.info("standing by lease=%s holder=%s", self._ref, self.holder)
                announced = True
            if await _stopped_within(stop, self.config.retry_interval):
                break
        return False

    async def hold(self) -> None:
        """Renew until the Lease is lost, then return (cancel the task to stop holding)."""
        deadline = self.config.duration - self.config.renew_interval
        renewed_at = self._clock()
        wait = self.config.renew_interval
        while True:
            await asyncio.sleep(wait)
            try:
                renewed = await asyncio.to_thread(self.try_acquire)
            except kube.TRANSIENT as e:
                logger.warning("lease renewal failed lease=%s error=%s", self._ref, e)
                renewed = False
            if renewed:
                renewed_at, wait = self._clock(), self.config.renew_interval
                continue
            taken = self.holder not in (None, self.config.identity)
            if taken or self._clock() - renewed_at >= deadline:
                logger.warning("leader lost lease=%s holder=%s", self._ref, self.holder)
                return
            wait = self.config.retry_interval

    def try_acquire(self) -> bool:
        """One attempt to take or renew the Lease; True when this replica now holds it."""
        cfg = self.config
        try:
            lease = self._leases.read_namespaced_lease(
                cfg.name, cfg.namespace, _request_timeout=kube.REQUEST_TIMEOUT
            )
        except client.ApiException as e:
            if e.status != kube.NOT_FOUND:
                raise
            return self._create()
        now = self._clock()
        spec = lease.spec or client.V1LeaseSpec()
        holder = spec.holder_identity or None
        record = (holder, _version(lease))
        if record != self._record:
            self._record, self._record_seen_at = record, now
        self.holder = holder
        duration = spec.lease_duration_seconds or cfg.duration
        if holder not in (None, cfg.identity) and now < self._record_seen_at + duration:
            return False
        wall = datetime.now(UTC)
        ours = holder == cfg.identity
        lease.spec = client.V1LeaseSpec(
            holder_identity=cfg.identity,
            lease_duration_seconds=cfg.duration,
            acquire_time=spec.acquire_time if ours else wall,
            renew_time=wall,
            lease_transitions=(spec.lease_transitions or 0) + (0 if ours else 1),
        )
        return self._write(
            lambda: self._leases.replace_namespaced_lease(
                cfg.name, cfg.namespace, lease, _request_timeout=kube.REQUEST_TIMEOUT
            )
        )

    def release(self) -> None:
        """Hand the Lease back (empty holder) so a standby need not wait for it to expire."""
        cfg = self.config
        try:
            lease = self._leases.read_namespaced_lease(
                cfg.name, cfg.namespace, _request_timeout=kube.REQUEST_TIMEOUT
            )
            if lease.spec is None or lease.spec.holder_identity != cfg.identity:
                return
            lease.spec.holder_identity = None
            lease.spec.lease_duration_seconds = 1
            lease.spec.renew_time = datetime.now(UTC)
            self._leases.replace_namespaced_lease(
                cfg.name, cfg.namespace, lease, _request_timeout=kube.REQUEST_TIMEOUT
            )
            logger.info("lease released lease=%s identity=%s", self._ref, cfg.identity)
        except kube.TRANSIENT as e:
            logger.warning("lease release failed lease=%s error=%s", self._ref, e)

    @property
    def _ref(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    def _create(self) -> bool:
        cfg = self.config
        wall = datetime.now(UTC)
        lease = client.V1Lease(
            metadata=client.V1ObjectMeta(name=cfg.name, namespace=cfg.namespace),
            spec=client.V1LeaseSpec(
                holder_identity=cfg.identity,
                lease_duration_seconds=cfg.duration,
                acquire_time=wall,
                renew_time=wall,
                lease_transitions=0,
            ),
        )
        return self._write(
            lambda: self._leases.create_namespaced_lease(
                cfg.namespace, lease, _request_timeout=kube.REQUEST_TIMEOUT
            )
        )

    def _write(self, call: Callable[[], client.V1Lease]) -> bool:
        """Create or replace; a 409 means another replica wrote first and won this round."""
        try:
            written = call()
        except client.ApiException as e:
            if e.status == kube.CONFLICT:
                return False
            raise
        self.holder = self.config.identity
        self._record = (self.config.identity, _version(written))
        self._record_seen_at = self._clock()
        return True
