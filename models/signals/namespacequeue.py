"""What a NamespaceQueueWorkflow hears and answers: the NamespaceQueue, a change around it
(its parent chain, its siblings, its cluster Queue), its PodGroups and its view.

Its PodGroups come as the QueueWorkflow's do (`queue.PodGroupsChanged`, `PodGroupsListed`,
under the same signal names): the forwarder's coalescer batches both alike. Signal and
workflow type names are stored in histories and used by the forwarder: they never change.
Pure: pydantic only.
"""

from __future__ import annotations

from typing import Any, Literal

from models.signals import common


class NamespaceQueueStart(common.Payload):
    """What the forwarder starts a NamespaceQueueWorkflow with (signal-with-start)."""


class NamespaceQueueObserved(common.Payload):
    """The NamespaceQueue as the apiserver holds it now (added, spec changed, relisted)."""

    queue: dict[str, Any]


class NamespaceQueueDeleted(common.Payload):
    uid: str


class HierarchyChanged(common.Payload):
    """Something its conditions depend on changed: a NamespaceQueue above, beside or below it,
    or a cluster Queue it hangs under (the workflow reads them again)."""

    why: str = ""


class NamespaceQueueView(common.Payload):
    """The `status` query of a NamespaceQueueWorkflow."""

    namespace: str
    name: str
    state: str
    parent: str  # the effective spec.parent (cluster/default when unset)
    authorized: str  # the Authorized condition's status ("" before the first read)
    ready: str  # the Ready condition's status ("" before the first read)
    reason: str  # the Ready condition's reason
    pod_groups: dict[str, int]  # phase → count
    backlog: int = 0
    kind: Literal["NamespaceQueueView"] = "NamespaceQueueView"


# Workflow type and message names: histories and the forwarder use these strings.
NAMESPACE_QUEUE_WORKFLOW = "NamespaceQueueWorkflow"
SIGNAL_NAMESPACE_QUEUE_OBSERVED = "namespace_queue_observed"
SIGNAL_NAMESPACE_QUEUE_DELETED = "namespace_queue_deleted"
SIGNAL_HIERARCHY_CHANGED = "hierarchy_changed"
