"""The session's pods on nodes, for the kube plugins that judge a pod by the others.

kube-scheduler's InterPodAffinity, PodTopologySpread, NodePorts and NodeVolumeLimits (one
module each here), which Volcano's predicates and nodeorder plugins run, need to know every pod
on every node, so the session keeps a `PodView` that moves with it: a task allocated or
pipelined onto a node joins that node's pods, one deallocated, unpipelined or evicted leaves
it, and undoing an operation restores exactly the entry it removed, so a gang's second pod sees
its first and a discarded statement leaves no trace.

Most sessions use none of this. The view is inactive, and costs one attribute test per check,
unless some task of the snapshot has pod (anti-)affinity, spread constraints, host ports or CSI
volumes, or some pod on a node has pod (anti-)affinity terms (its anti-affinity can refuse
anyone).

Per task, the cluster-wide counts (matching pods per topology domain) are computed once, as
kube's PreFilter does, then brought up to date by the view's changes since (kube's AddPod and
RemovePod), shared by tasks alike (a gang's replicas); each node is then a lookup. The filters
read them (`interpodaffinity.check`, `topologyspread.check`); the scores (preferred terms,
existing pods' terms, ScheduleAnyway spread) are normalised over the candidate nodes as kube
normalises them and reach `scoring.best_node` through `scoring.extra_scores`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from scheduling.api.podterms import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    PodAffinityTerm,
    PodOnNode,
    SpreadConstraint,
)
from scheduling.api.snapshot import NodeInfo, NodeName, Snapshot, TaskInfo, pod_on_node

MAX_SCORE: Final = 100  # kube's MaxNodeScore, the top of every normalised score
_NO_DOMAIN: Final = 2**31 - 1  # kube's critical path before any domain is seen

# (node affinity passes, node taints are tolerated) for the task on the node: the spread's
# nodeAffinityPolicy and nodeTaintsPolicy, judged by `scheduling.plugins.predicates`.
Inclusion = Callable[[TaskInfo, NodeInfo], tuple[bool, bool]]
Pair = tuple[str, str]  # (topology key, value)


def uses_rules(task: TaskInfo) -> bool:
    return (
        task.pod_affinity is not None
        or bool(task.spread)
        or bool(task.host_ports)
        or bool(task.volumes)
    )


@dataclass
class Spread:
    constraint: SpreadConstraint
    domain_of: dict[str, str]  # each node the constraint counts -> its domain value
    counts: dict[str, int]  # matching pods per domain value
    minimum: int = _NO_DOMAIN  # the smallest count, 0 with fewer domains than minDomains

    def settle(self) -> None:
        minimum = min(self.counts.values(), default=_NO_DOMAIN)
        wanted = self.constraint.min_domains
        self.minimum = 0 if len(self.counts) < (wanted if wanted is not None else 1) else minimum


@dataclass
class Prepared:
    """One task shape's cluster-wide counts (kube's PreFilter state) at view `version`."""

    version: int
    affinity: Counter[Pair]  # pods matching all required affinity terms, per domain
    anti: Counter[Pair]  # pods matching a required anti-affinity term, per domain
    existing: Counter[Pair]  # placed pods whose required anti-affinity takes the task
    self_match: bool  # the task matches its own affinity terms
    spread: tuple[Spread, ...]  # its DoNotSchedule constraints


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
        self._prepared: dict[str, Prepared] = {}
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

    def prepared(self, task: TaskInfo, inclusion: Inclusion) -> Prepared:
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


def _record(counts: Counter[Pair], node: NodeInfo, key: str, sign: int) -> None:
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


def _tally(found: Prepared, task: TaskInfo, node: NodeInfo, pod: PodOnNode, sign: int) -> None:
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


def _prepare(view: PodView, task: TaskInfo, inclusion: Inclusion) -> Prepared:
    required = task.pod_affinity.required if task.pod_affinity is not None else ()
    hard = [c for c in task.spread if c.when_unsatisfiable == DO_NOT_SCHEDULE]
    keys = [c.topology_key for c in hard]
    spreads = []
    for c in hard:
        domain_of: dict[str, str] = {
            node.name: node.labels[c.topology_key]
            for node in view.nodes.values()
            if all(k in node.labels for k in keys) and included(task, node, c, inclusion)
        }
        spreads.append(Spread(c, domain_of, dict.fromkeys(domain_of.values(), 0)))
    self_match = _all_match(required, task.namespace, task.namespace, task.labels)
    found = Prepared(view.version, Counter(), Counter(), Counter(), self_match, tuple(spreads))
    for node, pod in view.pods():
        _tally(found, task, node, pod, +1)
    for spread in found.spread:
        spread.settle()
    return found


def included(task: TaskInfo, node: NodeInfo, c: SpreadConstraint, inclusion: Inclusion) -> bool:
    """The node counts for the constraint under its nodeAffinity/nodeTaints policies."""
    affinity_policy = c.node_affinity_policy or HONOR
    taints_policy = c.node_taints_policy or IGNORE
    if affinity_policy != HONOR and taints_policy != HONOR:
        return True
    affinity_ok, taints_ok = inclusion(task, node)
    return (affinity_policy != HONOR or affinity_ok) and (taints_policy != HONOR or taints_ok)


def matching(view: PodView, node: str, task: TaskInfo, c: SpreadConstraint) -> int:
    """Pods on the node that the spread constraint counts."""
    return sum(1 for p in view.on_node.get(node, {}).values() if _counted(task, p, c))
