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
# Copied from the Job to its pods when present.
PASSED_TO_PODS: Final = (
    "volcano.sh/preemptable",
    "volcano.sh/cooldown-time",
    "volcano.sh/revocable-zone",
    "volcano.sh/jdb-min-available",
    "volcano.sh/jdb-max-unavailable",
)
DEFAULT_TASK_SPEC: Final = "default"
