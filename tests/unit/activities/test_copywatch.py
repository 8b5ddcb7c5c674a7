"""The shared watch of dispatched copies: what it keeps of a Job, when a follower must read,
and whom it wakes. The watch's callbacks are driven by hand; no thread, no cluster."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes import client

from activities.dispatch import copywatch
from activities.dispatch.copywatch import ClusterWatch, Seen
from controllers.dispatch import mirror
from models.dispatch import GENERATION_ANNOTATION, ORIGIN_ANNOTATION

RUNNING = {"state": {"phase": "Running"}}
PENDING = {"state": {"phase": "Pending"}}


def _job(
    name: str = "a", origin: str = "uid-1", generation: int = 1, status: Any = None
) -> dict[str, Any]:
    annotations = {ORIGIN_ANNOTATION: origin, GENERATION_ANNOTATION: str(generation)}
    meta = {"namespace": "ns", "name": name, "annotations": annotations if origin else {}}
    return {"metadata": meta, "status": status or {}}


def _seen(status: Any, generation: int = 1) -> Seen:
    return Seen(origin="uid-1", generation=generation, digest=mirror.digest(status))


def test_seen_copy_keeps_owner_and_status_digest() -> None:
    assert copywatch.seen(_job(status=RUNNING)) == (("ns", "a"), _seen(RUNNING))


def test_seen_job_without_origin_is_not_a_copy() -> None:
    assert copywatch.seen(_job(origin="")) is None


NEWS = [
    pytest.param(_seen(PENDING), _seen(PENDING), False, id="same-as-last-read"),
    pytest.param(_seen(RUNNING), _seen(PENDING), True, id="status-changed"),
    pytest.param(_seen(PENDING), None, False, id="first-seen-as-manager-holds"),
    pytest.param(None, _seen(PENDING), True, id="gone"),
    pytest.param(None, None, False, id="never-seen-already-read"),
    pytest.param(_seen(PENDING, generation=2), _seen(PENDING), True, id="other-generation"),
]


@pytest.mark.parametrize(("found", "since", "read"), NEWS)
def test_news_reads_only_what_the_manager_does_not_hold(
    found: Seen | None, since: Seen | None, read: bool
) -> None:
    known = mirror.digest(PENDING)
    assert copywatch.news(found, since, "uid-1", 1, known) is read


def _unused_api(cluster: str) -> client.ApiClient:
    raise AssertionError(f"no call expected to {cluster}")


async def test_watch_rings_only_the_followers_of_the_changed_copy() -> None:
    watch = ClusterWatch("w0", api=_unused_api)
    loop = asyncio.get_running_loop()
    a, b = copywatch._Follower(loop), copywatch._Follower(loop)
    watch.follow(("ns", "a"), a)
    watch.follow(("ns", "b"), b)
    assert not watch.healthy()  # not listed yet: followers read
    watch._on_list([_job("a", status=PENDING), _job("other", origin="")])
    await asyncio.sleep(0)
    assert watch.healthy()
    assert a.rung.is_set() and b.rung.is_set()  # a list may hold news for anyone
    a.rung.clear()
    b.rung.clear()
    watch._on_event("MODIFIED", _job("a", status=RUNNING))
    await asyncio.sleep(0)
    assert a.rung.is_set() and not b.rung.is_set()
    assert watch.get(("ns", "a")) == _seen(RUNNING)
    watch._on_event("DELETED", _job("a", status=RUNNING))
    assert watch.get(("ns", "a")) is None


async def test_watch_failing_rings_everyone_and_is_not_trusted() -> None:
    def failing(cluster: str) -> client.ApiClient:
        raise OSError(f"cluster {cluster}: connection refused")

    watch = ClusterWatch("w0", api=failing)
    follower = copywatch._Follower(asyncio.get_running_loop())
    watch.follow(("ns", "a"), follower)
    watch._on_list([])
    with pytest.raises(OSError, match="connection refused"):
        watch._call(watch=True)
    await asyncio.sleep(0)
    assert follower.rung.is_set()
    assert not watch.healthy()
