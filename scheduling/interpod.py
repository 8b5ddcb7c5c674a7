"""Placement rules that depend on the other pods: inter-pod affinity, topology spread, host ports,
volume counts.

kube-scheduler's InterPodAffinity, PodTopologySpread, NodePorts and NodeVolumeLimits, which
Volcano's predicates and nodeorder plugins run. They need to know every pod on every node, so
the session keeps a `PodView` that moves with it: a task allocated or pipelined onto a node
joins that node's pods, one deallocated, unpipelined or evicted leaves it, and undoing an
operation restores exactly the entry it removed, so a gang's second pod sees its first and a
discarded statement leaves no trace.

Most sessions use none of this. The view is inactive, and costs one attribute test per check,
unless some task of the snapshot has pod (anti-)affinity, spread constraints, host ports or CSI
volumes, or some pod on a node has pod (anti-)affinity terms (its anti-affinity can refuse
anyone).

Per task, the cluster-wide counts (matching pods per topology domain) are computed once, as
kube's PreFilter does, then brought up to date by the view's changes since (kube's AddPod and
RemovePod), shared by tasks alike (a gang's replicas); each node is then a lookup. Required
affinity follows kube's general path: a pod may be the first of a group that has affinity to
itself, so when no pod anywhere matches its terms and it matches them itself, any node with the
topology labels passes. Spread constraints without `topologySpreadConstraints` on the pod (the
cluster's default constraints, derived from Services and ReplicaSets) are not applied. The
scores (preferred terms, existing pods' terms, ScheduleAnyway spread) are normalised over the
candidate nodes as kube normalises them and reach `scoring.best_node` as its `extra`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Final

from scheduling.podterms import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    PodAffinityTerm,
    PodOnNode,
    SpreadConstraint,
    selects,
)
from scheduling.snapshot import NodeInfo, NodeName, Snapshot, TaskInfo, TaskStatus

AFFINITY_MISMATCH: Final = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH: Final = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_MISMATCH: Final = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_MISSING: Final = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
PORTS_TAKEN: Final = "node(s) didn't have free ports for the requested pod ports"
VOLUME_COUNT: Final = "node(s) exceed max volume count"
HOSTNAME: Final = "kubernetes.io/hostname"
HARD_AFFINITY_WEIGHT: Final = 1  # hardPodAffinityWeight: an existing pod's required affinity
MAX_SCORE: Final = 100
_NO_DOMAIN: Final = 2**31 - 1  # kube's critical path before any domain is seen

# (node affinity passes, node taints are tolerated) for the task on the node: the spread's
# nodeAffinityPolicy and nodeTaintsPolicy, judged by `scheduling.predicates`.
Inclusion = Callable[[TaskInfo, NodeInfo], tuple[bool, bool]]
_Pair = tuple[str, str]  # (topology key, value)


def pod_on_node(task: TaskInfo, node: NodeName) -> PodOnNode:
    """What the rules keep of a task on `node`."""
    return PodOnNode.model_construct(  # every field is already a parsed, validated value
        key=task.key,
        namespace=task.namespace,
        node=node,
        labels=task.labels,
        affinity=task.pod_affinity,
        host_ports=task.host_ports,
        volumes=task.volumes,
        deleting=task.status is TaskStatus.RELEASING,
    )


def uses_rules(task: TaskInfo) -> bool:
    return (
        task.pod_affinity is not None
        or bool(task.spread)
        or bool(task.host_ports)
        or bool(task.volumes)
    )


@dataclass
class _Spread:
    constraint: SpreadConstraint
    domain_of: dict[str, str]  # each node the constraint counts -> its domain value
    counts: dict[str, int]  # matching pods per domain value
    minimum: int = _NO_DOMAIN  # the smallest count, 0 with fewer domains than minDomains

    def settle(self) -> None:
        minimum = min(self.counts.values(), default=_NO_DOMAIN)
        wanted = self.constraint.min_domains
        self.minimum = 0 if len(self.counts) < (wanted if wanted is not None else 1) else minimum


@dataclass
class _Prepared:
    """One task shape's cluster-wide counts (kube's PreFilter state) at view `version`."""

    version: int
    affinity: Counter[_Pair]  # pods matching all required affinity terms, per domain
    anti: Counter[_Pair]  # pods matching a required anti-affinity term, per domain
    existing: Counter[_Pair]  # placed pods whose required anti-affinity takes the task
    self_match: bool  # the task matches its own affinity terms
    spread: tuple[_Spread, ...]  # its DoNotSchedule constraints


class PodView:
    """The pods on each node for these rules, kept in step with the session's placements.

    Every change is logged, so a task's counts are brought up to date by the changes since
    they were computed (kube's AddPod/RemovePod) instead of a new scan; tasks with the same
    terms, labels and node constraints (a gang's replicas) share them.
    """

    def __init__(self, snapshot: Snapshot, nodes: Mapping[NodeName, NodeInfo]) -> None:
        self.nodes = nodes  # the session's live node map (labels and taints never change)
        self.active = any(uses_rules(t) for t in snapshot.tasks) or any(
            p.affinity is not None for p in snapshot.pods
        )
        self.on_node: dict[str, dict[str, PodOnNode]] = {}
        self._removed: dict[str, PodOnNode] = {}
        self._anti_pods = 0  # pods with required anti-affinity: they may refuse anyone
        self._scoring_pods = 0  # pods with affinity or preferred terms: they score anyone
        self._log: list[tuple[str, PodOnNode, int]] = []  # (node, pod, +1 joined / -1 left)
        self._prepared: dict[str, _Prepared] = {}
        self._shapes: dict[str, str] = {}
        if self.active:
            for pod in snapshot.pods:
                self.on_node.setdefault(pod.node, {})[pod.key] = pod
                self._count(pod, +1)
            self._log.clear()  # the snapshot's pods are the starting point, not changes

    @property
    def version(self) -> int:
        return len(self._log)

    def _count(self, pod: PodOnNode, sign: int) -> None:
        if pod.affinity is not None:
            if pod.affinity.scores:
                self._scoring_pods += sign
            if pod.affinity.required_anti:
                self._anti_pods += sign

    def add(self, task: TaskInfo, node: NodeName) -> None:
        """The task is on `node` now (allocated, pipelined, or an eviction undone)."""
        if not self.active:
            return
        pod = self._removed.pop(task.key, None)
        if pod is None or pod.node != node:
            pod = pod_on_node(task, node)
        self.on_node.setdefault(node, {})[pod.key] = pod
        self._count(pod, +1)
        self._log.append((node, pod, +1))

    def remove(self, task: TaskInfo, node: NodeName) -> None:
        """The task left `node` (deallocated, unpipelined or evicted); kept for undoing."""
        if not self.active:
            return
        pod = self.on_node.get(node, {}).pop(task.key, None)
        if pod is not None:
            self._removed[task.key] = pod
            self._count(pod, -1)
            self._log.append((node, pod, -1))

    def pods(self) -> Iterable[tuple[NodeInfo, PodOnNode]]:
        """Every pod on a node the session knows, with its node."""
        for name, pods in self.on_node.items():
            node = self.nodes.get(NodeName(name))
            if node is not None:
                for pod in pods.values():
                    yield node, pod

    def _shape(self, task: TaskInfo) -> str:
        """What the counts depend on: tasks alike in these share them."""
        shape = self._shapes.get(task.key)
        if shape is None:
            shape = repr(
                (
                    task.namespace,
                    sorted(task.labels.items()),
                    task.pod_affinity,
                    task.spread,
                    sorted(task.node_selector.items()),
                    task.required_affinity,
                    task.tolerations,
                )
            )
            self._shapes[task.key] = shape
        return shape

    def prepared(self, task: TaskInfo, inclusion: Inclusion) -> _Prepared:
        """The task's cluster-wide counts for the view as it is now (kube's PreFilter)."""
        shape = self._shape(task)
        found = self._prepared.get(shape)
        if found is None:
            found = self._prepared[shape] = _prepare(self, task, inclusion)
        elif found.version != self.version:
            for name, pod, sign in self._log[found.version :]:
                node = self.nodes.get(NodeName(name))
                if node is not None:
                    _tally(found, task, node, pod, sign)
            for spread in found.spread:
                spread.settle()
            found.version = self.version
        return found

    def needs_filter(self, task: TaskInfo) -> bool:
        return uses_rules(task) or self._anti_pods > 0

    def needs_counts(self, task: TaskInfo) -> bool:
        """The cluster-wide counts can refuse the task: it has pod (anti-)affinity or spread
        constraints, or some pod's anti-affinity may refuse it (ports and volume counts alone
        need none)."""
        return task.pod_affinity is not None or bool(task.spread) or self._anti_pods > 0

    def needs_affinity_score(self, task: TaskInfo) -> bool:
        terms = task.pod_affinity
        return self._scoring_pods > 0 or (
            terms is not None and bool(terms.preferred or terms.preferred_anti)
        )


def _record(counts: Counter[_Pair], node: NodeInfo, key: str, sign: int) -> None:
    value = node.labels.get(key)
    if value is not None:
        pair = (key, value)
        counts[pair] += sign
        if counts[pair] == 0:
            del counts[pair]


def _all_match(
    terms: Iterable[PodAffinityTerm], owner: str, ns: str, labels: Mapping[str, str]
) -> bool:
    listed = tuple(terms)
    return bool(listed) and all(t.matches(owner, ns, labels) for t in listed)


def _counted(task: TaskInfo, pod: PodOnNode, c: SpreadConstraint) -> bool:
    """A pod the spread constraint counts: the task's namespace, not being deleted, taken by
    the selector (an empty or missing selector counts none)."""
    selector = c.label_selector
    if selector is None or selector.empty or pod.deleting or pod.namespace != task.namespace:
        return False
    return selector.matches(pod.labels)


def _tally(found: _Prepared, task: TaskInfo, node: NodeInfo, pod: PodOnNode, sign: int) -> None:
    """Count `pod` on `node` in (sign +1) or out of (-1) the task's counts."""
    ns, terms = task.namespace, task.pod_affinity
    if terms is not None:
        required = terms.required
        if required and _all_match(required, ns, pod.namespace, pod.labels):
            for term in required:
                _record(found.affinity, node, term.topology_key, sign)
        for term in terms.required_anti:
            if term.matches(ns, pod.namespace, pod.labels):
                _record(found.anti, node, term.topology_key, sign)
    if pod.affinity is not None:
        for term in pod.affinity.required_anti:
            if term.matches(pod.namespace, ns, task.labels):
                _record(found.existing, node, term.topology_key, sign)
    for spread in found.spread:
        value = spread.domain_of.get(node.name)
        if value is not None and _counted(task, pod, spread.constraint):
            spread.counts[value] += sign


