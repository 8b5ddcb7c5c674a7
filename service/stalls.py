"""Stalls of a worker process made visible: its asyncio event loop running late, and its
thread pools full. Issue 37: the dispatcher's long polls stalled 10-13 s, leases lapsed, and
nothing in the worker said where the time went.

- `LoopMonitor` sleeps `interval` on the loop and measures how late it wakes (the lag every
  coroutine of the process suffered: polls, heartbeats, workflow tasks). Each lag goes to
  `caldera_event_loop_lag_seconds`; one over the threshold is a WARNING `event loop stalled`
  naming where the loop thread was, as caught by a watchdog thread while it was stalled (once
  the loop runs again the culprit is gone). Stuck in `select` there means the loop waited
  for the GIL, not on a call of its own. A lag in which the whole process was held
  (SIGSTOP, a machine that did not schedule it) is a `process paused` line instead: the
  watchdog was held as long, and no CPU was spent.
- `MeteredPool` is a ThreadPoolExecutor that counts its busy threads and queued calls
  (`caldera_thread_pool_busy` and `_queued`, read at each scrape: busy at the pool's size is
  full) and how long each
  call waited for a thread (`caldera_thread_pool_wait_seconds`); a wait over the threshold is
  a WARNING `thread pool full`, at most one per pool every POOL_LINE_EVERY seconds, counting
  the waits over it since the last line (a saturated worker made 7,514 such lines in 13 min
  of a 10k-job run, one per call).

The threshold is CALDERA_STALL_SECONDS (default 0.5 s).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final, ParamSpec, TypeVar

from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector

from service import metrics, worker_registry

logger = logging.getLogger(__name__)

ENV_THRESHOLD: Final = "CALDERA_STALL_SECONDS"
THRESHOLD: Final = 0.5  # seconds: a stall this long is logged
INTERVAL: Final = 0.1  # seconds between the monitor's wake-ups
STALL_LINE: Final = "event loop stalled"  # the e2e tests look for it (`logged_stalls`)
_LOGGED: Final = re.compile(re.escape(STALL_LINE) + r" stall_s=(\d+(?:\.\d+)?)")
PAUSED_LINE: Final = "process paused"  # held whole, not by its own loop: not a stall
PAUSED_CPU: Final = 0.1  # CPU seconds per second of lag under which a held process is paused
KEPT: Final = 100  # latest stalls a monitor keeps for its reader
POOL_LINE_EVERY: Final = 10.0  # seconds between two `thread pool full` lines of one pool
FRAMES: Final = 10  # innermost frames of the loop thread named in a stall's line
P = ParamSpec("P")
T = TypeVar("T")


def threshold() -> float:
    """The configured threshold in seconds (CALDERA_STALL_SECONDS), THRESHOLD if unset or bad."""
    try:
        value = float(os.environ.get(ENV_THRESHOLD) or THRESHOLD)
    except ValueError:
        return THRESHOLD
    return value if value > 0 else THRESHOLD


def logged_stalls(text: str, at_least: float) -> list[str]:
    """The `event loop stalled` lines of a worker's log whose lag was at least `at_least`
    seconds (the e2e stack's workers are held to 1 s: `tests/e2e/conftest.py`)."""
    return [
        line
        for line in text.splitlines()
        if (m := _LOGGED.search(line)) is not None and float(m.group(1)) >= at_least
    ]


def where(thread_id: int | None) -> str:
    """The innermost frames of a thread, `file:line function` from the inside out ("" if gone)."""
    frame = sys._current_frames().get(thread_id) if thread_id is not None else None
    if frame is None:
        return ""
    stack = traceback.extract_stack(frame)[-FRAMES:]
    return " < ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in stack[::-1])


class LoopMonitor:
    """Measures the lag of the loop it runs on (`run`), keeps the worst, logs the stalls."""

    def __init__(
        self,
        limit: float | None = None,
        interval: float = INTERVAL,
        record: Callable[[float], None] | None = None,
    ) -> None:
        self.limit = threshold() if limit is None else limit
        self.interval = interval
        self.worst = 0.0  # the longest lag seen, seconds
        # The latest lags over the limit, in order (bounded: a worker runs for months).
        self.stalls: collections.deque[float] = collections.deque(maxlen=KEPT)
        self.paused: collections.deque[float] = collections.deque(maxlen=KEPT)  # held whole
        self._record = record or _observe_lag
        self._beat = time.monotonic()  # when the loop last ran the monitor
        self._caught = ""  # where the loop thread was, caught during the current stall
        self._held = 0.0  # seconds the watchdog itself was held since the loop last ran
        self._looked = time.monotonic()  # when the watchdog last looked (or the loop for it)
        self._loop_thread: int | None = None
        self._seen = threading.Lock()  # `_beat` and `_caught`, shared with the watchdog
        self._stopped = threading.Event()

    async def run(self) -> None:
        """Until cancelled: sleep, measure the lag, and watch for stalls from a thread."""
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        watchdog = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
        watchdog.start()
        try:
            while True:
                before, cpu = time.monotonic(), time.process_time()
                await asyncio.sleep(self.interval)
                lag = time.monotonic() - before - self.interval
                self.observe(lag, time.process_time() - cpu)
        finally:
            self._stopped.set()

    def observe(self, lag: float, cpu: float | None = None, held: float | None = None) -> None:
        """One measured lag: recorded, kept if the worst, logged if over the limit. `cpu`: the
        process's CPU seconds over the same span (None: not measured); `held`: the seconds the
        watchdog thread was itself held over it (None: as the watchdog measured). Held while
        the process spent almost no CPU, the process was held whole (SIGSTOP, a machine that
        did not schedule it): a `process paused` line, and only the rest of the lag is the
        loop's own. A call holding the GIL holds the watchdog too, but spends the CPU."""
        lag = max(0.0, lag)
        with self._seen:
            self._beat = time.monotonic()
            caught, self._caught = self._caught, ""
            # The loop may run before the watchdog after a hold (SIGCONT wakes both): a look
            # overdue now is counted here, and the watchdog counts on from now.
            watched, self._held = self._held + self._overdue(self._beat), 0.0
        held = min(lag, watched if held is None else held)
        self._record(lag)
        self.worst = max(self.worst, lag)
        own = lag
        if held and cpu is not None and cpu < PAUSED_CPU * lag:
            own = lag - held
            self.paused.append(held)
            logger.warning("%s paused_s=%.3f cpu_s=%.3f", PAUSED_LINE, held, cpu)
            caught = ""  # looked at before the hold, if at all
        if own >= self.limit:
            self.stalls.append(own)
            logger.warning(
                "%s stall_s=%.3f threshold_s=%.3f blocked_in=%s",
                STALL_LINE,
                own,
                self.limit,
                caught or "(not caught: shorter than the watchdog's look)",
            )

    def _watch(self) -> None:
        """While the loop is late past the limit, note once where its thread is. A look that
        came late by the limit or more was held with the whole process: it counts as held, and
        the loop thread is not looked at then (it has not had its turn yet since the hold:
        caught in `select`, it would read as a stall of the loop, as on SIGCONT)."""
        while not self._stopped.wait(self.limit / 2):
            with self._seen:
                now = time.monotonic()
                overdue = self._overdue(now)
                if overdue:
                    self._held += overdue
                    continue
                late = now - self._beat - self.interval
                if late >= self.limit / 2 and not self._caught:
                    self._caught = where(self._loop_thread)

    def _overdue(self, now: float) -> float:
        """The time since the watchdog's last look if that look is late by the limit or more
        (the watchdog held), else 0; the next is measured from `now`. Called under `_seen`."""
        since, self._looked = now - self._looked, now
        return since if since - self.limit / 2 >= self.limit else 0.0


@contextlib.asynccontextmanager
async def watching_loop(limit: float | None = None) -> Any:
    """A `LoopMonitor` running on the current loop while inside; yields it."""
    monitor = LoopMonitor(limit)
    task = asyncio.get_running_loop().create_task(monitor.run(), name="loop-monitor")
    try:
        yield monitor
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _observe_lag(lag: float) -> None:
    worker_registry.observe(metrics.EVENT_LOOP_LAG, lag)


class MeteredPool(ThreadPoolExecutor):
    """A thread pool that counts its busy threads and queued calls and times each wait."""

    def __init__(
        self,
        name: str,
        threads: int,
        limit: float | None = None,
        line_every: float = POOL_LINE_EVERY,
    ) -> None:
        super().__init__(threads, thread_name_prefix=name)
        self.name = name
        self.threads = threads
        self.limit = threshold() if limit is None else limit
        self.busy = 0
        self.queued = 0
        self.worst_wait = 0.0
        self._counts = threading.Lock()
        self._line_every = line_every
        self._lined_at = float("-inf")  # when the last `thread pool full` line went out
        self._unsaid = 0  # waits over the limit since then
        POOLS.add(self)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        queued_at = time.monotonic()
        with self._counts:
            self.queued += 1

        def timed() -> T:
            started = time.monotonic()
            waited = started - queued_at
            with self._counts:
                self.queued -= 1
                self.busy += 1
                busy, queued = self.busy, self.queued
                self.worst_wait = max(self.worst_wait, waited)
                over = self._over(waited, started)
            worker_registry.observe(metrics.THREAD_POOL_WAIT, waited, self.name)
            if over:
                logger.warning(
                    "thread pool full pool=%s waited_s=%.3f busy=%d/%d queued=%d waits_over=%d",
                    self.name,
                    waited,
                    busy,
                    self.threads,
                    queued,
                    over,
                )
            try:
                return fn(*args, **kwargs)
            finally:
                with self._counts:
                    self.busy -= 1

        try:
            future = super().submit(timed)
        except BaseException:
            self._unqueue()
            raise
        future.add_done_callback(lambda f: self._unqueue() if f.cancelled() else None)
        return future

    def _over(self, waited: float, now: float) -> int:
        """Under `_counts`: the waits over the limit to say in a line now (this one included),
        0 when none is due (under the limit, or a line went out less than `_line_every` ago)."""
        if waited < self.limit:
            return 0
        self._unsaid += 1
        if now - self._lined_at < self._line_every:
            return 0
        said, self._unsaid, self._lined_at = self._unsaid, 0, now
        return said

    def _unqueue(self) -> None:
        """A call that never ran (cancelled, or the pool shut): no longer queued."""
        with self._counts:
            self.queued -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        POOLS.discard(self)
        super().shutdown(wait, cancel_futures=cancel_futures)


class PoolSeries(Collector):
    """The live pools' gauges, read at each scrape (a pool shut down has none)."""

    def __init__(self) -> None:
        self._pools: set[MeteredPool] = set()
        self._lock = threading.Lock()

    def add(self, pool: MeteredPool) -> None:
        with self._lock:
            self._pools.add(pool)

    def discard(self, pool: MeteredPool) -> None:
        with self._lock:
            self._pools.discard(pool)

    def describe(self) -> Iterable[Family]:
        return []  # families only while pools exist: the registry collects them at scrape

    def collect(self) -> Iterator[Family]:
        with self._lock:
            pools = sorted(self._pools, key=lambda p: p.name)
        if not pools:
            return
        busy = GaugeMetricFamily(*_family(metrics.THREAD_POOL_BUSY))
        queued = GaugeMetricFamily(*_family(metrics.THREAD_POOL_QUEUED))
        for pool in pools:
            busy.add_metric([pool.name], pool.busy)
            queued.add_metric([pool.name], pool.queued)
        yield busy
        yield queued


def _family(gauge: metrics.Gauge) -> tuple[str, str, None, tuple[str, ...]]:
    return gauge.name, gauge.help, None, gauge.labels


POOLS: Final = PoolSeries()
worker_registry.WORKER_REGISTRY.register(POOLS)
