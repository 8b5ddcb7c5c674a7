"""NamespaceQueue side effects: read what its conditions depend on, write its status.

The read lists every NamespaceQueue and every cluster Queue (two requests: the objects are few,
and a queue attached to a cluster Queue has siblings in other namespaces) and keeps only what
the core needs (`hierarchy.select`), so the workflow's history holds the few specs that matter.
The status write is a merge patch of the status subresource with the fields the controller
owns (state, conditions, counters): `allocated` and `reservation` are the scheduler's.

RBAC: get/list namespacequeues and queues, patch namespacequeues/status.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio import activity

from activities import errors, kube
from activities.messages import Done, Message
from controllers.namespacequeue import hierarchy
from models import namespacequeue, scheduling
from models.namespacequeue import NamespaceQueue
from models.scheduling import Queue

_QUEUES = "queues"
M = TypeVar("M", bound=BaseModel)


class SurroundingsInput(Message):
    namespace: str
    name: str


class NamespaceQueueStatusInput(Message):
    namespace: str
    name: str
    status: dict[str, Any]


def _parsed(model: type[M], items: Iterable[Any], what: str) -> list[M]:
    """The items that are `model`s; one that is not is left out, logged (it has no spec the
    controller could read: as if absent)."""
    out: list[M] = []
    for item in items:
        try:
            out.append(model.model_validate(item))
        except ValidationError as e:
            name = (item.get("metadata") or {}).get("name") if isinstance(item, dict) else None
            activity.logger.warning("%s %s left out, not readable: %s", what, name, e)
    return out


def _list(plural: str) -> list[Any]:
    found: Any = None
    with errors.kube_call(f"list {plural}"):
        found = kube.custom().list_cluster_custom_object(
            scheduling.GROUP, scheduling.VERSION, plural
        )
    items: list[Any] = (found or {}).get("items") or []
    return items


@activity.defn(name="read_namespace_queue_surroundings")
def read_namespace_queue_surroundings(request: SurroundingsInput) -> hierarchy.Surroundings:
    nqs = _parsed(NamespaceQueue, _list(namespacequeue.PLURAL), namespacequeue.KIND)
    queues = _parsed(Queue, _list(_QUEUES), "Queue")
    return hierarchy.select(request.namespace, request.name, nqs, queues)


@activity.defn(name="write_namespace_queue_status")
def write_namespace_queue_status(request: NamespaceQueueStatusInput) -> Done:
    what = f"write status of NamespaceQueue {request.namespace}/{request.name}"
    with errors.kube_call(what, ok=errors.GONE_OK):
        kube.custom().patch_namespaced_custom_object_status(
            scheduling.GROUP,
            scheduling.VERSION,
            request.namespace,
            namespacequeue.PLURAL,
            request.name,
            {"status": request.status},
            _content_type="application/merge-patch+json",
        )
    return Done()
