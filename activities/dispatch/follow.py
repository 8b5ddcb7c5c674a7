"""Following a dispatched copy: one long poll of its Job on its worker cluster, which renews
the copy's lease as it goes and answers when the copy's status is no longer what the manager
holds, the copy is gone, its cluster has been silent a while, or the poll's time is up (with
the copy's new Events). Async, so a poll that waits holds no thread; its reads go to threads.
An idle running job costs one activity per WATCH_SECONDS, not a timer and an activity per read.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kubernetes import client
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube
from activities.dispatch import cluster_secrets, copywatch, remote
from activities.dispatch.remote import CopyInput, Unreachable
from controllers.dispatch import copies, mirror
from controllers.dispatch.results import EventMark, Followed, RemoteEvent
from models import vcjob
from models.dispatch import GENERATION_ANNOTATION, LEASE_ANNOTATION, RemoteCopy, RemoteState
from models.meta import parse_time

WATCH_SECONDS: Final = 240  # one long poll at most: an idle running job costs one per 4 min
POLL_SECONDS: Final = 5.0  # between reads of the copy within a long poll
SETTLE_SECONDS: Final = 1.0  # after the watch shows a change, before the read
SILENT_SECONDS: Final = 10.0  # a cluster silent this long within a poll is reported unreachable


class FollowInput(CopyInput):
    known: str  # the digest of the status the manager holds ("": none)
    events: EventMark
    renew: bool
    lease_seconds: int
    seconds: int = WATCH_SECONDS
    move_on_drain: bool = False  # answer once the cluster is drained (its queue moves such jobs)


def _state(target: RemoteCopy, obj: dict[str, Any] | None) -> RemoteState:
    if obj is None:
        return RemoteState(cluster=target.cluster, generation=target.generation, found=False)
    status: dict[str, Any] = obj.get("status") or {}
    return RemoteState(
        cluster=target.cluster,
        generation=target.generation,
        found=True,
        phase=mirror.phase_of(status),
        status=status,
        resource_version=str(remote.meta(obj).get("resourceVersion", "")),
    )


def _renew(
    to: client.ApiClient,
    request: FollowInput,
    uid: str,
    read: datetime | None,
    written: datetime | None,
) -> datetime | None:
    """Push the lease on, fenced: only this very Job (uid), of this generation; the lease
    written (None: not, the Job changed under the test, or the lease ran out while this call
    waited for a thread: a process stopped past its lease writes none after)."""
    now = datetime.now(UTC)
    if lapsed(read, written, now):
        return None
    renewal = now + timedelta(seconds=request.lease_seconds)
    until = copies.stamp(renewal)
    patch = [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {
            "op": "test",
            "path": _annotation(GENERATION_ANNOTATION),
            "value": str(request.target.generation),
        },
        {"op": "add", "path": _annotation(LEASE_ANNOTATION), "value": until},
    ]
    cluster = request.target.cluster
    try:
        remote.call(
            cluster,
            f"renew the lease of job {request.namespace}/{request.name}",
            lambda: kube.unread(
                client.CustomObjectsApi(to).patch_namespaced_custom_object(
                    vcjob.GROUP,
                    vcjob.VERSION,
                    request.namespace,
                    remote.JOBS,
                    request.name,
                    patch,
                    _content_type="application/json-patch+json",
                    _preload_content=False,
                    _request_timeout=remote.TIMEOUT,
                )
            ),
            ok=errors.GONE_OK | frozenset({errors.CONFLICT}),
        )
    except ApplicationError as e:  # the Job changed under the test: the next read tells
        activity.logger.info("lease not renewed job=%s error=%s", request.name, e)
        return None
    return renewal.replace(microsecond=0)


def lapsed(read: datetime | None, written: datetime | None, now: datetime) -> bool:
    """The copy's lease has run out (the later of the one read and the one this poll wrote):
    its cluster may be aborting it this moment, so it is never pushed on again, and the
    answer's `lease_until` stays the one that ran out (a renewal after it would make the
    abort look like the job's own end)."""
    held = max((t for t in (read, written) if t is not None), default=None)
    return held is not None and held <= now


def _lease(obj: dict[str, Any]) -> datetime | None:
    return parse_time((remote.meta(obj).get("annotations") or {}).get(LEASE_ANNOTATION))


def _annotation(key: str) -> str:
    """The JSON pointer to an annotation (`/` and `~` escaped, RFC 6901)."""
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")


def _events(to: client.ApiClient, cluster: str, namespace: str, uid: str) -> list[RemoteEvent]:
    response: Any = remote.call(  # raw: _preload_content=False
        cluster,
        f"list events of the copy in {namespace}",
        lambda: client.CoreV1Api(to).list_namespaced_event(
            namespace,
            field_selector=f"involvedObject.uid={uid}",
            _preload_content=False,
            _request_timeout=remote.TIMEOUT,
        ),
    )
    items = json.loads(response.data).get("items") or []
    return [_event(e) for e in items]


def _event(obj: dict[str, Any]) -> RemoteEvent:
    meta = remote.meta(obj)
    when = obj.get("lastTimestamp") or obj.get("eventTime") or meta.get("creationTimestamp")
    kind = "Warning" if obj.get("type") == "Warning" else "Normal"
    return RemoteEvent(
        name=str(meta.get("name", "")),
        type=kind,
        reason=str(obj.get("reason") or ""),
        message=str(obj.get("message") or ""),
        last_seen=parse_time(when),
    )


