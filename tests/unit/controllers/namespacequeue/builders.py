"""NamespaceQueues and Queues for the core's tables, a few words each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from models.namespacequeue import NamespaceQueue
from models.scheduling import Queue

T0 = datetime(2026, 7, 10, tzinfo=UTC)


def nq(
    name: str,
    parent: str | None = None,
    namespace: str = "team-a",
    age: int = 0,  # seconds after T0 it was made: siblings are taken in that order
    capability: dict[str, Any] | None = None,
    deserved: dict[str, Any] | None = None,
    guarantee: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> NamespaceQueue:
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["parent"] = parent
    if capability is not None:
        spec["capability"] = capability
    if deserved is not None:
        spec["deserved"] = deserved
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee}
    made = (T0 + timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {
        "name": name,
        "namespace": namespace,
        "uid": f"u-{namespace}-{name}",
        "generation": 1,
        "creationTimestamp": made,
    }
    body: dict[str, Any] = {"metadata": meta, "spec": spec}
    if status is not None:
        body["status"] = status
    return NamespaceQueue.model_validate(body)


def queue(
    name: str,
    allowed: list[str] | None = None,
    parent: str | None = None,
    age: int = 0,
    capability: dict[str, Any] | None = None,
    deserved: dict[str, Any] | None = None,
    guarantee: dict[str, Any] | None = None,
) -> Queue:
    spec: dict[str, Any] = {}
    if allowed is not None:
        spec["allowedNamespaces"] = allowed
    if parent is not None:
        spec["parent"] = parent
    if capability is not None:
        spec["capability"] = capability
    if deserved is not None:
        spec["deserved"] = deserved
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee}
    made = (T0 + timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"name": name, "uid": f"u-{name}", "creationTimestamp": made}
    return Queue.model_validate({"metadata": meta, "spec": spec})


def with_parent(queue: NamespaceQueue, parent: str) -> NamespaceQueue:
    """A parent the model's pattern would refuse (an object stored before the CRD said so)."""
    spec = queue.spec.model_copy(update={"parent": parent})
    return queue.model_copy(update={"spec": spec})
