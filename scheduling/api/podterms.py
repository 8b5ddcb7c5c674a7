"""The pod fields the rules about other pods read: pod (anti-)affinity, spread, host ports,
CSI volumes.

Parsed from the Kubernetes wire form like `scheduling.api.constraints`, and frozen so a snapshot can
be shared by every step of a session. `PodOnNode` is what the session keeps of each pod on a
node for these rules (its namespace, labels, own terms, ports and volumes), so an existing
pod's labels can satisfy an incoming pod's terms and its own terms can refuse the incoming pod.
The rules themselves are the inter-pod plugins (`scheduling.plugins`: `interpodaffinity`,
`topologyspread`, `nodeports`, `volumelimits`, over the session's `podview`).

A term's `namespaceSelector` is only understood when empty (`{}`: every namespace): the session
does not read namespaces, so a non-empty one adds no namespace to the term's `namespaces`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduling.api.requests import Obj, as_list, as_obj

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
ALL_IPS: Final = "0.0.0.0"  # a host port bound on every address


class _Kube(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class LabelRequirement(_Kube):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()

    def holds(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        return False


class LabelSelector(_Kube):
    """A label selector; `{}` selects every pod (a missing selector, None, selects none)."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.holds(labels) for r in self.match_expressions
        )

    def with_labels(self, extra: Mapping[str, str]) -> LabelSelector:
        """The selector narrowed by `extra` (matchLabelKeys resolved from the pod's labels)."""
        return self.model_copy(update={"match_labels": {**self.match_labels, **extra}})


def selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    return selector is not None and selector.matches(labels)


class PodAffinityTerm(_Kube):
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    topology_key: str = ""

    def matches(self, owner: str, namespace: str, labels: Mapping[str, str]) -> bool:
        """kube's AffinityTerm.Matches for a term of a pod in namespace `owner`: no namespaces
        and no namespaceSelector mean the owner's own namespace."""
        if self.namespace_selector is None and not self.namespaces:
            covered = namespace == owner
        else:
            every = self.namespace_selector is not None and self.namespace_selector.empty
            covered = every or namespace in self.namespaces
        return covered and selects(self.label_selector, labels)


class WeightedPodAffinityTerm(_Kube):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = Field(default_factory=PodAffinityTerm)


class PodAffinity(_Kube):
    """A pod's own inter-pod terms, required and preferred, affinity and anti-affinity."""

    required: tuple[PodAffinityTerm, ...] = ()
    required_anti: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.required or self.required_anti or self.scores)

    @property
    def scores(self) -> bool:
        """Terms that score an incoming pod when this pod is already placed (required
        anti-affinity only filters)."""
        return bool(self.required or self.preferred or self.preferred_anti)


class SpreadConstraint(_Kube):
    """topologySpreadConstraints entry, matchLabelKeys already merged into the selector."""

    max_skew: int = 1
    topology_key: str = ""
    when_unsatisfiable: str = DO_NOT_SCHEDULE
    label_selector: LabelSelector | None = None
    min_domains: int | None = None  # None: 1
    node_affinity_policy: str | None = None  # None: Honor
    node_taints_policy: str | None = None  # None: Ignore
    match_label_keys: tuple[str, ...] = ()


class HostPort(_Kube):
    """A container port bound on the node; "" host IP reads as every address, "" as TCP."""

    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = Field(default="", alias="hostIP")

    @property
    def address(self) -> tuple[str, str, int]:
        return (self.host_ip or ALL_IPS, self.protocol or "TCP", self.host_port)

    def conflicts(self, other: HostPort) -> bool:
        """kube's HostPortInfo.CheckConflict: same protocol and port, and either address is
        every address or both are the same one."""
        ip, protocol, port = self.address
        other_ip, other_protocol, other_port = other.address
        if port <= 0 or (protocol, port) != (other_protocol, other_port):
            return False
        return ALL_IPS in (ip, other_ip) or ip == other_ip


class AttachedVolume(NamedTuple):
    """A CSI volume attached to a node for its pods: the CSI driver, and one name per volume."""

    driver: str
    name: str


class PodOnNode(BaseModel):
    """A pod on a node, as the rules about other pods see it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str  # "<namespace>/<name>"
    namespace: str
    node: str
    labels: dict[str, str] = Field(default_factory=dict)
    affinity: PodAffinity | None = None  # None: no pod (anti-)affinity terms
    host_ports: tuple[HostPort, ...] = ()
    volumes: tuple[AttachedVolume, ...] = ()  # CSI volumes it holds on the node
    deleting: bool = False  # being deleted: no longer counted for topology spread


_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


def pod_affinity(spec: Obj) -> PodAffinity | None:
    """The pod's podAffinity and podAntiAffinity terms; None: it has none."""
    affinity = as_obj(spec.get("affinity"))
    near, away = as_obj(affinity.get("podAffinity")), as_obj(affinity.get("podAntiAffinity"))
    found = PodAffinity(
        required=tuple(PodAffinityTerm.model_validate(t) for t in as_list(near.get(_REQUIRED))),
        required_anti=tuple(
            PodAffinityTerm.model_validate(t) for t in as_list(away.get(_REQUIRED))
        ),
        preferred=tuple(
            WeightedPodAffinityTerm.model_validate(t) for t in as_list(near.get(_PREFERRED))
        ),
        preferred_anti=tuple(
            WeightedPodAffinityTerm.model_validate(t) for t in as_list(away.get(_PREFERRED))
        ),
    )
    return None if found.is_empty else found


def spread_constraints(spec: Obj, labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    """topologySpreadConstraints, each selector narrowed by its matchLabelKeys (the pod's
    values of those keys), as the scheduler merges them."""
    found = []
    for raw in as_list(spec.get("topologySpreadConstraints")):
        constraint = SpreadConstraint.model_validate(raw)
        keys = {k: labels[k] for k in constraint.match_label_keys if k in labels}
        if keys and constraint.label_selector is not None:
            selector = constraint.label_selector.with_labels(keys)
            constraint = constraint.model_copy(update={"label_selector": selector})
        found.append(constraint)
    return tuple(found)


def host_ports(spec: Obj) -> tuple[HostPort, ...]:
    """Ports bound on the node: those of containers and of sidecars (restartPolicy Always
    init containers), which run as long as the pod does."""
    containers = [
        c for c in as_list(spec.get("initContainers")) if c.get("restartPolicy") == "Always"
    ] + as_list(spec.get("containers"))
    return tuple(
        HostPort.model_validate(p)
        for c in containers
        for p in as_list(c.get("ports"))
        if isinstance(port := p.get("hostPort"), int) and port > 0
    )
