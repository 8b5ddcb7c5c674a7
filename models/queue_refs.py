"""Queue references: how a name in a workload or a NamespaceQueue's parent finds its queue.

Volcano's NamespaceQueue design (docs/design/namespace-queue.md) gives one grammar to the
admission webhook, the NamespaceQueue controller and the scheduler, so they never disagree:

- a workload's queue (a Job's `spec.queue`, a PodGroup's `spec.queue`, the queue-name
  annotation): `<name>` is the cluster Queue `<name>`; `namespace/<name>` is the
  NamespaceQueue `<name>` in the workload's own namespace (`namespace/` names the kind of
  queue, not a namespace: no reference crosses namespaces);
- a NamespaceQueue's `spec.parent`: `<name>` is a NamespaceQueue in the same namespace,
  `cluster/<name>` a cluster Queue, empty the cluster Queue `default`; `cluster/root` is
  refused (the root is the scheduler's, not a tenant's).

Each resolves to a `QueueTarget` whose `id` is the queue's one name in the scheduler, in
metrics and in status: `<name>` for a cluster Queue, `<namespace>/<name>` for a
NamespaceQueue. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from models.scheduling import DEFAULT_QUEUE, ROOT_QUEUE

CLUSTER_PREFIX: Final = "cluster/"
NAMESPACE_PREFIX: Final = "namespace/"
DEFAULT_PARENT: Final = f"{CLUSTER_PREFIX}{DEFAULT_QUEUE}"
ANY_NAMESPACE: Final = "*"  # in a Queue's allowedNamespaces: every namespace
# A queue's own name: a DNS-1123 subdomain (a Queue's and a NamespaceQueue's metadata.name).
_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_MAX: Final = 253


class Scope(StrEnum):
    CLUSTER = "cluster"
    NAMESPACE = "namespace"


class Reason(StrEnum):
    """Why a reference resolves to nothing; the NamespaceQueue's condition reasons."""

    INVALID = "InvalidParentReference"
    ROOT = "RootParentForbidden"


class BadReference(ValueError):
    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class QueueTarget:
    scope: Scope
    name: str
    namespace: str = ""  # "" for a cluster Queue

    @property
    def id(self) -> str:
        """The canonical queue id: `<name>`, or `<namespace>/<name>` for a NamespaceQueue."""
        return namespace_queue_id(self.namespace, self.name) if self.namespaced else self.name

    @property
    def namespaced(self) -> bool:
        return self.scope is Scope.NAMESPACE

    @property
    def reference(self) -> str:
        """How a NamespaceQueue's `spec.parent` names this target."""
        return self.name if self.namespaced else f"{CLUSTER_PREFIX}{self.name}"


def namespace_queue_id(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def cluster(name: str) -> QueueTarget:
    return QueueTarget(Scope.CLUSTER, name)


def _checked_name(name: str, what: str) -> str:
    if not name or len(name) > _NAME_MAX or not _NAME.match(name):
        raise BadReference(
            Reason.INVALID, f"{what} {name!r} is not a valid queue name (a DNS-1123 subdomain)"
        )
    return name


def parent(namespace: str, reference: str | None) -> QueueTarget:
    """The queue a NamespaceQueue in `namespace` hangs under; BadReference if none can."""
    ref = reference or DEFAULT_PARENT
    if ref.startswith(CLUSTER_PREFIX):
        name = _checked_name(ref.removeprefix(CLUSTER_PREFIX), "parent")
        if name == ROOT_QUEUE:
            raise BadReference(
                Reason.ROOT, "parent cluster/root is the scheduler's: name a queue below it"
            )
        return cluster(name)
    if "/" in ref:
        raise BadReference(
            Reason.INVALID,
            f"parent {ref!r}: a NamespaceQueue in the same namespace is <name>, a cluster "
            "Queue cluster/<name>; no other namespace can be named",
        )
    return QueueTarget(Scope.NAMESPACE, _checked_name(ref, "parent"), namespace)


def workload(namespace: str, reference: str | None) -> QueueTarget:
    """The queue a workload in `namespace` names (None or "": the `default` Queue)."""
    ref = reference or DEFAULT_QUEUE
    if ref.startswith(NAMESPACE_PREFIX):
        name = _checked_name(ref.removeprefix(NAMESPACE_PREFIX), "queue")
        return QueueTarget(Scope.NAMESPACE, name, namespace)
    if "/" in ref:
        raise BadReference(
            Reason.INVALID,
            f"queue {ref!r}: a cluster Queue is <name>, a NamespaceQueue of the workload's "
            "namespace namespace/<name>; no other namespace can be named",
        )
    return cluster(_checked_name(ref, "queue"))


def workload_id(namespace: str, reference: str | None) -> str | None:
    """The canonical id of the queue a workload names; None when the reference is malformed
    (the workload then waits in no queue: it never falls back to another)."""
    try:
        return workload(namespace, reference).id
    except BadReference:
        return None


def authorizes(allowed: Sequence[str] | None, namespace: str) -> bool:
    """Whether a Queue's `allowedNamespaces` lets NamespaceQueues of `namespace` attach (empty
    or absent: none may)."""
    if not allowed:
        return False
    return ANY_NAMESPACE in allowed or namespace in allowed
