"""One shared watch of Volcano Jobs per worker cluster per dispatch worker process, so that a
follower of a copy (`activities.follow`) learns of a change when it happens instead of reading
its copy every few seconds.

It is a doorbell, never the truth: `follow_copy` answers only from a read of its own (the
copy's status, the lease as read, the uid its renewals are fenced on), and it reads only when
the watch shows its copy different from what the manager holds, or not at all, or the watch is
not healthy. So a watch that lags or misses an event costs latency, never a wrong answer, and
a copy this watch has not seen yet (just created) is read, not taken for gone.

A watch is healthy while its last (re)connection is at most `HEALTHY_SECONDS` old: its stream
is reopened every `WINDOW_SECONDS`, so a hung apiserver turns it unhealthy within seconds and
the followers fall back to reading, which keeps the "silent cluster" rule of `activities.follow`
as it was. A watch failing rings every follower of its cluster at once.

Watches start with their first follower (`subscribe`) and stop once no follower has wanted
them for `IDLE_SECONDS` (checked as followers come and go), or at `stop_all` (the worker's
shutdown). Costs: one list then one
watch request per cluster per `WINDOW_SECONDS`, whatever the number of followers; the thread
filters out the Jobs that are not dispatched copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubernetes import client

from activities.dispatch import remote
from controllers.dispatch import copies, mirror
from models import vcjob
from service import reflector
from service.reflector import Obj, WatchType

logger = logging.getLogger(__name__)

WINDOW_SECONDS: Final = 10  # server-side end of each watch stream; it is reopened at once
HEALTHY_SECONDS: Final = WINDOW_SECONDS + 3.0  # older last (re)connection: not trusted
IDLE_SECONDS: Final = 60.0  # a watch nobody follows on is stopped after this
Key = tuple[str, str]  # (namespace, name) of a copy on its cluster


@dataclass(frozen=True)
class Seen:
    """What the watch last saw of a copy: who it belongs to and its status digest."""

    origin: str
    generation: int
    digest: str


def seen(obj: Obj) -> tuple[Key, Seen] | None:
    """The copy's key and what matters of it; None: not a dispatched copy (or no name)."""
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    origin, generation = copies.whose(meta.get("annotations") or {})
    name = str(meta.get("name") or "")
    if not origin or not name:
        return None
    status: Mapping[str, Any] = obj.get("status") or {}
    key = (str(meta.get("namespace") or ""), name)
    return key, Seen(origin=origin, generation=generation, digest=mirror.digest(status))


def unchanged(found: Seen | None, origin: str, generation: int, known: str) -> bool:
    """Whether the watch shows this very copy (origin, generation) with the status the manager
    holds: only then may a follower skip its read."""
    return (
        found is not None
        and (found.origin, found.generation) == (origin, generation)
        and found.digest == known
    )


def news(found: Seen | None, since: Seen | None, origin: str, generation: int, known: str) -> bool:
    """A read is due when the watch shows the copy otherwise than at the last read and not
    exactly as the manager holds it (then the read would only confirm what is known)."""
    return found != since and not unchanged(found, origin, generation, known)


@dataclass(eq=False)
class _Follower:
    loop: asyncio.AbstractEventLoop
    rung: asyncio.Event = field(default_factory=asyncio.Event)

    def ring(self) -> None:
        """From the watch thread: wake the follower on its own loop."""
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody to wake
            self.loop.call_soon_threadsafe(self.rung.set)


