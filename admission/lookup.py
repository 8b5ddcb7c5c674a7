"""The webhook's reads of Queues, NamespaceQueues and PodGroups, from the apiserver with the
official `kubernetes` client.

The only module of `admission/` that imports the client and meets its errors: a missing
queue (404) is an answer (`None`); any other failure becomes `LookupFailed`, and the server
refuses the request with it, because an object that cannot be checked is not admitted (the
registration's `failurePolicy: Fail` says the same when the webhook cannot be reached).

`CachedLookup` answers from a watch of the queues, as Volcano's lister does, so a Job or
PodGroup costs the apiserver no read. It never refuses from a stale answer: a queue it does not
hold, or holds as not Open, is read afresh before the rules see it, so a queue created or opened
a moment ago is admitted at once. What can lag (by the watch's delay) is a queue closed or
given its first child a moment ago, as with Volcano. NamespaceQueues are watched the same way
(a cluster without their CRD lists none); PodGroups are read afresh, and only when a
NamespaceQueue is deleted.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

import urllib3
from kubernetes import client

from admission import reads, rules
from models import namespacequeue, scheduling
from service import reflector
from service.kube import new_api as new_api  # re-exported: one kubeconfig rule

PLURAL: Final = "queues"
NQ_PLURAL: Final = namespacequeue.PLURAL
PODGROUPS: Final = "podgroups"
# The apiserver gives the webhook `timeoutSeconds` (5) in all; a parent walk makes a few reads.
TIMEOUT: Final = 2.0  # seconds per read


class LookupFailed(RuntimeError):
    """The apiserver did not answer a queue read; the message says which read and why."""


@contextmanager
def _reading(what: str) -> Iterator[None]:
    try:
        yield
    except client.ApiException as e:
        raise LookupFailed(f"could not {what}: {e.status} {e.reason}") from e
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise LookupFailed(f"could not {what}: {e}") from e


class ApiLookup:
    """`rules.Lookup` over the apiserver; safe to share between request threads."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def get_queue(self, name: str) -> rules.QueueInfo | None:  # None: no such queue
        with _reading(f"read queue {name!r}"):
            try:
                obj = self._custom.get_cluster_custom_object(
                    scheduling.GROUP, scheduling.VERSION, PLURAL, name, _request_timeout=TIMEOUT
                )
            except client.ApiException as e:
                if e.status == 404:
                    return None
                raise
        return rules.queue_info(_mapping(obj, f"queue {name!r}"))

    def list_queues(self, fresh: bool = False) -> list[rules.QueueInfo]:
        del fresh  # every answer here is fresh
        with _reading("list queues"):
            listed = self._custom.list_cluster_custom_object(
                scheduling.GROUP, scheduling.VERSION, PLURAL, _request_timeout=TIMEOUT
            )
        items = _mapping(listed, "the queue list").get("items")
        if not isinstance(items, list):
            raise LookupFailed("could not list queues: the answer has no items")
        return [rules.queue_info(_mapping(item, "a listed queue")) for item in items]

    def get_namespace_queue(self, namespace: str, name: str) -> reads.NamespaceQueueInfo | None:
        with _reading(f"read NamespaceQueue {namespace}/{name}"):
            try:
                obj = self._custom.get_namespaced_custom_object(
                    scheduling.GROUP,
                    scheduling.VERSION,
                    namespace,
                    NQ_PLURAL,
                    name,
                    _request_timeout=TIMEOUT,
                )
            except client.ApiException as e:
                if e.status == 404:
                    return None
                raise
        return reads.namespace_queue_info(_mapping(obj, f"NamespaceQueue {namespace}/{name}"))

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> list[reads.NamespaceQueueInfo]:
        del fresh  # every answer here is fresh
        with _reading("list NamespaceQueues"):
            try:
                if namespace is None:
                    listed = self._custom.list_cluster_custom_object(
                        scheduling.GROUP, scheduling.VERSION, NQ_PLURAL, _request_timeout=TIMEOUT
                    )
                else:
                    listed = self._custom.list_namespaced_custom_object(
                        scheduling.GROUP,
                        scheduling.VERSION,
                        namespace,
                        NQ_PLURAL,
                        _request_timeout=TIMEOUT,
                    )
            except client.ApiException as e:
                if e.status == 404:  # a cluster without the CRD holds none
                    return []
                raise
        return [reads.namespace_queue_info(item) for item in _items(listed, "NamespaceQueues")]

    def list_podgroups(self, namespace: str) -> list[reads.PodGroupInfo]:
        with _reading(f"list the PodGroups of {namespace}"):
            listed = self._custom.list_namespaced_custom_object(
                scheduling.GROUP,
                scheduling.VERSION,
                namespace,
                PODGROUPS,
                _request_timeout=TIMEOUT,
            )
        return [reads.podgroup_info(item) for item in _items(listed, "PodGroups")]


