"""scheduling.volcano.sh/v1beta1: Queue (cluster-scoped) and PodGroup (namespaced).

Queue rules Volcano's webhook enforces on a single object are CEL rules here; the rule that
needs DELETE (the `default` and `root` queues are never deleted) lives in the
ValidatingAdmissionPolicy under `deploy/admission/`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from models.base import ApiModel, Int32, NonNegInt32, ResourceList
from models.meta import ObjectMeta
from models.topology import LabelSelector

GROUP: Final = "scheduling.volcano.sh"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

DEFAULT_QUEUE: Final = "default"
ROOT_QUEUE: Final = "root"
CLOSED_BY_PARENT: Final = "volcano.sh/closed-by-parent"
# A PodGroup's own sla waiting time (a Job's annotations carry over), the first present wins.
SLA_WAITING_ANNOTATIONS: Final = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
# An allowedNamespaces entry: a namespace name (a DNS-1123 label) or "*".
ALLOWED_NAMESPACE: Final = r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"
DNS1123_SUBDOMAIN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class Guarantee(ApiModel):
    resource: ResourceList | None = None  # None: nothing reserved


class NodeGroupAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class QueueAffinity(ApiModel):
    node_group_affinity: NodeGroupAffinity | None = None  # None: any node group
    node_group_anti_affinity: NodeGroupAffinity | None = None  # None: no node group avoided


class Cluster(ApiModel):
    name: str | None = None
    weight: Int32 | None = None
    capacity: ResourceList | None = None


class QueueSpec(ApiModel):
    weight: Annotated[Int32, Field(ge=1, le=65535)] | None = Field(
        default=None, json_schema_extra={"x-crd-default": 1}
    )  # None: weight 1
    capability: ResourceList | None = None  # None: no upper limit
    reclaimable: bool | None = None  # None: reclaimable
    guarantee: Guarantee | None = None  # None: nothing reserved
    deserved: ResourceList | None = None  # None: the proportion plugin computes it
    parent: str | None = Field(
        default=None, max_length=253, pattern=DNS1123_SUBDOMAIN
    )  # None: hangs under root
    priority: NonNegInt32 | None = None  # None: 0
    dequeue_strategy: Literal["fifo", "traverse"] | None = None  # None: traverse
    affinity: QueueAffinity | None = None  # None: no node-group placement
    extend_clusters: list[Cluster] | None = None  # None: single cluster
    type: str | None = Field(default=None, max_length=253)  # None: unclassified
    # The namespaces whose NamespaceQueues may hang under this queue ("*": every namespace);
    # None or empty: none may (see models/namespacequeue.py).
    allowed_namespaces: (
        Annotated[
            list[Annotated[str, Field(max_length=63, pattern=ALLOWED_NAMESPACE)]],
            Field(max_length=1024),
        ]
        | None
    ) = Field(
        default=None,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!self.exists(n, n == '*') || self.size() == 1",
                    "message": "'*' allows every namespace and must be the only entry",
                }
            ]
        },
    )


class Reservation(ApiModel):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class QueueStatus(ApiModel):
    state: QueueState | None = None  # None: not reconciled yet, read as Open
    pending: Int32 | None = None
    running: Int32 | None = None
    inqueue: Int32 | None = None
    completed: Int32 | None = None
    unknown: Int32 | None = None
    allocated: ResourceList | None = None
    reservation: Reservation | None = None


class Queue(ApiModel):
    """A Volcano Queue (`queue`, `q`); cluster-scoped."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.spec) || !has(self.spec.parent) || "
                    "self.spec.parent != self.metadata.name",
                    "message": "queue cannot use itself as parent",
                    "fieldPath": ".spec.parent",
                },
            ]
        }
    )

    api_version: Literal["scheduling.volcano.sh/v1beta1"] = "scheduling.volcano.sh/v1beta1"
    kind: Literal["Queue"] = "Queue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus | None = None  # None: not reconciled yet


class NetworkTopologySpec(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!(has(self.highestTierAllowed) && has(self.highestTierName))",
                    "message": "highestTierAllowed and highestTierName must not both be set",
                }
            ]
        }
    )

    mode: Literal["hard", "soft"] | None = None  # None: hard
    highest_tier_allowed: NonNegInt32 | None = None  # None: no tier limit by number
    highest_tier_name: str | None = Field(default=None, max_length=253)  # None: no limit by name


class PodGroupCondition(ApiModel):
    type: str | None = None  # Unschedulable or Scheduled
    status: str | None = None  # "True", "False", "Unknown"
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: datetime | None = None
    reason: str | None = None
    message: str | None = None


class SubGroupPolicySpec(ApiModel):
    """One policy of a PodGroup's `subGroupPolicy`: the pods `label_selector` picks, split by the
    values of their `match_label_keys` labels, are sub-groups of `sub_group_size` pods, each a
    gang of its own within its own network topology; the PodGroup needs `min_sub_groups` of
    them whole. Volcano's job controller writes one per task with a `partitionPolicy`."""

    name: str | None = Field(default=None, max_length=253)  # None: unnamed
    sub_group_size: Annotated[Int32, Field(ge=1)] | None = Field(
        default=None, json_schema_extra={"x-crd-default": 1}
    )  # None: 1
    min_sub_groups: NonNegInt32 | None = Field(
        default=None, json_schema_extra={"x-crd-default": 0}
    )  # None: 0
    label_selector: LabelSelector | None = None  # None: every pod of the PodGroup
    match_label_keys: list[str] | None = None  # None: no key (its pods stay in the job's group)
    network_topology: NetworkTopologySpec | None = None  # None: anywhere within the job's


class PodGroupSpec(ApiModel):
    min_member: NonNegInt32 | None = None  # None: 0
    min_task_member: dict[str, NonNegInt32] | None = None  # None: no per-task minimum
    min_resources: ResourceList | None = None  # None: enqueue always permitted
    queue: str | None = Field(
        default=None, json_schema_extra={"x-crd-default": DEFAULT_QUEUE}
    )  # None: default queue
    priority_class_name: str | None = None  # None: priority 0 or the global default
    network_topology: NetworkTopologySpec | None = None  # None: no topology constraint
    sub_group_policy: Annotated[list[SubGroupPolicySpec], Field(max_length=64)] | None = None


class PodGroupStatus(ApiModel):
    phase: PodGroupPhase | None = None  # None: just created, read as Pending
    conditions: list[PodGroupCondition] | None = None
    running: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None


class PodGroup(ApiModel):
    """A Volcano PodGroup (`podgroup`, `pg`): the gang the scheduler places together."""

    api_version: Literal["scheduling.volcano.sh/v1beta1"] = "scheduling.volcano.sh/v1beta1"
    kind: Literal["PodGroup"] = "PodGroup"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus | None = None  # None: not reconciled yet