class ClusterWatch:
    """The Volcano Jobs of one worker cluster, as last seen, and who waits on which."""

    def __init__(self, cluster: str, api: Callable[[str], client.ApiClient] = remote.api) -> None:
        self.cluster = cluster
        self._api = api
        self._client: client.ApiClient | None = None  # None: get one on the next call
        self._lock = threading.Lock()
        self._copies: dict[Key, Seen] = {}
        self._followers: dict[Key, set[_Follower]] = {}
        self._connected = float("-inf")  # monotonic time of the last successful (re)connect
        self._listed = False
        self.idle_since: float | None = time.monotonic()  # None: someone follows
        window = (WINDOW_SECONDS, WINDOW_SECONDS)
        self._reflector = reflector.Reflector(
            f"dispatched-copies-{cluster}", self._call, self._on_list, self._on_event, window
        )

    def start(self) -> None:
        self._reflector.start()

    def stop(self, timeout: float = 0.0) -> None:
        self._reflector.stop(timeout)

    def healthy(self, now: float | None = None) -> bool:
        with self._lock:
            fresh = (now or time.monotonic()) - self._connected <= HEALTHY_SECONDS
            return self._listed and fresh

    def get(self, key: Key) -> Seen | None:
        with self._lock:
            return self._copies.get(key)

    def follow(self, key: Key, follower: _Follower) -> None:
        with self._lock:
            self._followers.setdefault(key, set()).add(follower)
            self.idle_since = None

    def unfollow(self, key: Key, follower: _Follower) -> None:
        with self._lock:
            waiting = self._followers.get(key, set())
            waiting.discard(follower)
            if not waiting:
                self._followers.pop(key, None)
            if not self._followers:
                self.idle_since = time.monotonic()

    # -- the watch thread ------------------------------------------------------------------

    def _call(self, **kwargs: Any) -> Any:
        """List or watch every Volcano Job of the cluster; any failure rings every follower
        (the watch is not healthy until a call succeeds again)."""
        try:
            if self._client is None:
                self._client = self._api(self.cluster)
            response = client.CustomObjectsApi(self._client).list_cluster_custom_object(
                vcjob.GROUP, vcjob.VERSION, remote.JOBS, **kwargs
            )
        except Exception:
            self._client = None  # a rotated Secret or a restarted cluster: a fresh client
            with self._lock:
                self._connected = float("-inf")
                everyone = [f for waiting in self._followers.values() for f in waiting]
            for f in everyone:
                f.ring()
            raise
        with self._lock:
            self._connected = time.monotonic()
        return response

    def _on_list(self, objects: list[Obj]) -> None:
        found = dict(filter(None, (seen(o) for o in objects)))
        with self._lock:
            self._copies = found
            self._listed = True
            self._connected = time.monotonic()
            everyone = [f for waiting in self._followers.values() for f in waiting]
        for f in everyone:
            f.ring()

    def _on_event(self, kind: WatchType, obj: Obj) -> None:
        entry = seen(obj)
        if entry is None:
            return
        key, what = entry
        with self._lock:
            if kind == "DELETED":
                self._copies.pop(key, None)
            else:
                self._copies[key] = what
            waiting = list(self._followers.get(key, ()))
        for f in waiting:
            f.ring()


class Watches:
    """This process's watches, one per worker cluster, started by their first follower."""

    def __init__(self, api: Callable[[str], client.ApiClient] = remote.api) -> None:
        self._api = api
        self._lock = threading.Lock()
        self._by_cluster: dict[str, ClusterWatch] = {}

    @contextlib.contextmanager
    def subscribe(self, cluster: str, key: Key) -> Iterator[Subscription]:
        """Follow one copy while inside: its watch (started if need be) rings on its changes."""
        follower = _Follower(asyncio.get_running_loop())
        with self._lock:
            self._sweep(time.monotonic())
            watch = self._by_cluster.get(cluster)
            if watch is None:
                watch = self._by_cluster[cluster] = ClusterWatch(cluster, self._api)
                watch.start()
        watch.follow(key, follower)
        try:
            yield Subscription(watch, key, follower)
        finally:
            watch.unfollow(key, follower)
            with self._lock:
                self._sweep(time.monotonic())

    def stop_all(self, timeout: float = 5.0) -> None:
        with self._lock:
            stopping, self._by_cluster = list(self._by_cluster.values()), {}
        for w in stopping:
            w.stop(timeout)

    def _sweep(self, now: float) -> None:
        """Stop the watches nobody has followed on for IDLE_SECONDS (lock held)."""
        for name, w in list(self._by_cluster.items()):
            if w.idle_since is not None and now - w.idle_since >= IDLE_SECONDS:
                del self._by_cluster[name]
                w.stop()
                logger.info("copy watch stopped cluster=%s idle_s=%.0f", name, now - w.idle_since)


@dataclass(frozen=True)
class Subscription:
    """One follower's view of its copy on the shared watch."""

    watch: ClusterWatch
    key: Key
    follower: _Follower

    def healthy(self) -> bool:
        return self.watch.healthy()

    def seen(self) -> Seen | None:
        """What the watch shows of the copy now (None: not there, or not seen yet)."""
        return self.watch.get(self.key)

    def news(self, since: Seen | None, origin: str, generation: int, known: str) -> bool:
        """Whether the follower must read its copy, as far as the watch shows: `news`, with
        `since` what it showed at the follower's last read (the caller checks `healthy`)."""
        return news(self.seen(), since, origin, generation, known)

    async def wait(self, seconds: float) -> None:
        """Until the watch rings for this copy (or fails), at most `seconds`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.follower.rung.wait(), max(0.0, seconds))
        self.follower.rung.clear()


WATCHES: Final = Watches()  # the process's own; `worker.py` stops them at shutdown
