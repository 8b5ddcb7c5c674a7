"""The webhook's queue cache: answers from its watch, and reads afresh whenever a stale answer
could refuse a Job or PodGroup."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from kubernetes import client

from admission import reads, rules
from admission.lookup import ApiLookup, CachedLookup

pytestmark = pytest.mark.unit


class Fresh:
    """The apiserver as the fallback sees it; counts its reads."""

    def __init__(
        self, *queues: rules.QueueInfo, local: Sequence[reads.NamespaceQueueInfo] = ()
    ) -> None:
        self.queues = {q.name: q for q in queues}
        self.namespace_queues = list(local)
        self.reads: list[str] = []

    def get_queue(self, name: str) -> rules.QueueInfo | None:
        self.reads.append(name)
        return self.queues.get(name)

    def list_queues(self, fresh: bool = False) -> Sequence[rules.QueueInfo]:
        self.reads.append("*")
        return list(self.queues.values())

    def get_namespace_queue(self, namespace: str, name: str) -> reads.NamespaceQueueInfo | None:
        self.reads.append(f"{namespace}/{name}")
        return next(
            (q for q in self.namespace_queues if (q.namespace, q.name) == (namespace, name)), None
        )

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> Sequence[reads.NamespaceQueueInfo]:
        self.reads.append(f"{namespace}/*")
        return [q for q in self.namespace_queues if namespace in (None, q.namespace)]

    def list_podgroups(self, namespace: str) -> Sequence[reads.PodGroupInfo]:
        self.reads.append(f"pg:{namespace}")
        return [reads.PodGroupInfo("pg")]


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


def namespace_queue(
    namespace: str, name: str, state: str | None = None, authorized: str | None = None
) -> dict[str, object]:
    conditions = [{"type": "Authorized", "status": authorized}] if authorized else []
    return {
        "metadata": {"name": name, "namespace": namespace},
        "status": {"state": state, "conditions": conditions} if state else {},
    }


def test_an_open_namespace_queue_is_answered_from_the_watch() -> None:
    fresh = Fresh()
    cache = CachedLookup(client.ApiClient(), fresh)
    cache._nq_listed([namespace_queue("a", "q", "Open"), namespace_queue("b", "q")])
    assert cache.get_namespace_queue("a", "q") == reads.NamespaceQueueInfo("a", "q", state="Open")
    assert [q.namespace for q in cache.list_namespace_queues("b")] == ["b"]
    assert sorted(q.namespace for q in cache.list_namespace_queues(None)) == ["a", "b"]
    assert fresh.reads == []


def test_a_namespace_queue_missing_closing_or_unauthorized_in_the_watch_is_read_afresh() -> None:
    opened = reads.NamespaceQueueInfo("a", "closing", state="Open")
    fresh = Fresh(local=[opened])
    cache = CachedLookup(client.ApiClient(), fresh)
    cache._nq_listed(
        [namespace_queue("a", "closing", "Closing"), namespace_queue("a", "out", "Open", "False")]
    )
    assert cache.get_namespace_queue("a", "closing") == opened
    assert cache.get_namespace_queue("a", "out") is None
    assert cache.get_namespace_queue("a", "new") is None
    cache._nq_seen("DELETED", namespace_queue("a", "closing"))
    assert cache.list_namespace_queues("a", fresh=True) == [opened]
    assert [pg.name for pg in cache.list_podgroups("a")] == ["pg"]
    assert fresh.reads == ["a/closing", "a/out", "a/new", "a/*", "pg:a"]


def test_before_the_first_list_of_namespace_queues_every_answer_is_read_afresh() -> None:
    fresh = Fresh(local=[reads.NamespaceQueueInfo("a", "q")])
    cache = CachedLookup(client.ApiClient(), fresh)
    cache._listed([])  # the queues' watch has synced, the NamespaceQueues' has not
    assert [q.name for q in cache.list_namespace_queues("a")] == ["q"]
    assert fresh.reads == ["a/*"]


class Custom:
    """The CustomObjectsApi calls ApiLookup makes, answered from a dict (a missing kind: 404)."""

    def __init__(self, served: dict[str, list[dict[str, object]]]) -> None:
        self.served = served

    def _items(self, plural: str) -> dict[str, object]:
        if plural not in self.served:
            raise client.ApiException(status=404, reason="Not Found")
        return {"items": self.served[plural]}

    def list_cluster_custom_object(
        self, group: str, version: str, plural: str, **_: object
    ) -> object:
        return self._items(plural)

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **_: object
    ) -> object:
        return self._items(plural)

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **_: object
    ) -> object:
        for item in self.served.get(plural, []):
            if item["metadata"] == {"name": name, "namespace": namespace}:  # type: ignore[index]
                return item
        raise client.ApiException(status=404, reason="Not Found")


def _api_lookup(served: dict[str, list[dict[str, object]]]) -> ApiLookup:
    found = ApiLookup(client.ApiClient())
    found._custom = Custom(served)  # type: ignore[assignment]
    return found


def test_the_apiserver_is_read_for_namespace_queues_and_podgroups() -> None:
    nq = {"metadata": {"name": "q", "namespace": "a"}, "spec": {"parent": "cluster/x"}}
    pg = {
        "metadata": {"name": "pg"},
        "spec": {"queue": "namespace/q"},
        "status": {"phase": "Running"},
    }
    found = _api_lookup({"namespacequeues": [nq], "podgroups": [pg]})
    assert found.get_namespace_queue("a", "q") == reads.NamespaceQueueInfo("a", "q", "cluster/x")
    assert found.get_namespace_queue("a", "nope") is None
    assert found.list_namespace_queues(None) == [reads.NamespaceQueueInfo("a", "q", "cluster/x")]
    assert found.list_podgroups("a") == [reads.PodGroupInfo("pg", "namespace/q", "Running")]


def test_a_cluster_without_the_namespace_queue_crd_holds_none() -> None:
    found = _api_lookup({})
    assert found.list_namespace_queues(None) == []
    assert found.list_namespace_queues("a") == []
    assert found.get_namespace_queue("a", "q") is None
