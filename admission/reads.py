"""What the admission rules read of the cluster: queues, NamespaceQueues and PodGroups, each
reduced to the few fields a rule looks at, and the `Lookup` that reads them.

Pure: the readers are plain functions of a stored object (camelCase JSON as the apiserver sends
it), and `Lookup` is a protocol the server backs with the apiserver (`admission.lookup`) and the
tests with a list. A malformed object yields empty fields, never an exception: the rules decide
about what is there, and the CRD schema has refused what cannot be there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from admission import queueresources
from models.namespacequeue import ConditionType


@dataclass(frozen=True)
class QueueInfo:
    """What the rules need to know of a stored cluster Queue."""

    name: str
    parent: str | None = None  # None: no spec.parent, hangs under root
    state: str | None = None  # None: no status.state yet, which reads as Open
    shares: queueresources.Shares = field(
        default_factory=queueresources.Shares
    )  # guarantee, deserved, capability
    hierarchy: str = ""  # its `volcano.sh/hierarchy` path as Volcano stores it; "": none
    allowed_namespaces: tuple[str, ...] = ()  # spec.allowedNamespaces; (): no NamespaceQueue


@dataclass(frozen=True)
class NamespaceQueueInfo:
    """What the rules need to know of a stored NamespaceQueue."""

    namespace: str
    name: str
    parent: str | None = None  # None: no spec.parent, which resolves to cluster/default
    state: str | None = None  # None: not reconciled yet, which reads as Open
    # The Authorized condition's message when its status is "False"; None: authorized, or not
    # reconciled yet (admission then checked the parent when the queue was written).
    unauthorized: str | None = None
    shares: queueresources.Shares = field(default_factory=queueresources.Shares)


@dataclass(frozen=True)
class PodGroupInfo:
    """What a NamespaceQueue's deletion needs to know of a stored PodGroup."""

    name: str
    queue: str | None = None  # None: no spec.queue, the `default` Queue
    phase: str | None = None  # None: no status.phase yet (Pending)


class Lookup(Protocol):
    """Reads of the cluster's queues and PodGroups; the server backs it with the apiserver."""

    def get_queue(self, name: str) -> QueueInfo | None:  # None: no such queue
        ...

    def list_queues(self, fresh: bool = False) -> Sequence[QueueInfo]:
        """Every queue; `fresh`: read afresh, not from a watch that may lag."""
        ...

    def get_namespace_queue(
        self, namespace: str, name: str
    ) -> NamespaceQueueInfo | None:  # None: no such NamespaceQueue
        ...

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> Sequence[NamespaceQueueInfo]:
        """The NamespaceQueues of `namespace` (None: of every namespace); `fresh` as above."""
        ...

    def list_podgroups(self, namespace: str) -> Sequence[PodGroupInfo]:
        """The PodGroups of `namespace`, always read afresh (only a deletion asks)."""
        ...


def namespace_queue_info(obj: Mapping[str, object]) -> NamespaceQueueInfo:
    """A stored NamespaceQueue reduced to what the rules read (absent fields stay None)."""
    unauthorized = None
    for condition in _list(obj, "status", "conditions"):
        if text(condition, "type") == ConditionType.AUTHORIZED and (
            text(condition, "status") == "False"
        ):
            unauthorized = text(condition, "message") or text(condition, "reason") or "False"
    return NamespaceQueueInfo(
        namespace=text(obj, "metadata", "namespace"),
        name=text(obj, "metadata", "name"),
        parent=text(obj, "spec", "parent") or None,
        state=text(obj, "status", "state") or None,
        unauthorized=unauthorized,
        shares=queueresources.shares(mapping(obj, "spec")),
    )


def podgroup_info(obj: Mapping[str, object]) -> PodGroupInfo:
    return PodGroupInfo(
        name=text(obj, "metadata", "name"),
        queue=text(obj, "spec", "queue") or None,
        phase=text(obj, "status", "phase") or None,
    )


def allowed_namespaces(spec: Mapping[str, object]) -> tuple[str, ...]:
    """A Queue's spec.allowedNamespaces; entries that are not strings are left out."""
    listed = spec.get("allowedNamespaces")
    if not isinstance(listed, list):
        return ()
    return tuple(n for n in listed if isinstance(n, str))


def _field(obj: object, *path: str) -> object:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def text(obj: object, *path: str) -> str:
    """A string field, "" when absent or not a string (a malformed object has no rule to break)."""
    value = _field(obj, *path)
    return value if isinstance(value, str) else ""


def mapping(obj: object, *path: str) -> Mapping[str, object]:
    value = _field(obj, *path)
    return value if isinstance(value, Mapping) else {}


def _list(obj: object, *path: str) -> list[object]:
    value = _field(obj, *path)
    return value if isinstance(value, list) else []
