"""Reads shared for a short while: one load per key per max age, callers that arrive during a
load wait for it (single flight), a load that raises is raised to its callers and not kept."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from activities.dispatch.shared_reads import SharedReads

pytestmark = pytest.mark.unit


class Clock:
    """A settable clock that counts how often it was read (once per `get`)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.reads += 1
            return self.now


def _until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.005)


def test_a_fresh_answer_is_shared_and_a_stale_one_read_again() -> None:
    clock, loads = Clock(), []
    reads: SharedReads[str, int] = SharedReads(2.0, clock)

    def load() -> int:
        loads.append(1)
        return len(loads)

    assert reads.get("a", load) == 1
    clock.now += 1.9
    assert reads.get("a", load) == 1
    assert reads.get("b", load) == 2  # another key, its own read
    clock.now += 0.1
    assert reads.get("a", load) == 3
    assert len(loads) == 3


def test_callers_during_a_read_wait_for_it() -> None:
    clock, release, loads = Clock(), threading.Event(), []
    reads: SharedReads[str, str] = SharedReads(2.0, clock)

    def load() -> str:
        loads.append(1)
        release.wait(10)
        return "nodes and pods"

    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(reads.get("a", load))) for _ in range(8)]
    for t in threads:
        t.start()
    # Every caller has looked (under the lock) and one read is under way: the others wait.
    _until(lambda: clock.reads == 8 and len(loads) == 1, "every caller asked")
    assert got == []
    release.set()
    for t in threads:
        t.join(10)
    assert got == ["nodes and pods"] * 8 and len(loads) == 1


def test_a_read_that_raises_reaches_its_waiters_and_is_not_kept() -> None:
    clock, release = Clock(), threading.Event()
    reads: SharedReads[str, str] = SharedReads(2.0, clock)

    def broken() -> str:
        release.wait(10)
        raise RuntimeError("bug")

    errors: list[BaseException] = []

    def call() -> None:
        try:
            reads.get("a", broken)
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    _until(lambda: clock.reads == 3, "every caller asked")
    release.set()
    for t in threads:
        t.join(10)
    assert [str(e) for e in errors] == ["bug"] * 3
    assert reads.get("a", lambda: "fine") == "fine"  # the failure was not kept


def test_none_is_an_answer_like_any_other() -> None:
    loads: list[int] = []
    reads: SharedReads[str, None] = SharedReads(2.0, Clock())
    assert reads.get("gone", lambda: loads.append(1)) is None
    assert reads.get("gone", lambda: loads.append(1)) is None
    assert loads == [1]