class CachedLookup:
    """`rules.Lookup` from watches of the queues and NamespaceQueues, falling back to `fresh`
    for every answer the watch could hold stale (no such queue, not Open, not authorized) and
    until the first list has arrived; PodGroups are always read from `fresh`."""

    def __init__(self, api: client.ApiClient, fresh: rules.Lookup) -> None:
        self._fresh = fresh
        self._lock = threading.Lock()
        self._queues: dict[str, rules.QueueInfo] = {}
        self._synced = threading.Event()
        custom = client.CustomObjectsApi(api)
        call = functools.partial(
            custom.list_cluster_custom_object, scheduling.GROUP, scheduling.VERSION, PLURAL
        )
        self._reflector = reflector.Reflector("webhook-queues", call, self._listed, self._seen)
        self._namespace_queues: dict[tuple[str, str], reads.NamespaceQueueInfo] = {}
        self._nq_synced = threading.Event()
        nq_call = functools.partial(
            custom.list_cluster_custom_object, scheduling.GROUP, scheduling.VERSION, NQ_PLURAL
        )
        self._nq_reflector = reflector.Reflector(
            "webhook-namespacequeues",
            reflector.optional(NQ_PLURAL, nq_call),
            self._nq_listed,
            self._nq_seen,
        )

    def start(self) -> None:
        self._reflector.start()
        self._nq_reflector.start()

    def stop(self) -> None:
        self._reflector.stop()
        self._nq_reflector.stop()

    def _listed(self, objects: list[reflector.Obj]) -> None:
        queues = {q.name: q for q in map(rules.queue_info, objects)}
        with self._lock:
            self._queues = queues
        self._synced.set()

    def _seen(self, type_: reflector.WatchType, obj: reflector.Obj) -> None:
        queue = rules.queue_info(obj)
        with self._lock:
            if type_ == "DELETED":
                self._queues.pop(queue.name, None)
            else:
                self._queues[queue.name] = queue

    def _nq_listed(self, objects: list[reflector.Obj]) -> None:
        held = {(q.namespace, q.name): q for q in map(reads.namespace_queue_info, objects)}
        with self._lock:
            self._namespace_queues = held
        self._nq_synced.set()

    def _nq_seen(self, type_: reflector.WatchType, obj: reflector.Obj) -> None:
        queue = reads.namespace_queue_info(obj)
        with self._lock:
            if type_ == "DELETED":
                self._namespace_queues.pop((queue.namespace, queue.name), None)
            else:
                self._namespace_queues[(queue.namespace, queue.name)] = queue

    def get_queue(self, name: str) -> rules.QueueInfo | None:
        with self._lock:
            held = self._queues.get(name) if self._synced.is_set() else None
        if held is not None and (held.state or rules.OPEN) == rules.OPEN:
            return held
        return self._fresh.get_queue(name)  # a refusal is decided on a fresh read only

    def list_queues(self, fresh: bool = False) -> list[rules.QueueInfo]:
        if fresh or not self._synced.is_set():
            return list(self._fresh.list_queues())
        with self._lock:
            return list(self._queues.values())

    def get_namespace_queue(self, namespace: str, name: str) -> reads.NamespaceQueueInfo | None:
        with self._lock:
            synced = self._nq_synced.is_set()
            held = self._namespace_queues.get((namespace, name)) if synced else None
        if held is not None and (held.state or rules.OPEN) == rules.OPEN and not held.unauthorized:
            return held
        return self._fresh.get_namespace_queue(namespace, name)  # refused on a fresh read only

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> list[reads.NamespaceQueueInfo]:
        if fresh or not self._nq_synced.is_set():
            return list(self._fresh.list_namespace_queues(namespace, fresh=True))
        with self._lock:
            held = list(self._namespace_queues.values())
        return [q for q in held if namespace is None or q.namespace == namespace]

    def list_podgroups(self, namespace: str) -> list[reads.PodGroupInfo]:
        return list(self._fresh.list_podgroups(namespace))


def _items(listed: object, what: str) -> list[Mapping[str, object]]:
    items = _mapping(listed, f"the {what} list").get("items")
    if not isinstance(items, list):
        raise LookupFailed(f"could not list {what}: the answer has no items")
    return [_mapping(item, f"a listed {what}") for item in items]


def _mapping(value: object, what: str) -> Mapping[str, object]:
    """The client returns `object` for custom resources; anything but a JSON object is an error."""
    if not isinstance(value, Mapping):
        raise LookupFailed(f"{what} is not a JSON object")
    return value
