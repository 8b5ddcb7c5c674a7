"""Volcano's nodegroup plugin: a queue's pods run only in the node groups its affinity allows.

As `pkg/scheduler/plugins/nodegroup/nodegroup.go` at HEAD decides it. The predicate: a node
without the `volcano.sh/nodegroup-name` label is refused unless the plugin is not `strict` and
the queue names no group; a labelled node is refused to a queue that names none; otherwise the
group must be required or preferred by the affinity and not required by the anti-affinity, except
that a group the anti-affinity merely prefers to avoid is allowed whatever the other lists say
(Volcano checks that list last). The score, added unweighted to the other node scores: 100 for
a required group, plus 50 for a preferred one (with `enablePreferredOrder`, 50 * (n - i) / n for
the i-th of n preferred groups), and -1 for a group the anti-affinity prefers to avoid.

With `enableHierarchy`, a queue without `spec.affinity` takes its nearest ancestor's. The session
hands each task its queue's rule (`session_tasks`); `predicates.check` and `scoring` read it.
Not done: the queue annotation `volcano.sh/nodegroup-resource-limits` (per-group quotas).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from models.keys import QueueName
from scheduling.api.nodegroups import NODE_GROUP_LABEL, NodeGroupConfig, NodeGroupRule, QueueGroups
from scheduling.api.snapshot import NodeInfo, PodKey, QueueInfo, Snapshot, TaskInfo

BASE_SCORE: Final = 100
# Volcano's reasons (errors.go), all UnschedulableAndUnresolvable: preemption cannot help.
LABEL_NOT_FOUND: Final = "node group label not found"
AFFINITY_NOT_FOUND: Final = "node group affinity not specified"
UNSATISFIED: Final = "node does not satisfy the node group affinity"


def allowed(groups: QueueGroups, group: str) -> bool:
    """queueGroupAffinity.predicate: anti-affinity outranks affinity, its preferred list last."""
    if group in groups.anti_preferred:
        return True
    if group in groups.anti_required:
        return False
    return group in groups.required or group in groups.preferred


def refusal(task: TaskInfo, node: NodeInfo) -> str | None:
    """Why the node is not for the task's queue; None: it is, or the predicate is off."""
    rule = task.node_groups
    if rule is None or not rule.config.predicate:
        return None
    group = node.labels.get(NODE_GROUP_LABEL)  # a label with an empty value is a group ""
    groups = rule.groups
    if group is None:
        if not rule.config.strict and (groups is None or groups.unset):
            return None
        return LABEL_NOT_FOUND
    if groups is None or groups.unset:
        return AFFINITY_NOT_FOUND
    return None if allowed(groups, group) else UNSATISFIED


def score(task: TaskInfo, node: NodeInfo) -> Fraction:
    """queueGroupAffinity.score; 0 for an unlabelled node, a queue without affinity, or when
    the node order is off."""
    rule = task.node_groups
    if rule is None or not rule.config.node_order or rule.groups is None:
        return Fraction(0)
    group, groups = node.labels.get(NODE_GROUP_LABEL), rule.groups
    if group is None:
        return Fraction(0)
    if group in groups.anti_preferred:
        return Fraction(-1)
    value = Fraction(BASE_SCORE if group in groups.required else 0)
    if rule.config.preferred_order:
        positions = groups.positions
        if (i := positions.get(group)) is not None:
            value += Fraction(BASE_SCORE * (len(positions) - i), 2 * len(positions))
    elif group in groups.preferred:
        value += BASE_SCORE // 2
    return value


def _inherited(queue: QueueInfo, queues: Mapping[QueueName, QueueInfo]) -> QueueGroups | None:
    """The nearest ancestor's groups for a queue without its own (updateAffinityFromAncestor);
    the walk stops at the root, at a parent that does not exist and at a cycle."""
    seen, current = {queue.name}, queue
    while current.node_groups is None and current.parent is not None:
        parent = queues.get(current.parent)
        if parent is None or parent.name in seen:
            return None
        seen.add(parent.name)
        current = parent
    return current.node_groups


def rules(snapshot: Snapshot, config: NodeGroupConfig) -> dict[QueueName, NodeGroupRule]:
    """Each queue's rule: its own groups, or with `enableHierarchy` its ancestors'."""
    queues = {q.name: q for q in snapshot.queues}
    return {
        name: NodeGroupRule(
            groups=_inherited(queue, queues) if config.hierarchy else queue.node_groups,
            config=config,
        )
        for name, queue in queues.items()
    }


def session_tasks(snapshot: Snapshot, config: NodeGroupConfig | None) -> dict[PodKey, TaskInfo]:
    """The session's tasks by key, each carrying its queue's rule when the plugin runs."""
    if config is None:
        return {t.key: t for t in snapshot.tasks}
    by_queue = rules(snapshot, config)
    queue_of = {j.key: j.queue for j in snapshot.jobs}
    return {
        t.key: t.model_copy(update={"node_groups": by_queue[queue_of[t.job]]})
        for t in snapshot.tasks
    }
