"""The webhook's queue cache: answers from its watch, and reads afresh whenever a stale answer
could refuse a Job or PodGroup."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from kubernetes import client

from admission import rules
from admission.lookup import CachedLookup

pytestmark = pytest.mark.unit


class Fresh:
    """The apiserver as the fallback sees it; counts its reads."""

    def __init__(self, *queues: rules.QueueInfo) -> None:
        self.queues = {q.name: q for q in queues}
        self.reads: list[str] = []

    def get_queue(self, name: str) -> rules.QueueInfo | None:
        self.reads.append(name)
        return self.queues.get(name)

    def list_queues(self, fresh: bool = False) -> Sequence[rules.QueueInfo]:
        self.reads.append("*")
        return list(self.queues.values())


def queue(name: str, state: str | None = None, parent: str | None = None) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {"parent": parent} if parent else {},
        "status": {"state": state} if state else {},
    }


def test_before_the_first_list_every_answer_is_read_afresh() -> None:
    fresh = Fresh(rules.QueueInfo(name="default"))
    cache = CachedLookup(client.ApiClient(), fresh)
    assert cache.get_queue("default") == rules.QueueInfo(name="default")
    assert [q.name for q in cache.list_queues()] == ["default"]
    assert fresh.reads == ["default", "*"]


def test_an_open_queue_is_answered_from_the_watch() -> None:
    fresh = Fresh()
    cache = CachedLookup(client.ApiClient(), fresh)
    cache._listed([queue("default", "Open"), queue("child", parent="default")])
    assert cache.get_queue("default") == rules.QueueInfo(name="default", state="Open")
    assert cache.get_queue("child") == rules.QueueInfo(name="child", parent="default")
    assert sorted(q.name for q in cache.list_queues()) == ["child", "default"]
    assert fresh.reads == []


def test_a_queue_missing_or_closed_in_the_watch_is_read_afresh() -> None:
    # The watch has not yet seen `new` created nor `reopened` opened: neither is refused.
    fresh = Fresh(rules.QueueInfo(name="new"), rules.QueueInfo(name="reopened", state="Open"))
    cache = CachedLookup(client.ApiClient(), fresh)
    cache._listed([queue("reopened", "Closed")])
    assert cache.get_queue("new") == rules.QueueInfo(name="new")
    assert cache.get_queue("reopened") == rules.QueueInfo(name="reopened", state="Open")
    cache._seen("DELETED", queue("reopened", "Closed"))
    assert cache.get_queue("gone") is None
    assert fresh.reads == ["new", "reopened", "gone"]
