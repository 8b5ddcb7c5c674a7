"""scheduling.volcano.sh/v1beta1 NamespaceQueue: a queue a tenant manages in its own namespace.

Volcano's design of July 2026 (docs/design/namespace-queue.md in volcano-sh/volcano; not in
any Volcano release yet). A NamespaceQueue hangs under a cluster Queue whose
`spec.allowedNamespaces` lets its namespace attach (`cluster/<name>`, `cluster/default` when
unset) or under another NamespaceQueue of the same namespace (`<name>`); workloads name it as
`namespace/<name>` (`models/queue_refs.py`). It takes part in scheduling only while Open and
Ready: its controller sets the `Authorized` and `Ready` conditions, the scheduler writes what
it holds (`allocated`, `reservation`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

from pydantic import ConfigDict, Field

from models.base import ApiModel, Int32, NonNegInt32, ResourceList
from models.meta import Condition, ObjectMeta
from models.queue_refs import DEFAULT_PARENT
from models.scheduling import Guarantee, QueueState, Reservation

KIND: Final = "NamespaceQueue"
PLURAL: Final = "namespacequeues"
# `<name>` or `cluster/<name>`, each name a DNS-1123 subdomain; the rest (not `cluster/root`,
# not itself) is checked by CEL rules below and by `queue_refs.parent`.
PARENT_PATTERN: Final = (
    r"^(cluster/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


class ConditionType(StrEnum):
    AUTHORIZED = "Authorized"  # the namespace may use the cluster Queue at the top of its chain
    READY = "Ready"  # parent found, authorized, within its parent's limits: schedulable


class NamespaceQueueSpec(ApiModel):
    capability: ResourceList | None = None  # None: bounded by its parent only
    reclaimable: bool | None = None  # None: reclaimable
    guarantee: Guarantee | None = None  # None: nothing reserved
    parent: str | None = Field(
        default=None,
        max_length=261,  # "cluster/" and a 253-character name
        pattern=PARENT_PATTERN,
        json_schema_extra={"x-crd-default": DEFAULT_PARENT},
    )  # None: cluster/default
    deserved: ResourceList | None = None  # None: no share of its own
    priority: NonNegInt32 | None = None  # None: 0
    dequeue_strategy: Literal["fifo", "traverse"] | None = Field(
        default=None, json_schema_extra={"x-crd-default": "traverse"}
    )  # None: traverse


class NamespaceQueueStatus(ApiModel):
    state: QueueState | None = None  # None: not reconciled yet, read as Open
    conditions: list[Condition] | None = None  # None: not reconciled yet, not Ready
    pending: Int32 | None = None
    running: Int32 | None = None
    inqueue: Int32 | None = None
    completed: Int32 | None = None
    unknown: Int32 | None = None
    allocated: ResourceList | None = None  # written by the scheduler
    reservation: Reservation | None = None  # written by the scheduler


class NamespaceQueue(ApiModel):
    """A Volcano NamespaceQueue (`namespacequeue`, `nq`); namespaced."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.spec) || !has(self.spec.parent) || "
                    "self.spec.parent != self.metadata.name",
                    "message": "a NamespaceQueue cannot use itself as parent",
                    "fieldPath": ".spec.parent",
                },
                {
                    "rule": "!has(self.spec) || !has(self.spec.parent) || "
                    "self.spec.parent != 'cluster/root'",
                    "message": "cluster/root is the scheduler's: name a queue below it",
                    "fieldPath": ".spec.parent",
                },
            ]
        }
    )

    api_version: Literal["scheduling.volcano.sh/v1beta1"] = "scheduling.volcano.sh/v1beta1"
    kind: Literal["NamespaceQueue"] = "NamespaceQueue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NamespaceQueueSpec = Field(default_factory=NamespaceQueueSpec)
    status: NamespaceQueueStatus | None = None  # None: not reconciled yet

    def condition(self, kind: ConditionType) -> Condition | None:
        for c in (self.status.conditions if self.status else None) or []:
            if c.type == kind:
                return c
        return None

    @property
    def schedulable(self) -> bool:
        """Open (or not reconciled to another state) and Ready: the scheduler may place its
        jobs."""
        state = self.status.state if self.status else None
        ready = self.condition(ConditionType.READY)
        return state in (None, QueueState.OPEN) and ready is not None and ready.status == "True"
