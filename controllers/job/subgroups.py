"""The PodGroup's `subGroupPolicy` for a Volcano Job, as Volcano's job controller writes it
(setPgSubGroupPolicy, getSubGroupPolicy and updatePgSubGroupPolicy): pure builders.

One policy per task with a `partitionPolicy`, in task order: the task's pods (its
`volcano.sh/task-spec` label) split by their `volcano.sh/partition-id` label, which
`controllers.job.podspec` gives pod `ix` as `ix // partitionSize`, into sub-groups of
`partitionSize` pods, `minPartitions` of them needed, each within the partition's own
`networkTopology`. The scheduler reads them back in `scheduling.api.subgroups`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from models import labels
from models.scheduling import NetworkTopologySpec, SubGroupPolicySpec
from models.topology import LabelSelector
from models.vcjob import Job, TaskSpec


def _name(task: TaskSpec) -> str:
    """The task's name as its pods' `volcano.sh/task-spec` label carries it."""
    return task.name or labels.DEFAULT_TASK_SPEC


def policy_of(task: TaskSpec) -> SubGroupPolicySpec | None:
    """getSubGroupPolicy: the task's sub-group policy; None: the task has no partitions."""
    partition = task.partition_policy
    if partition is None:
        return None
    topology = partition.network_topology
    return SubGroupPolicySpec(
        name=_name(task),
        sub_group_size=partition.partition_size,
        min_sub_groups=partition.min_partitions or 0,
        label_selector=LabelSelector(match_labels={labels.TASK_SPEC: _name(task)}),
        match_label_keys=[labels.PARTITION_ID],
        network_topology=(
            None
            if topology is None
            else NetworkTopologySpec(
                # Volcano copies the mode, which its CRD defaults to "hard".
                mode=topology.mode or "hard",
                highest_tier_allowed=topology.highest_tier_allowed,
                highest_tier_name=topology.highest_tier_name or None,  # "" is unset in Go
            )
        ),
    )


def sub_group_policy(job: Job) -> list[SubGroupPolicySpec]:
    """setPgSubGroupPolicy: one policy per partitioned task, in task order; []: none."""
    return [p for p in map(policy_of, job.spec.tasks) if p is not None]


def _parsed(entry: object) -> SubGroupPolicySpec | None:
    """A stored entry as the typed policy; None: it is not one (it then differs from any)."""
    try:
        return SubGroupPolicySpec.model_validate(entry)
    except ValidationError:
        return None


def updated_sub_group_policy(
    job: Job, current: Sequence[Mapping[str, object]] | None
) -> list[SubGroupPolicySpec] | None:
    """updatePgSubGroupPolicy: the policies to write over the PodGroup's `current` ones, or None
    when they stand. They are rewritten (the job's, in task order, and nothing else) when a
    partitioned task's policy differs from the stored one of its name, or a task without
    partitions still has one; an entry named for no task, or the entries' order, is no reason
    to rewrite them, as in Volcano."""
    stored = {
        entry.get("name"): _parsed(entry) for entry in current or () if isinstance(entry, Mapping)
    }
    stale = False
    wanted: list[SubGroupPolicySpec] = []
    for task in job.spec.tasks:
        policy = policy_of(task)
        if policy is None:
            stale = stale or _name(task) in stored
            continue
        wanted.append(policy)
        stale = stale or stored.get(policy.name) != policy
    return wanted if stale else None
