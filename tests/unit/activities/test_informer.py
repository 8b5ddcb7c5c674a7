"""The scheduler's informer store: a list replaces it, watch events edit it, reads are copies."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from activities.messages import Arrivals
from activities.scheduler import informer
from activities.scheduler.informer import ClusterCache, Store
from service import reflector

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


def waiting_pod(name: str, scheduler: str = "volcano") -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "a", "resourceVersion": "1"},
        "spec": {"schedulerName": scheduler},
        "status": {"phase": "Pending"},
    }


def _cache() -> tuple[ClusterCache, dict[str, object]]:
    calls = {"pods": lambda **_: None, "podgroups": lambda **_: None, "nodes": lambda **_: None}
    cache = ClusterCache(calls)
    return cache, {r.kind: r for r in cache._reflectors}


def _event(
    cache: ClusterCache, kind: str, type_: reflector.WatchType, obj: dict[str, object]
) -> None:
    cache._applier(kind)(type_, obj)  # what the reflector thread calls


def test_a_waiting_session_goes_on_when_a_pod_arrives_for_its_scheduler() -> None:
    cache, _ = _cache()
    since = cache.arrivals("volcano")
    _event(cache, "pods", "ADDED", waiting_pod("other", scheduler="default-scheduler"))
    assert cache.wait_for_work("volcano", since, 0.05, lambda: None) is False
    beats: list[int] = []
    timer = threading.Timer(0.1, _event, (cache, "pods", "ADDED", waiting_pod("p")))
    timer.start()
    assert cache.wait_for_work("volcano", since, 10.0, lambda: beats.append(1)) is True
    assert cache.arrivals("volcano").count == since.count + 1
    # One that arrived before the wait began, after the mark, is not missed.
    _event(cache, "podgroups", "ADDED", {"metadata": {"name": "g", "namespace": "a"}})
    assert cache.wait_for_work("volcano", cache.arrivals("volcano"), 0.01, lambda: None) is False
    assert cache.wait_for_work("volcano", since, 0.01, lambda: None) is True


def test_a_mark_from_another_worker_counts_arrivals_from_now() -> None:
    cache, _ = _cache()
    _event(cache, "pods", "ADDED", waiting_pod("p"))
    elsewhere = Arrivals(token="another worker", count=0)
    # The arrival above predates the wait: only later ones end it.
    assert cache.wait_for_work("volcano", elsewhere, 0.05, lambda: None) is False
    assert cache.has("nodes", "/n1") is None  # nodes not listed yet: it cannot say


def _not_served(**_: object) -> None:
    raise ApiException(status=404, reason="Not Found")


def test_a_kind_the_apiserver_does_not_serve_counts_as_listed_and_empty() -> None:
    """resource.k8s.io/v1 on a cluster older than 1.34: the session must not wait for it."""
    watched: list[dict[str, object]] = []
    watching = threading.Event()

    def slices(**kwargs: object) -> None:
        if kwargs.get("watch"):
            watched.append(kwargs)
            watching.set()
        _not_served()

    cache = ClusterCache({"slices": reflector.optional("slices", slices)})
    cache.start()
    try:
        assert cache.wait_synced(10.0) == []
        assert cache.read() == {"slices": []}
        assert cache.has("slices", "/s") is False
        # Then it watches from now: an idle stream until the server's timeout, or stop.
        assert watching.wait(10.0)
        assert watched[0]["resource_version"] == ""
    finally:
        cache.stop()
    assert not any(r._thread.is_alive() for r in cache._reflectors), "stop ends the idle watch"


def test_other_errors_of_an_optional_kind_are_not_taken_for_an_empty_list() -> None:
    def forbidden(**_: object) -> None:
        raise ApiException(status=403, reason="Forbidden")

    with pytest.raises(ApiException):
        reflector.optional("slices", forbidden)(limit=1)


def test_an_idle_watch_ends_at_the_servers_timeout() -> None:
    idle = reflector.optional("slices", _not_served)(watch=True, timeout_seconds=0)
    assert list(idle.stream(amt=None, decode_content=False)) == []
    idle.close()
    idle.release_conn()


def test_the_cache_lists_the_dra_kinds_and_namespace_queues() -> None:
    calls = informer._calls(client.ApiClient())
    assert {"slices", "deviceclasses", "resourceclaims", "namespacequeues"} <= set(calls)
