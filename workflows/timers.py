"""Durable timers as the job shells keep them: one cancellable task per key.

A timer whose deadline has passed (restored after continue-as-new, or decided late) fires at
once without a Temporal timer; `on_fire` hands the key back to the core through its inbox.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Generic, Protocol, TypeVar

from temporalio import workflow


class Timer(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def fires_at(self) -> datetime: ...
    @property
    def summary(self) -> str: ...


T = TypeVar("T", bound=Timer)


class Timers(Generic[T]):
    def __init__(self, on_fire: Callable[[T], None]) -> None:
        self._on_fire = on_fire
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._armed: dict[str, T] = {}

    def start(self, timer: T) -> None:
        """Start `timer`, replacing one with the same key."""
        self.cancel(timer.key)
        self._tasks[timer.key] = asyncio.create_task(self._sleep(timer))
        self._armed[timer.key] = timer

    def cancel(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        self._armed.pop(key, None)
        if task is not None:
            task.cancel()

    def next(self) -> T | None:
        """The armed timer that fires first (by key on a tie); None: none is armed."""
        return min(self._armed.values(), key=lambda t: (t.fires_at, t.key), default=None)

    def cancel_all(self) -> None:
        for task in self._tasks.values():
            task.cancel()

    async def _sleep(self, timer: T) -> None:
        delay = timer.fires_at - workflow.now()
        if delay > timedelta(0):
            await workflow.sleep(delay, summary=timer.summary)
        self._tasks.pop(timer.key, None)
        self._armed.pop(timer.key, None)
        self._on_fire(timer)
