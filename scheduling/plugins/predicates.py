"""Can this task go on this node? With kube-scheduler's reasons.

Each predicate returns None when the node passes, else the reason kube-scheduler prints, so
the histogram in a PodGroup's Unschedulable condition reads like `kubectl describe pod`
("0/3 nodes are available: 3 Insufficient cpu"). The resource fit comes first, against the
room that will be free once releasing pods are gone (as Volcano's allocate predicate does), and
reports every short dimension, as NodeResourcesFit does; then pod number, NodeUnschedulable,
NodeAffinity (nodeSelector and required terms), TaintToleration and VolumeBinding (the node
affinity of the PVs the pod's claims are bound to), of which the first failure is reported, as
Volcano stops at the first failing plugin. Given the session's pods on nodes, NodePorts,
PodTopologySpread and InterPodAffinity follow (`nodeports`, `topologyspread`,
`interpodaffinity`, over the session's `podview.PodView`). Last, the nodegroup plugin's rule
when the session gave the task one (`nodegroup`), as it follows predicates in Volcano's tiers.
PreferNoSchedule taints and preferred affinity only score, so they never fail a node here.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Final

from scheduling.api import constraints
from scheduling.api.constraints import (
    UNSCHEDULABLE_TAINT,
    NodeSelectorTerm,
    Taint,
    TaintEffect,
    Toleration,
)
from scheduling.api.devices import is_device_dimension
from scheduling.api.snapshot import NodeInfo, TaskInfo
from scheduling.api.vectors import EMPTY
from scheduling.plugins import interpodaffinity, nodegroup, nodeports, topologyspread, volumelimits
from scheduling.plugins.dynamicresources import DeviceView
from scheduling.plugins.podview import PodView

TOO_MANY_PODS: Final = "Too many pods"
UNSCHEDULABLE: Final = "node(s) were unschedulable"
AFFINITY_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"
VOLUME_CONFLICT: Final = "node(s) had volume node affinity conflict"
_FILTERED_EFFECTS: Final = (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)
_CORDON: Final = Taint(key=UNSCHEDULABLE_TAINT, effect=TaintEffect.NO_SCHEDULE)

Predicate = Callable[[TaskInfo, NodeInfo], "str | None"]


def resources_fit(task: TaskInfo, node: NodeInfo) -> tuple[str, ...]:
    """One "Insufficient <resource>" per dimension the request does not fit the future idle
    room in: idle plus what is being released, less what is already pipelined onto it."""
    capacity, used = node.allocatable, node.used
    if node.releasing != EMPTY or node.pipelined != EMPTY:
        capacity, used = capacity.add(node.releasing), used.add(node.pipelined)
    short = task.request.insufficient(capacity, used)
    # Devices are counted per class for queue quotas only: the claims' own search decides.
    return tuple(f"Insufficient {name}" for name in short if not is_device_dimension(name))


def fits_idle(task: TaskInfo, node: NodeInfo) -> bool:
    """The request fits the idle room now, so it can be bound (not only pipelined)."""
    short = task.request.insufficient(node.allocatable, node.used)
    return all(is_device_dimension(name) for name in short)


def pod_number(task: TaskInfo, node: NodeInfo) -> str | None:
    """A node runs at most `allocatable.pods` pods (kube's "Too many pods")."""
    return TOO_MANY_PODS if node.pod_count + 1 > node.allocatable.pods else None


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint: effect and key match when set; Equal compares the value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.operator in ("", "Equal") and toleration.value == taint.value


def _tolerated(task: TaskInfo, taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in task.tolerations)


def node_unschedulable(task: TaskInfo, node: NodeInfo) -> str | None:
    """A cordoned node takes only pods tolerating the unschedulable NoSchedule taint."""
    if not node.unschedulable:
        return None
    return None if _tolerated(task, _CORDON) else UNSCHEDULABLE


def term_matches(term: NodeSelectorTerm, node: NodeInfo) -> bool:
    """All expressions and fields of the term; an empty term matches no node."""
    return constraints.term_holds(term, node.name, node.labels)


def node_affinity(task: TaskInfo, node: NodeInfo) -> str | None:
    """nodeSelector equality AND any one required term (NodeAffinity's Filter)."""
    if any(node.labels.get(k) != v for k, v in task.node_selector.items()):
        return AFFINITY_MISMATCH
    required = task.required_affinity
    if required is not None and not any(
        term_matches(t, node) for t in required.node_selector_terms
    ):
        return AFFINITY_MISMATCH
    return None


def volume_binding(task: TaskInfo, node: NodeInfo) -> str | None:
    """The PVs the pod's claims are bound to can be reached from the node (kube's
    VolumeBinding filter for bound claims: each PV's required node affinity)."""
    for affinity in task.volume_affinity:
        if not constraints.selector_matches(affinity, node.name, node.labels):
            return VOLUME_CONFLICT
    return None


def taint_toleration(task: TaskInfo, node: NodeInfo) -> str | None:
    """A NoSchedule/NoExecute taint the pod does not tolerate; kube 1.37 no longer names it
    (a taint's value may be private)."""
    for taint in node.taints:
        if taint.effect in _FILTERED_EFFECTS and not _tolerated(task, taint):
            return UNTOLERATED_TAINT
    return None


UNTOLERATED_TAINT: Final = "node(s) had untolerated taint(s)"

PREDICATES: Final[tuple[Predicate, ...]] = (
    pod_number,
    node_unschedulable,
    node_affinity,
    taint_toleration,
    volume_binding,
)


def inclusion(task: TaskInfo, node: NodeInfo) -> tuple[bool, bool]:
    """Whether the node passes the task's node affinity, and tolerates its taints: which
    nodes a topology spread constraint counts (its nodeAffinity/nodeTaints policies)."""
    return node_affinity(task, node) is None, taint_toleration(task, node) is None


def check(
    task: TaskInfo,
    node: NodeInfo,
    fit_resources: bool = True,
    pods: PodView | None = None,
    devices: DeviceView | None = None,
) -> tuple[str, ...]:
    """Why `node` cannot take `task` (empty: it can); backfill skips the resource fit.

    `pods` (the session's pods on nodes) adds the rules about other pods: host ports, topology
    spread, inter-pod affinity; None, or a view no task or pod needs, leaves them out.
    `devices` (the session's device books) adds DynamicResources: the pod's ResourceClaims
    get their devices on the node; None leaves it out.
    """
    if fit_resources and (short := resources_fit(task, node)):
        return short
    for predicate in PREDICATES:
        reason = predicate(task, node)
        if reason is not None:
            return (reason,)
    if devices is not None and (reason := devices.refusal(task, node)) is not None:
        return (reason,)
    found = other_pods(task, node, pods) or nodegroup.refusal(task, node)
    return () if found is None else (found,)


def other_pods(task: TaskInfo, node: NodeInfo, pods: PodView | None) -> str | None:
    """The rules about the pods already on nodes: NodePorts, NodeVolumeLimits,
    PodTopologySpread, then InterPodAffinity; the first reason the node fails, None when it
    passes or nothing uses them."""
    if pods is None or not pods.active or not pods.needs_filter(task):
        return None
    if task.host_ports and (reason := nodeports.check(pods, task, node)):
        return reason
    if task.volumes and node.volume_limits and (reason := volumelimits.check(pods, task, node)):
        return reason
    if not pods.needs_counts(task):
        return None
    prepared = pods.prepared(task, inclusion)
    return topologyspread.check(task, node, prepared) or interpodaffinity.check(
        task, node, prepared
    )


def fit_error(node_count: int, reasons: Iterable[tuple[str, ...]]) -> str:
    """kube's FitError text: "0/3 nodes are available: 2 Insufficient cpu, 1 Too many pods"."""
    histogram = Counter(reason for node in reasons for reason in node)
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    head = f"0/{node_count} nodes are available"
    return f"{head}: {', '.join(parts)}" if parts else head
