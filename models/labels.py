"""Volcano's label and annotation keys on pods, PodGroups and Jobs: spelled once, here."""

from __future__ import annotations

from typing import Final

TASK_INDEX: Final = "volcano.sh/task-index"
TASK_SPEC: Final = "volcano.sh/task-spec"
JOB_NAME: Final = "volcano.sh/job-name"
JOB_NAMESPACE: Final = "volcano.sh/job-namespace"
QUEUE_NAME: Final = "volcano.sh/queue-name"
JOB_VERSION: Final = "volcano.sh/job-version"
JOB_RETRY_COUNT: Final = "volcano.sh/job-retry-count"
TEMPLATE_UID: Final = "volcano.sh/template-uid"
PARTITION_ID: Final = "volcano.sh/partition-id"
NUMA_TOPOLOGY_POLICY: Final = "volcano.sh/numa-topology-policy"
OUT_OF_SYNC: Final = "volcano.sh/controller-out-of-sync"
GROUP_NAME: Final = "scheduling.k8s.io/group-name"
PREEMPTABLE: Final = "volcano.sh/preemptable"
COOLDOWN_TIME: Final = "volcano.sh/cooldown-time"
# Copied from the Job's annotations to its pods' annotations when present.
ANNOTATIONS_TO_PODS: Final = (PREEMPTABLE, COOLDOWN_TIME, "volcano.sh/revocable-zone")
# The Job's disruption budget: only the first of these it carries goes to its pods.
DISRUPTION_BUDGET: Final = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
# Copied from the Job's labels to its pods' labels when present.
LABELS_TO_PODS: Final = (PREEMPTABLE, COOLDOWN_TIME)
DEFAULT_TASK_SPEC: Final = "default"

# Read by the PodGroup controller on pods it did not create and on their owners.
GROUP_MIN_MEMBER: Final = "scheduling.volcano.sh/group-min-member"  # on the owner
POD_QUEUE_NAME: Final = "scheduling.volcano.sh/queue-name"  # on the pod
REVOCABLE_ZONE: Final = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"
NETWORK_TOPOLOGY_MODE: Final = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_HIGHEST_TIER: Final = "volcano.sh/network-topology-highest-tier"
# An owner's annotations under this prefix are copied to the PodGroup made for its pods.
INHERITED_PREFIX: Final = "volcano.sh/"
POD_GROUP_PREFIX: Final = "podgroup-"  # the PodGroup of a pod Volcano did not create
