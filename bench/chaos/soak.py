"""The state of one soak in progress: what was submitted, refused, injected and evicted, and the
clients it runs on. The run (`run.py`) fills it in; the report (`report.py`) reads it at the end.

Its own module so both can import it without importing each other.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubernetes import client
from temporalio.client import Client

from bench.chaos import audit as audit_mod
from bench.chaos import stack as chaos_stack
from bench.chaos.config import Options
from bench.chaos.faults import Fault
from bench.chaos.workload import Planned

T = TypeVar("T")


@dataclass
class Soak:
    opts: Options
    stack: chaos_stack.Stack
    namespace: str
    audit: audit_mod.Audit
    temporal: Client
    loop: asyncio.AbstractEventLoop
    started: float = field(default_factory=time.time)
    planned: list[Planned] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    queue_open: bool = True
    canaries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (seconds from the start, sequence, action): the timeline and the per-job actions
    pending: list[tuple[float, int, Callable[[], None]]] = field(default_factory=list)
    sequence: int = 0

    def api(self) -> client.ApiClient:
        return self.stack.api()

    def on_loop(self, coro: Coroutine[Any, Any, T], timeout: float = 200) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)