def _prepare(view: PodView, task: TaskInfo, inclusion: Inclusion) -> _Prepared:
    required = task.pod_affinity.required if task.pod_affinity is not None else ()
    hard = [c for c in task.spread if c.when_unsatisfiable == DO_NOT_SCHEDULE]
    keys = [c.topology_key for c in hard]
    spreads = []
    for c in hard:
        domain_of: dict[str, str] = {
            node.name: node.labels[c.topology_key]
            for node in view.nodes.values()
            if all(k in node.labels for k in keys) and _included(task, node, c, inclusion)
        }
        spreads.append(_Spread(c, domain_of, dict.fromkeys(domain_of.values(), 0)))
    self_match = _all_match(required, task.namespace, task.namespace, task.labels)
    found = _Prepared(view.version, Counter(), Counter(), Counter(), self_match, tuple(spreads))
    for node, pod in view.pods():
        _tally(found, task, node, pod, +1)
    for spread in found.spread:
        spread.settle()
    return found


def _included(task: TaskInfo, node: NodeInfo, c: SpreadConstraint, inclusion: Inclusion) -> bool:
    """The node counts for the constraint under its nodeAffinity/nodeTaints policies."""
    affinity_policy = c.node_affinity_policy or HONOR
    taints_policy = c.node_taints_policy or IGNORE
    if affinity_policy != HONOR and taints_policy != HONOR:
        return True
    affinity_ok, taints_ok = inclusion(task, node)
    return (affinity_policy != HONOR or affinity_ok) and (taints_policy != HONOR or taints_ok)


