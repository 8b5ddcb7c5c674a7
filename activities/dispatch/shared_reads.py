"""Reads of a worker cluster shared by the activities of one worker process: a read of a key
started less than `max_age` seconds ago answers every caller of that key, and while one is
under way the others wait for it instead of starting their own (single flight).

Why: every DispatchWorkflow probes its queue's clusters before it places a copy, and a probe
lists all of a cluster's nodes and pods; a burst of jobs would cost jobs x pods. Shared, it
costs one read per cluster per `max_age`, however many jobs ask. Activities are sync and run
in threads, so the table is guarded by a lock; the read itself runs outside it, so a cluster
that hangs holds only its own callers. A loader should answer its failures as values (the
probes do: a `ClusterStatus.error`), which are shared like any answer; one that raises
anyway raises to every caller of that flight and is not kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class _Flight(Generic[V]):
    started: float
    done: threading.Event = field(default_factory=threading.Event)
    answer: tuple[V] | None = None  # None: not answered yet (or it raised)
    error: BaseException | None = None  # None: it answered


class SharedReads(Generic[K, V]):
    """One answer per key per `max_age` seconds, read once however many ask."""

    def __init__(self, max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._flights: dict[K, _Flight[V]] = {}

    def get(self, key: K, load: Callable[[], V]) -> V:
        """The answer of a read of `key` started within `max_age`, else of a new one."""
        with self._lock:
            now = self._clock()
            flight = self._flights.get(key)
            fresh = flight is not None and now - flight.started < self._max_age
            mine = not fresh
            if flight is None or mine:
                self._drop_stale(now)
                flight = _Flight(started=now)
                self._flights[key] = flight
        if mine:
            return self._fly(key, flight, load)
        flight.done.wait()
        if flight.answer is None:
            raise flight.error or RuntimeError("a shared read ended without an answer")
        return flight.answer[0]

    def _fly(self, key: K, flight: _Flight[V], load: Callable[[], V]) -> V:
        try:
            value = load()
        except BaseException as e:
            flight.error = e
            with self._lock:
                if self._flights.get(key) is flight:
                    del self._flights[key]
            raise
        else:
            flight.answer = (value,)
            return value
        finally:
            flight.done.set()

    def _drop_stale(self, now: float) -> None:
        """Forget answered reads past their age (under the lock), so keys do not pile up."""
        old = [
            k
            for k, f in self._flights.items()
            if f.done.is_set() and now - f.started >= self._max_age
        ]
        for k in old:
            del self._flights[k]
