"""One leadership term of the forwarder: watches → router → coalescer → signaller.

The asyncio loop owns every piece of state (router index, pending batches, lanes); watch
threads only hand items over through the loop. A term starts from empty memory and a full
list of everything, so a new leader resyncs every workflow, as an informer's initial list does.

Jobs and Queues are listed first and their signals sent before the other watches start, so
that on startup a Job's or Queue's workflow exists before its pods, PodGroups and Commands are
signalled (a signal to a workflow that does not exist is dropped). Volcano waits for its
informers to sync for the same reason. Queues are listed before the rest of those: whether a
Job is run here or dispatched to a worker cluster depends on its queue's `extendClusters`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import Final

from forwarder import kube, signaller, watch
from forwarder.meters import Meters
from forwarder.routing import coalesce, envelopes, logs, router

logger = logging.getLogger(__name__)

DELETE_ATTEMPTS: Final = 4
# The workflows' own objects.
FIRST: Final = frozenset(
    {envelopes.Kind.JOB, envelopes.Kind.QUEUE, envelopes.Kind.BATCH_JOB, envelopes.Kind.CRON_JOB}
)
DeleteCommand = Callable[[str, str, str], bool]  # (namespace, name, uid) → deleted by us?


class Pipeline:
    def __init__(
        self,
        calls: Mapping[envelopes.Kind, kube.ListCall],
        delete_command: DeleteCommand,
        sender: signaller.Signaller,
        delay: float = coalesce.DEFAULT_DELAY,
        meters: Meters | None = None,  # None: record nothing
    ) -> None:
        self._calls = calls
        self._meters = meters or Meters()
        self._delete_command = delete_command
        self._sender = sender
        self._router = router.Router()
        self._coalescer = coalesce.Coalescer(delay)
        self._inbox: asyncio.Queue[envelopes.Inbound | None] = asyncio.Queue()  # None: halt
        self._watchers: list[watch.Watcher] = []
        self._listed: set[envelopes.Kind] = set()  # which of FIRST have been listed once
        self._synced = False  # FIRST listed and signalled; the other watches are running
        self._relisted: set[envelopes.Kind] = set()  # kinds listed at least once this term

    async def run(self, halt: asyncio.Event) -> None:
        """Forward until `halt` is set; then stop the watches (call `finish` next)."""
        loop = asyncio.get_running_loop()

        def emit(item: envelopes.Inbound) -> None:  # called from watch threads
            with contextlib.suppress(RuntimeError):  # a closed loop: the process is exiting
                loop.call_soon_threadsafe(self._inbox.put_nowait, item)

        async def halt_inbox() -> None:
            await halt.wait()
            self._inbox.put_nowait(None)

        halting = asyncio.create_task(halt_inbox())
        self._start(envelopes.Kind.QUEUE, emit)  # the rest of FIRST once it is listed
        try:
            while True:
                deadline = self._coalescer.next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    item = await asyncio.wait_for(self._inbox.get(), timeout)
                except TimeoutError:
                    self._submit(self._coalescer.due(time.monotonic()))
                    continue
                if item is None:
                    break
                await self._handle(item)
                if isinstance(item, envelopes.Relisted) and item.kind in FIRST:
                    await self._synced_first(item.kind, emit)
                self._submit(self._coalescer.due(time.monotonic()))
        finally:
            halting.cancel()
            await asyncio.gather(*(asyncio.to_thread(w.stop) for w in self._watchers))

    async def finish(self, graceful: bool) -> None:
        """Graceful: send what was observed. Otherwise (lease lost) drop it: not ours to send."""
        if not graceful:
            await self._sender.abandon()
            return
        while not self._inbox.empty():
            item = self._inbox.get_nowait()
            if item is not None:
                await self._handle(item)
        self._submit(self._coalescer.drain())
        await self._sender.join()
        logger.info("forwarding stopped signals_sent=%d", self._sender.sent)

    def _start(self, kind: envelopes.Kind, emit: Callable[[envelopes.Inbound], None]) -> None:
        watcher = watch.Watcher(kind, self._calls[kind], emit)
        self._watchers.append(watcher)
        watcher.start()

    async def _synced_first(
        self, kind: envelopes.Kind, emit: Callable[[envelopes.Inbound], None]
    ) -> None:
        self._listed.add(kind)
        if kind is envelopes.Kind.QUEUE and not self._synced and len(self._listed) == 1:
            for first in sorted(FIRST - {kind}):
                self._start(first, emit)
        if self._synced or self._listed != FIRST:
            return
        self._synced = True
        await self._sender.join()  # every listed Job's and Queue's workflow exists now
        for later in sorted(set(envelopes.Kind) - FIRST):
            self._start(later, emit)

    async def _handle(self, item: envelopes.Inbound) -> None:
        self._count(item)
        try:
            outgoing = self._router.route(item)
        except Exception:
            # One malformed object must not stop forwarding for every other Job.
            logger.exception("event not forwarded kind=%s", item.kind)
            return
        received = item.received  # where each outgoing signal's lag starts
        for out in outgoing:
            if isinstance(out, envelopes.Batched):
                self._coalescer.add(out, time.monotonic(), received)
            elif isinstance(out, envelopes.Signal):
                out = dataclasses.replace(out, received=received)
                self._submit(self._coalescer.add_signal(out))
            elif await self._consume(out):
                signal = dataclasses.replace(out.signal, received=received)
                self._submit(self._coalescer.add_signal(signal))

    def _count(self, item: envelopes.Inbound) -> None:
        kind = str(item.kind)
        if isinstance(item, envelopes.Observed):
            self._meters.events.add(1, {"kind": kind, "type": item.type})
            return
        reason = "expired" if item.kind in self._relisted else "initial"
        self._relisted.add(item.kind)
        self._meters.relists.add(1, {"kind": kind, "reason": reason})
        self._meters.events.add(len(item.objects), {"kind": kind, "type": "LISTED"})

    def _submit(self, outgoing: list[envelopes.Signal]) -> None:
        for s in outgoing:
            self._sender.submit(s)

    async def _consume(self, command: envelopes.ConsumeCommand) -> bool:
        """Delete the Command; True only if this replica deleted it (at-most-once delivery)."""
        log = logs.for_target(logger, command.signal.target)
        delay = 0.2
        for attempt in range(1, DELETE_ATTEMPTS + 1):
            try:
                deleted = await asyncio.to_thread(
                    self._delete_command, command.namespace, command.name, command.uid
                )
            except kube.TRANSIENT as e:
                log.warning(
                    "command delete failed command=%s attempt=%d error=%s", command.name, attempt, e
                )
                await asyncio.sleep(delay)
                delay *= 2
                continue
            if deleted:
                log.info("command consumed command=%s", command.name)
            else:
                log.info("command skipped, consumed elsewhere command=%s", command.name)
            return deleted
        log.error("command left in place, not delivered command=%s", command.name)
        return False
