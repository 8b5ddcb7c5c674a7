"""List then watch one resource in a thread, resuming from the last resourceVersion.

client-go's reflector in miniature, shared by the forwarder (watch → signals) and the
scheduler's cluster cache (watch → informer store). The official client is synchronous, so
each resource gets a daemon thread that hands what it sees to two callbacks (thread-safe by
contract): list (paged) → `on_list` → watch from the list's resourceVersion → `on_event` per
change → on a normal end of the watch, watch again from the last version seen (bookmarks
included) → on 410 Gone, list again, so the consumer can resync and find what was deleted in
the gap.

`kubernetes.watch.Watch` is not used: it retries a 410 once with the same stale version and
cannot be interrupted from another thread, both of which this loop needs.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Literal

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

logger = logging.getLogger(__name__)

Obj = Mapping[str, Any]  # a Kubernetes object exactly as the apiserver sent it (camelCase JSON)
WatchType = Literal["ADDED", "MODIFIED", "DELETED"]
ListCall = Callable[..., Any]  # a list endpoint; called with list or watch keyword arguments
GONE: Final = 410
REQUEST_TIMEOUT: Final = 30.0  # seconds, for every call that is not a watch
PAGE_SIZE: Final = 500
WATCH_SECONDS: Final = (240, 480)  # server-side watch timeout, randomised like client-go's
NOT_SERVED: Final = 404  # a list of a resource the apiserver does not serve
BACKOFF: Final = (0.5, 8.0)  # seconds: first retry delay, cap (an apiserver back is seen soon)


class _IdleWatch:
    """The watch of a resource not served: no events, ended by the server's timeout (then the
    reflector asks again, so a group served later is picked up) or by the reflector's stop."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._ended = threading.Event()

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        self._ended.wait(self._seconds)
        yield from ()

    def shutdown(self) -> None:
        self._ended.set()

    def close(self) -> None:
        self._ended.set()

    def release_conn(self) -> None:
        """Nothing to release: no connection was opened."""


class _EmptyList:
    """The one page of a resource not served: no objects, no resourceVersion (the watch then
    starts from now, with the objects of a group served meanwhile as ADDED events)."""

    data = json.dumps({"items": [], "metadata": {"resourceVersion": ""}}).encode()


def optional(kind: str, call: ListCall) -> ListCall:
    """`call` for an API group a cluster may not serve (resource.k8s.io/v1 came with Kubernetes
    1.34; scheduling.k8s.io/v1beta1 needs the GenericWorkload feature gate): a 404 lists
    nothing, so a store counts as synced and empty rather than holding its readers back, and
    watches nothing until the next try."""

    def listed(**kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except client.ApiException as e:
            if e.status != NOT_SERVED:
                raise
        if kwargs.get("watch"):
            seconds = kwargs.get("timeout_seconds")
            return _IdleWatch(WATCH_SECONDS[0] if seconds is None else float(seconds))
        logger.info("not served, listed as empty kind=%s", kind)
        return _EmptyList()

    return listed


class Gone(Exception):
    """The resourceVersion is too old (410): only a new list can continue."""


class Reflector:
    """One resource's list+watch loop on its own thread; `kind` names it in logs."""

    def __init__(
        self,
        kind: str,
        call: ListCall,
        on_list: Callable[[list[Obj]], None],
        on_event: Callable[[WatchType, Obj], None],
        watch_seconds: tuple[int, int] = WATCH_SECONDS,
    ) -> None:
        self.kind = kind
        self._call = call
        self._on_list = on_list
        self._on_event = on_event
        self._watch_seconds = watch_seconds
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None  # None: no watch stream open right now
        self._thread = threading.Thread(target=self._run, name=f"watch-{kind}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop promptly: shut the open stream's socket so the blocked read returns."""
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # already closed or released: the loop is leaving anyway
                logger.debug("watch stream already closed kind=%s", self.kind)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _run(self) -> None:
        version: str | None = None  # None: must list before watching
        delay = BACKOFF[0]
        while not self._stopped.is_set():
            try:
                if version is None:
                    objects, version = self.list()
                    if self._stopped.is_set():
                        return
                    self._on_list(objects)
                    logger.info(
                        "listed kind=%s objects=%d version=%s", self.kind, len(objects), version
                    )
                version = self.watch(version)
                delay = BACKOFF[0]
            except Gone:
                logger.info("watch expired, relisting kind=%s version=%s", self.kind, version)
                version = None
            except Exception as e:
                # Whatever it was (API error, broken stream, malformed JSON), a dead watch
                # thread would silently stop this resource forever: back off and go again.
                if self._stopped.is_set():
                    return
                logger.warning("watch failed kind=%s retry_in=%.1fs error=%r", self.kind, delay, e)
                self._stopped.wait(delay)
                delay = min(delay * 2, BACKOFF[1])

    def list(self) -> tuple[list[Obj], str]:
        """Every object (paged), and the list's resourceVersion to watch from."""
        objects: list[Obj] = []
        token: str | None = None  # None: first page
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE_SIZE}
            if token:
                kwargs["_continue"] = token
            try:
                response = self._call(
                    **kwargs, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
            except client.ApiException as e:
                if e.status == GONE and token:
                    objects, token = [], None  # the continue token expired: start over
                    continue
                raise
            page = json.loads(response.data)
            objects += page.get("items") or []
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return objects, str(meta.get("resourceVersion", ""))

    def watch(self, version: str) -> str:
        """Stream events until the server ends the watch; returns the last version seen."""
        seconds = random.randint(*self._watch_seconds)
        try:
            response = self._call(
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=seconds,
                _preload_content=False,
                _request_timeout=(REQUEST_TIMEOUT, seconds + REQUEST_TIMEOUT),
            )
        except client.ApiException as e:
            if e.status == GONE:
                raise Gone from e
            raise
        with self._lock:
            self._response = response
        try:
            if self._stopped.is_set():
                return version
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if not line:
                    continue
                version = self._handle(json.loads(line), version)
                if self._stopped.is_set():
                    break
            return version
        finally:
            with self._lock:
                self._response = None
            response.close()
            response.release_conn()

    def _handle(self, event: dict[str, Any], version: str) -> str:
        type_, obj = event.get("type"), event.get("object") or {}
        if type_ == "ERROR":
            code = obj.get("code")
            if code == GONE:
                raise Gone(obj.get("message", ""))
            raise client.ApiException(status=code, reason=obj.get("message", ""))
        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if type_ in ("ADDED", "MODIFIED", "DELETED"):
            self._on_event(type_, obj)
        return version  # BOOKMARK: only the version moves