@activity.defn(name="follow_copy")
async def follow_copy(request: FollowInput) -> Followed:
    """Follow the copy for up to `seconds`, renewing its lease a third of a lease apart;
    answer once its status differs from the one the manager holds, or it is gone, or its
    cluster has been silent for SILENT_SECONDS, or the time is up (with the Events it got
    meanwhile). The copy is read at the start, then only when the cluster's shared watch
    (`activities.copywatch`) shows it changed, or every POLL_SECONDS while that watch is not
    healthy. Async: a follower waiting holds no thread."""
    target = request.target
    key = (request.namespace, request.name)
    with copywatch.WATCHES.subscribe(target.cluster, key) as watch:
        return await _follow(request, watch)


async def _follow(request: FollowInput, watch: copywatch.Subscription) -> Followed:
    target = request.target
    answer = Followed(cluster=target.cluster, generation=target.generation)
    renew_every = max(1.0, request.lease_seconds / 3)
    poll = min(POLL_SECONDS, renew_every)
    start = time.monotonic()
    renewed = float("-inf")
    written: datetime | None = None  # the lease this poll last wrote
    silent_since: float | None = None
    to: client.ApiClient | None = None  # None: not had yet (one list of Secrets per poll)
    obj: dict[str, Any] | None = None  # the copy as last read
    read = True  # whether to read the copy on this round (always on the first)
    since: copywatch.Seen | None = None  # what the watch showed of the copy at the last read
    renewing = request.renew  # False once the lease has run out
    while True:
        activity.heartbeat()
        now = time.monotonic()
        try:
            if to is None:
                to = await asyncio.to_thread(remote.api, target.cluster)
            if read:
                since = watch.seen()
                obj = await asyncio.to_thread(
                    remote.read, to, target.cluster, request.namespace, request.name
                )
                if obj is not None and remote.whose(obj) != (request.origin, target.generation):
                    obj = None  # a Job of that name, but not this copy: the copy is gone
            uid = str(remote.meta(obj).get("uid", "")) if obj is not None else ""
            lease = _lease(obj) if obj is not None else None  # as read, before this renewal
            due = obj is not None and renewing and now - renewed >= renew_every
            if due and lapsed(lease, written, datetime.now(UTC)):
                renewing = False  # never pushed on again: only news or the poll's end is due
            elif due:
                renewal = await asyncio.to_thread(_renew, to, request, uid, lease, written)
                written = renewal or written
                renewed = now
            state = _state(target, obj)
            changed = not state.found or mirror.digest(state.status) != request.known
            drained = request.move_on_drain and await asyncio.to_thread(
                cluster_secrets.is_drained, target.cluster
            )
            if changed or drained or now - start >= request.seconds:
                found = (
                    await asyncio.to_thread(_events, to, target.cluster, request.namespace, uid)
                    if uid
                    else []
                )
                events, mark = mirror.new_events(found, request.events)
                update = {
                    "remote": state,
                    "events": events,
                    "mark": mark,
                    "lease_until": lease,
                    "drained": drained,
                }
                return answer.model_copy(update=update)
            silent_since = None
        except Unreachable as e:
            silent_since = now if silent_since is None else silent_since
            if now - silent_since >= SILENT_SECONDS:
                return answer.model_copy(update={"reachable": False, "error": str(e)})
            read = True
            await asyncio.sleep(1.0)  # try again soon: silence is news only once it lasts
            continue
        until = _next(start, renewed, renew_every, request.seconds, renewing)
        read = await _wait(request, watch, since, poll, until)


def _next(start: float, renewed: float, renew_every: float, seconds: int, renewing: bool) -> float:
    """The monotonic time of the next thing due without news: a renewal, or the poll's end.
    A lease that ran out is no renewal due: counting it would make every wait end at once."""
    end = start + seconds
    return min(end, renewed + renew_every) if renewing else end


async def _wait(
    request: FollowInput,
    watch: copywatch.Subscription,
    since: copywatch.Seen | None,
    poll: float,
    until: float,
) -> bool:
    """Wait for news of the copy; whether it must be read now. With a healthy watch, that is
    when it shows the copy other than at the last read (`since`) and other than the manager
    holds, checked on every ring and at least every `poll` (heartbeats, the watch's health);
    without one, every `poll`, as before the watch. `since` keeps a watch that lags behind a
    read from asking for the same read again and again."""
    origin, generation, known = request.origin, request.target.generation, request.known
    poll_at = time.monotonic() + poll
    # Every round of the poll gives the loop up at least once: an answer due at once must not
    # turn `_follow` into a loop that never awaits (it held a worker's whole event loop).
    await asyncio.sleep(0)
    while True:
        healthy = watch.healthy()
        if healthy and watch.news(since, origin, generation, known):
            # A worker's controller writes a new copy's status several times in a row: one
            # read after they settle is one answer (a status write, an Events list) for all.
            await asyncio.sleep(SETTLE_SECONDS)
            return True
        now = time.monotonic()
        if not healthy and now >= poll_at:
            return True
        if now >= until:
            return False
        await watch.wait(min(until, poll_at if not healthy else now + poll) - now)
        activity.heartbeat()
