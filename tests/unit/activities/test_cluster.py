"""The scheduler's informer store: a list replaces it, watch events edit it, reads are copies."""

from __future__ import annotations

import pytest

from activities.cluster import ClusterCache, Store

pytestmark = pytest.mark.unit


def pod(name: str, rv: str, namespace: str = "a") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


def test_store_follows_lists_and_watch_events() -> None:
    store = Store()
    assert not store.synced.is_set()
    store.replace([pod("p", "1"), pod("p", "1", namespace="b"), pod("q", "1")])
    assert store.synced.is_set() and len(store.items()) == 3

    store.apply("MODIFIED", pod("p", "2"))
    store.apply("DELETED", pod("q", "3"))
    store.apply("ADDED", pod("r", "4"))
    seen = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in store.items()}
    assert sorted(seen) == [("a", "p"), ("a", "r"), ("b", "p")]
    assert seen["a", "p"]["metadata"]["resourceVersion"] == "2"

    # A relist after 410 drops what was deleted in the gap.
    store.replace([pod("r", "9")])
    assert [o["metadata"]["name"] for o in store.items()] == ["r"]


def test_a_read_is_not_changed_by_later_events() -> None:
    store = Store()
    store.replace([pod("p", "1")])
    before = store.items()
    store.apply("DELETED", pod("p", "2"))
    assert [o["metadata"]["name"] for o in before] == ["p"] and store.items() == []


def test_cache_reports_kinds_not_listed_yet() -> None:
    cache = ClusterCache({"nodes": lambda **_: None, "pods": lambda **_: None})
    assert cache.wait_synced(0.01) == ["nodes", "pods"]  # not started: nothing listed
