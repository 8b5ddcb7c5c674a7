"""A PodGroup's sub-groups (`subGroupPolicy`): gangs within the gang.

Volcano's job controller writes one policy per task with a `partitionPolicy`: the task's pods
(selected by their `volcano.sh/task-spec` label), split by their `volcano.sh/partition-id`
label (`matchLabelKeys`), form partitions of `subGroupSize` pods. Volcano's scheduler (its
SubJobInfo) places each partition as a gang of its own, within its own network topology, and
counts the job ready only once `minSubGroups` partitions of every policy are whole. A pod no
policy takes (no selector match, or a key label missing or empty) is in the job's default
group, which has a minimum of one pod and counts toward no policy.

This is what the policies say; whether a job's sub-groups are ready is asked of its tasks as
they are now, with the other gang predicates (`scheduling.api.jobs`).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, TypeAlias

from pydantic import BaseModel, ConfigDict

from models.scheduling import SubGroupPolicySpec
from scheduling.api.podterms import LabelSelector
from scheduling.api.topology import JobTopology, job_topology

# (policy name, the pod's values of the policy's match keys); the default group is ("", ()).
GroupKey: TypeAlias = tuple[str, tuple[str, ...]]
DEFAULT: Final[GroupKey] = ("", ())


class SubGroupRule(BaseModel):
    """One `subGroupPolicy` entry as the session reads it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    size: int = 1  # subGroupSize: a sub-group is ready with this many pods placed
    minimum: int = 0  # minSubGroups: whole sub-groups the job needs
    selector: LabelSelector | None = None  # None: every pod of the job
    keys: tuple[str, ...] = ()  # matchLabelKeys
    topology: JobTopology | None = None  # None: anywhere within the job's HyperNode


def rules(policies: Iterable[SubGroupPolicySpec]) -> tuple[SubGroupRule, ...]:
    """The PodGroup's policies in spec order (the first that takes a pod keeps it)."""
    return tuple(
        SubGroupRule(
            name=p.name or "",
            size=p.sub_group_size if p.sub_group_size is not None else 1,
            minimum=p.min_sub_groups or 0,
            selector=(
                LabelSelector.model_validate(p.label_selector.dump())
                if p.label_selector is not None
                else None
            ),
            keys=tuple(p.match_label_keys or ()),
            topology=job_topology(p.network_topology),
        )
        for p in policies
    )


def group_of(policies: Sequence[SubGroupRule], labels: Mapping[str, str]) -> GroupKey:
    """The sub-group a pod with `labels` is in (getOrCreateSubJob): the first policy whose
    selector takes it and whose keys it carries, each with a value; else the default group.
    A policy without keys puts nobody in a sub-group, as Volcano's does."""
    for rule in policies:
        if rule.selector is not None and not rule.selector.matches(labels):
            continue
        values = tuple(labels.get(key, "") for key in rule.keys)
        if values and all(values):
            return rule.name, values
    return DEFAULT


def rule_of(policies: Sequence[SubGroupRule], group: GroupKey) -> SubGroupRule | None:
    """The policy of `group`; None: the default group."""
    if group == DEFAULT:
        return None
    return next((r for r in policies if r.name == group[0]), None)


def size_of(policies: Sequence[SubGroupRule], group: GroupKey) -> int:
    """How many placed pods make `group` ready: its policy's size, 1 for the default group."""
    rule = rule_of(policies, group)
    return rule.size if rule is not None else 1