def _matching(view: PodView, node: str, task: TaskInfo, c: SpreadConstraint) -> int:
    """Pods on the node that the spread constraint counts."""
    return sum(1 for p in view.on_node.get(node, {}).values() if _counted(task, p, c))


def _ports(view: PodView, task: TaskInfo, node: NodeInfo) -> str | None:
    used = [p for pod in view.on_node.get(node.name, {}).values() for p in pod.host_ports]
    if any(want.conflicts(have) for want in task.host_ports for have in used):
        return PORTS_TAKEN
    return None


def _volume_count(view: PodView, task: TaskInfo, node: NodeInfo) -> str | None:
    """The task's volumes not yet on the node, per driver, fit the node's counts for it."""
    held = {v for pod in view.on_node.get(node.name, {}).values() for v in pod.volumes}
    new = Counter(v.driver for v in set(task.volumes) - held)
    if not new:
        return None
    attached = Counter(v.driver for v in held)
    for driver, count in new.items():
        limit = node.volume_limits.get(driver)
        if limit is not None and attached[driver] + count > limit:
            return VOLUME_COUNT
    return None


def _affinity(task: TaskInfo, node: NodeInfo, prepared: _Prepared) -> str | None:
    terms = task.pod_affinity
    required = terms.required if terms is not None else ()
    if required:
        exists = True
        for term in required:
            value = node.labels.get(term.topology_key)
            if value is None:
                return AFFINITY_MISMATCH
            if prepared.affinity[(term.topology_key, value)] <= 0:
                exists = False
        if not exists and not (not prepared.affinity and prepared.self_match):
            return AFFINITY_MISMATCH
    for term in terms.required_anti if terms is not None else ():
        value = node.labels.get(term.topology_key)
        if value is not None and prepared.anti[(term.topology_key, value)] > 0:
            return ANTI_AFFINITY_MISMATCH
    if prepared.existing and any(prepared.existing[pair] > 0 for pair in node.labels.items()):
        return EXISTING_ANTI_AFFINITY
    return None


