"""The scheduling.volcano.sh/v1beta1 Queue's, PodGroup's and NamespaceQueue's specs, field by
field: who in Caldera reads each one.

The scheduler reads both kinds through `scheduling/cache/objects.py` (`queue_info`, `job_info`),
so a field is `Honoured` here only where that reader copies it and a named plugin or action
uses the copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from models.coverage.entries import Coverage, Honoured, KindCoverage, WithoutEffect

_SHARES: Final = (
    "scheduling/plugins/proportion.py, scheduling/plugins/capacity.py, admission/queueresources.py"
)
_NODE_GROUPS: Final = "scheduling/api/nodegroups.py, scheduling/plugins/nodegroup.py"
_DISPATCH: Final = "forwarder/routing/queue_translate.py, controllers/dispatch/choose.py"
_TOPOLOGY: Final = "scheduling/cache/objects.py, scheduling/api/topology.py"
_SUB_GROUPS: Final = (
    "scheduling/cache/objects.py, scheduling/api/subgroups.py, scheduling/actions/subgroups.py"
)

QUEUE_FIELDS: Final[Mapping[str, Coverage]] = {
    "spec.weight": Honoured("scheduling/plugins/proportion.py", "the queue's share of the cluster"),
    "spec.capability": Honoured(_SHARES),
    "spec.reclaimable": Honoured(
        "scheduling/actions/reclaim.py, scheduling/actions/gangreclaim.py"
    ),
    "spec.guarantee.resource": Honoured(_SHARES),
    "spec.deserved": Honoured("scheduling/plugins/capacity.py, admission/queueresources.py"),
    "spec.parent": Honoured(
        "controllers/queue/controller.py, scheduling/plugins/capacity.py, admission/rules.py",
        "the hierarchy: states, shares and the webhook's depth and cycle rules",
    ),
    "spec.priority": Honoured("scheduling/framework/ordering.py", "queues are served by it first"),
    "spec.dequeueStrategy": WithoutEffect(
        "Volcano's scheduler does not read it at ed72c7c; Caldera's allocate goes on to a "
        "queue's next job when one does not fit, which is `traverse`, the documented default"
    ),
    "spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution": Honoured(
        _NODE_GROUPS
    ),
    "spec.affinity.nodeGroupAffinity.preferredDuringSchedulingIgnoredDuringExecution": Honoured(
        _NODE_GROUPS
    ),
    "spec.affinity.nodeGroupAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Honoured(_NODE_GROUPS)
    ),
    "spec.affinity.nodeGroupAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Honoured(_NODE_GROUPS)
    ),
    "spec.extendClusters[].name": Honoured(_DISPATCH, "the worker clusters its jobs go to"),
    "spec.extendClusters[].weight": Honoured(_DISPATCH),
    "spec.extendClusters[].capacity": Honoured(_DISPATCH),
    "spec.type": WithoutEffect(
        "a free-form label of the queue; nothing in Volcano reads it (ed72c7c), nor in Caldera"
    ),
    "spec.allowedNamespaces": Honoured(
        "admission/namespacequeues.py, controllers/namespacequeue/hierarchy.py",
        "the namespaces whose NamespaceQueues may hang under the queue",
    ),
}

PODGROUP_FIELDS: Final[Mapping[str, Coverage]] = {
    "spec.minMember": Honoured(
        "scheduling/cache/objects.py, scheduling/api/jobs.py", "the gang size"
    ),
    "spec.minTaskMember": Honoured("scheduling/cache/objects.py, scheduling/api/jobs.py"),
    "spec.minResources": Honoured(
        "scheduling/cache/objects.py, scheduling/actions/enqueue.py",
        "what enqueue must find room for",
    ),
    "spec.queue": Honoured("scheduling/cache/objects.py, admission/rules.py"),
    "spec.priorityClassName": Honoured("scheduling/cache/objects.py", "the job's priority"),
    "spec.networkTopology.mode": Honoured(_TOPOLOGY),
    "spec.networkTopology.highestTierAllowed": Honoured(_TOPOLOGY),
    "spec.networkTopology.highestTierName": Honoured(_TOPOLOGY),
    "spec.subGroupPolicy[].name": Honoured(
        f"{_SUB_GROUPS}, controllers/job/subgroups.py, activities/controllers/podgroups.py",
        "the job controller writes one policy per task with a partitionPolicy, as Volcano's "
        "does; each sub-group (partition) is placed as a gang of its own within its own network "
        "tier, and the job is ready once minSubGroups of them are whole",
    ),
    "spec.subGroupPolicy[].subGroupSize": Honoured(_SUB_GROUPS, "a sub-group's gang size"),
    "spec.subGroupPolicy[].minSubGroups": Honoured(
        _SUB_GROUPS, "whole sub-groups the job needs to be ready"
    ),
    "spec.subGroupPolicy[].labelSelector": Honoured(_SUB_GROUPS, "the pods the policy takes"),
    "spec.subGroupPolicy[].matchLabelKeys": Honoured(
        _SUB_GROUPS, "the labels whose values split them into sub-groups"
    ),
    "spec.subGroupPolicy[].networkTopology.mode": Honoured(_SUB_GROUPS),
    "spec.subGroupPolicy[].networkTopology.highestTierAllowed": Honoured(_SUB_GROUPS),
    "spec.subGroupPolicy[].networkTopology.highestTierName": Honoured(_SUB_GROUPS),
}

QUEUE: Final = KindCoverage(
    kind="Queue",
    api_version="scheduling.volcano.sh/v1beta1",
    crd="scheduling.volcano.sh_queues.yaml",
    fields=QUEUE_FIELDS,
)
PODGROUP: Final = KindCoverage(
    kind="PodGroup",
    api_version="scheduling.volcano.sh/v1beta1",
    crd="scheduling.volcano.sh_podgroups.yaml",
    fields=PODGROUP_FIELDS,
)

_NQ_SHARES: Final = (
    "scheduling/cache/namespacequeues.py, scheduling/plugins/namespace_subtrees.py, "
    "controllers/namespacequeue/hierarchy.py, admission/namespacequeues.py"
)

NAMESPACEQUEUE_FIELDS: Final[Mapping[str, Coverage]] = {
    "spec.capability": Honoured(_NQ_SHARES, "within its parent's, in the capacity plugin only"),
    "spec.reclaimable": Honoured(
        "scheduling/cache/namespacequeues.py, scheduling/actions/reclaim.py"
    ),
    "spec.guarantee.resource": Honoured(_NQ_SHARES, "carved out of its parent's"),
    "spec.parent": Honoured(
        "controllers/namespacequeue/hierarchy.py, scheduling/cache/namespacequeues.py, "
        "admission/namespacequeues.py",
        "`<name>` in the namespace or `cluster/<name>` (models/queue_refs.py)",
    ),
    "spec.deserved": Honoured(_NQ_SHARES),
    "spec.priority": Honoured(
        "scheduling/cache/namespacequeues.py, scheduling/framework/ordering.py",
        "queues are served by it first",
    ),
    "spec.dequeueStrategy": WithoutEffect(
        "as a Queue's: Caldera's allocate goes on to a queue's next job when one does not fit, "
        "which is `traverse`, the default"
    ),
}

NAMESPACEQUEUE: Final = KindCoverage(
    kind="NamespaceQueue",
    api_version="scheduling.volcano.sh/v1beta1",
    crd="scheduling.volcano.sh_namespacequeues.yaml",
    fields=NAMESPACEQUEUE_FIELDS,
)
