"""kube-scheduler's PodTopologySpread, which Volcano's predicates and nodeorder plugins run.

DoNotSchedule constraints filter: a node whose domain would hold more matching pods than the
emptiest domain plus maxSkew is refused, from the task's cluster-wide counts in the `PodView`.
ScheduleAnyway constraints score: fewer matching pods in the node's domains score higher,
normalised as kube does. Spread constraints without `topologySpreadConstraints` on the pod (the
cluster's default constraints, derived from Services and ReplicaSets) are not applied.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from typing import Final

from scheduling.api.podterms import SCHEDULE_ANYWAY, selects
from scheduling.api.snapshot import NodeInfo, NodeName, TaskInfo
from scheduling.plugins.podview import MAX_SCORE, Inclusion, PodView, Prepared, included, matching

SPREAD_MISMATCH: Final = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_MISSING: Final = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
HOSTNAME: Final = "kubernetes.io/hostname"


def check(task: TaskInfo, node: NodeInfo, prepared: Prepared) -> str | None:
    for spread in prepared.spread:
        c = spread.constraint
        value = node.labels.get(c.topology_key)
        if value is None:
            return SPREAD_LABEL_MISSING
        own = 1 if selects(c.label_selector, task.labels) else 0
        if spread.counts.get(value, 0) + own - spread.minimum > c.max_skew:
            return SPREAD_MISMATCH
    return None


def scores(
    task: TaskInfo, nodes: list[NodeInfo], view: PodView, inclusion: Inclusion
) -> dict[NodeName, int]:
    """PodTopologySpread's ScheduleAnyway score over `nodes`, normalised as kube does (fewer
    matching pods in the node's domains score higher); {} when the task has no such
    constraint."""
    soft = [c for c in task.spread if c.when_unsatisfiable == SCHEDULE_ANYWAY]
    if not soft:
        return {}
    keys = [c.topology_key for c in soft]
    ignored = {n.name for n in nodes if not all(k in n.labels for k in keys)}
    counts: list[dict[str, int]] = [{} for _ in soft]
    for node in nodes:
        if node.name in ignored:
            continue
        for i, c in enumerate(soft):
            if c.topology_key != HOSTNAME:
                counts[i].setdefault(node.labels[c.topology_key], 0)
    weights = [
        math.log((len(nodes) - len(ignored) if c.topology_key == HOSTNAME else len(counts[i])) + 2)
        for i, c in enumerate(soft)
    ]
    for node in view.nodes.values():
        if not all(k in node.labels for k in keys):
            continue
        for i, c in enumerate(soft):
            value = node.labels[c.topology_key]
            if value in counts[i] and included(task, node, c, inclusion):
                counts[i][value] += matching(view, node.name, task, c)
    raw: dict[NodeName, int] = {}
    for node in nodes:
        if node.name in ignored:
            continue
        total = 0.0
        for i, c in enumerate(soft):
            value = node.labels[c.topology_key]
            if c.topology_key == HOSTNAME:
                found = matching(view, node.name, task, c)
            else:
                found = counts[i][value]
            total += found * weights[i] + float(c.max_skew - 1)
        raw[node.name] = math.floor(total + 0.5)  # Go's math.Round for a positive score
    if not raw:
        return {n.name: 0 for n in nodes}
    low, high = min(raw.values()), max(raw.values())
    result = {n.name: 0 for n in nodes}
    for name, s in raw.items():
        result[name] = MAX_SCORE if high == 0 else MAX_SCORE * (high + low - s) // high
    return result