def _spread(task: TaskInfo, node: NodeInfo, prepared: _Prepared) -> str | None:
    for spread in prepared.spread:
        c = spread.constraint
        value = node.labels.get(c.topology_key)
        if value is None:
            return SPREAD_LABEL_MISSING
        own = 1 if selects(c.label_selector, task.labels) else 0
        if spread.counts.get(value, 0) + own - spread.minimum > c.max_skew:
            return SPREAD_MISMATCH
    return None


def check(task: TaskInfo, node: NodeInfo, view: PodView, inclusion: Inclusion) -> str | None:
    """NodePorts, NodeVolumeLimits, PodTopologySpread, then InterPodAffinity: the first
    reason, or None."""
    if not view.needs_filter(task):
        return None
    if task.host_ports and (reason := _ports(view, task, node)):
        return reason
    if task.volumes and node.volume_limits and (reason := _volume_count(view, task, node)):
        return reason
    if not view.needs_counts(task):
        return None
    prepared = view.prepared(task, inclusion)
    return _spread(task, node, prepared) or _affinity(task, node, prepared)


# Scores -----------------------------------------------------------------------------------


def _add_terms(
    scores: dict[str, Counter[str]],
    node: NodeInfo,
    terms: Iterable[tuple[int, PodAffinityTerm]],
    owner: str,
    ns: str,
    labels: Mapping[str, str],
    sign: int,
) -> None:
    for weight, term in terms:
        value = node.labels.get(term.topology_key)
        if value is not None and term.matches(owner, ns, labels):
            scores.setdefault(term.topology_key, Counter())[value] += weight * sign


def affinity_scores(task: TaskInfo, nodes: list[NodeInfo], view: PodView) -> dict[NodeName, int]:
    """InterPodAffinity's score, normalised to 0-100 over `nodes`; {} when nothing applies."""
    if not view.needs_affinity_score(task):
        return {}
    ns, terms = task.namespace, task.pod_affinity
    preferred = [(t.weight, t.pod_affinity_term) for t in terms.preferred] if terms else []
    avoided = [(t.weight, t.pod_affinity_term) for t in terms.preferred_anti] if terms else []
    mine = bool(preferred or avoided)
    topology: dict[str, Counter[str]] = {}
    for node, pod in view.pods():
        theirs = pod.affinity
        if not node.labels or (not mine and (theirs is None or not theirs.scores)):
            continue
        _add_terms(topology, node, preferred, ns, pod.namespace, pod.labels, +1)
        _add_terms(topology, node, avoided, ns, pod.namespace, pod.labels, -1)
        if theirs is not None:
            owner = pod.namespace
            hard = [(HARD_AFFINITY_WEIGHT, t) for t in theirs.required]
            _add_terms(topology, node, hard, owner, ns, task.labels, +1)
            soft = [(t.weight, t.pod_affinity_term) for t in theirs.preferred]
            _add_terms(topology, node, soft, owner, ns, task.labels, +1)
            away = [(t.weight, t.pod_affinity_term) for t in theirs.preferred_anti]
            _add_terms(topology, node, away, owner, ns, task.labels, -1)
    if not topology:
        return {}
    raw = {
        n.name: sum(values[n.labels[key]] for key, values in topology.items() if key in n.labels)
        for n in nodes
    }
    low, high = min(raw.values()), max(raw.values())
    spread = high - low
    return {
        name: int(float(MAX_SCORE) * (float(s - low) / float(spread))) if spread > 0 else 0
        for name, s in raw.items()
    }


def spread_scores(
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
            if value in counts[i] and _included(task, node, c, inclusion):
                counts[i][value] += _matching(view, node.name, task, c)
    raw: dict[NodeName, int] = {}
    for node in nodes:
        if node.name in ignored:
            continue
        total = 0.0
        for i, c in enumerate(soft):
            value = node.labels[c.topology_key]
            if c.topology_key == HOSTNAME:
                found = _matching(view, node.name, task, c)
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


def extra_scores(
    task: TaskInfo,
    nodes: list[NodeInfo],
    view: PodView | None,
    weights: tuple[int, int],
    inclusion: Inclusion,
) -> dict[NodeName, int] | None:
    """Weighted InterPodAffinity plus PodTopologySpread scores per node; None: neither
    applies, so nodes score as without them."""
    if view is None or not view.active or len(nodes) < 2:
        return None
    affinity_weight, spread_weight = weights
    found: MutableMapping[NodeName, int] = {}
    if affinity_weight:
        for name, s in affinity_scores(task, nodes, view).items():
            found[name] = found.get(name, 0) + affinity_weight * s
    if spread_weight:
        for name, s in spread_scores(task, nodes, view, inclusion).items():
            found[name] = found.get(name, 0) + spread_weight * s
    return dict(found) or None
