"""Stalls made visible (`service/stalls.py`): a blocked event loop is measured, logged with
where it was blocked, and kept as the worst; a full thread pool shows its busy threads, its
queued calls and how long they waited, and says so in the log."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service import stalls

pytestmark = pytest.mark.unit
_ROOT = Path(__file__).resolve().parents[3]


def _hog(seconds: float) -> None:
    """A blocking call made on the event loop, as a sync client call would be."""
    time.sleep(seconds)


async def test_a_blocked_loop_is_logged_with_where_it_was_blocked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[float] = []
    monitor = stalls.LoopMonitor(limit=0.2, interval=0.02, record=seen.append)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.05)  # the monitor's first sleep has begun
    with caplog.at_level(logging.WARNING, logger=stalls.__name__):
        _hog(0.5)
        await asyncio.wait_for(_until(lambda: bool(monitor.stalls)), 5)
    task.cancel()
    assert 0.4 <= monitor.worst == max(seen)
    (line,) = [r.getMessage() for r in caplog.records if stalls.STALL_LINE in r.getMessage()]
    assert "stall_s=" in line and "threshold_s=0.200" in line
    assert "_hog" in line.split("blocked_in=")[1]  # the watchdog caught the culprit in the act
    # The e2e stack reads the same line back from a worker's log, by its lag.
    log = f"2026-12-06 WARNING service.stalls {line}\nINFO worker started\n"
    assert stalls.logged_stalls(log, 0.4) == [log.splitlines()[0]]
    assert stalls.logged_stalls(log, monitor.worst + 0.01) == []


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.01)


def test_a_lag_under_the_threshold_is_recorded_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[float] = []
    monitor = stalls.LoopMonitor(limit=0.5, record=seen.append)
    with caplog.at_level(logging.WARNING, logger=stalls.__name__):
        monitor.observe(0.3)
        monitor.observe(-0.001)  # woke a hair early: no lag
    assert seen == [0.3, 0.0] and monitor.worst == 0.3 and list(monitor.stalls) == []
    assert caplog.records == []


def test_threshold_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(stalls.ENV_THRESHOLD, "1.5")
    assert stalls.threshold() == 1.5
    for bad in ("", "soon", "0", "-2"):
        monkeypatch.setenv(stalls.ENV_THRESHOLD, bad)
        assert stalls.threshold() == stalls.THRESHOLD


def _series(pool: str) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(stalls.POOLS)
    found = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.labels.get("pool") == pool:
                found[sample.name] = sample.value
    return found


def test_a_full_pool_shows_busy_and_queued_and_logs_the_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    with stalls.MeteredPool("test-full", 1, limit=0.0) as pool:
        first = pool.submit(release.wait, 10)
        queued_at = time.monotonic()
        second = pool.submit(lambda: "done")
        assert _series("test-full") == {
            "caldera_thread_pool_busy": 1.0,
            "caldera_thread_pool_queued": 1.0,
        }
        with caplog.at_level(logging.WARNING, logger=stalls.__name__):
            freed_at = time.monotonic()
            release.set()
            assert first.result(5) and second.result(5) == "done"
        assert pool.worst_wait >= freed_at - queued_at  # it waited for the first to end
        assert (pool.busy, pool.queued) == (0, 0)
    lines = [r.getMessage() for r in caplog.records]
    assert any("thread pool full pool=test-full" in m and "busy=1/1" in m for m in lines), lines
    assert _series("test-full") == {}  # shut down: no series


def test_a_saturated_pool_says_so_once_per_interval_with_how_many_waited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    with (
        caplog.at_level(logging.WARNING, logger=stalls.__name__),
        stalls.MeteredPool("test-spam", 1, limit=0.0, line_every=60) as pool,
    ):
        calls = [pool.submit(release.wait, 10), *(pool.submit(lambda: None) for _ in range(5))]
        release.set()
        for call in calls:
            call.result(5)
    lines = [r.getMessage() for r in caplog.records if "pool=test-spam" in r.getMessage()]
    assert len(lines) == 1 and lines[0].endswith("waits_over=1"), lines  # the first says so
    assert pool._unsaid == 5  # the rest wait for the next line, which counts them


def test_a_queued_call_cancelled_is_no_longer_counted() -> None:
    release = threading.Event()
    with stalls.MeteredPool("test-cancel", 1, limit=60) as pool:
        pool.submit(release.wait, 10)
        waiting = pool.submit(lambda: None)
        assert pool.queued == 1
        assert waiting.cancel()
        assert pool.queued == 0
        release.set()


def test_a_process_held_whole_is_paused_not_a_stall_of_its_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # SIGSTOP (the e2e's "manager away" test) holds the watchdog as long and spends no CPU:
    # nothing of the worker's own blocked its loop. The same lag with the CPU spent is a stall
    # (a call holding the GIL holds the watchdog too); so is one the watchdog was not held for
    # (the loop blocked in a call of its own that spends no CPU: a socket read on the loop).
    monitor = stalls.LoopMonitor(limit=0.5, record=lambda lag: None)
    with caplog.at_level(logging.WARNING, logger=stalls.__name__):
        monitor.observe(9.0, cpu=0.02, held=8.8)
        monitor.observe(2.0, cpu=1.9, held=2.0)
        monitor.observe(3.0, cpu=0.0, held=0.0)
        monitor.observe(9.0, cpu=0.1, held=7.0)  # resumed, then blocked by a call of its own
    assert list(monitor.paused) == [8.8, 7.0] and list(monitor.stalls) == [2.0, 3.0, 2.0]
    lines = [r.getMessage() for r in caplog.records]
    assert stalls.logged_stalls("\n".join(lines), 1.0) == lines[1:3] + lines[4:]
    assert lines[0].startswith(stalls.PAUSED_LINE) and lines[3].startswith(stalls.PAUSED_LINE)
    assert "stall_s=2.000" in lines[4]


_HELD = """
import asyncio, logging, sys
from service import stalls
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
async def main() -> None:
    beat = asyncio.Event()
    monitor = stalls.LoopMonitor(0.5, record=lambda lag: beat.set())
    task = asyncio.create_task(monitor.run())
    await beat.wait()  # measuring: its first lag is in
    print("watching", flush=True)
    while not monitor.paused and not monitor.stalls:  # until a lag over the limit is told
        await asyncio.sleep(0.05)
    task.cancel()
asyncio.run(main())
"""


def test_a_worker_stopped_and_continued_logs_a_pause_not_a_stall() -> None:
    # The CI's failure on stop 44: on SIGCONT the watchdog ran before the loop and caught its
    # thread in `select`, and the 9.3 s the process was stopped read as a stall of its loop.
    child = subprocess.Popen(
        [sys.executable, "-c", _HELD], stdout=subprocess.PIPE, text=True, cwd=_ROOT
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "watching"
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(2.0)  # the stimulus: the process held whole this long
        os.kill(child.pid, signal.SIGCONT)
        told = child.communicate(timeout=30)[0]
    finally:
        child.kill()
        child.wait()
    (line,) = told.splitlines()  # a pause, and no stall of the loop
    assert line.startswith(stalls.PAUSED_LINE), line
    assert float(line.split("paused_s=")[1].split()[0]) >= 1.8, line
