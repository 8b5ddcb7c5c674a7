"""The volume each unbound claim of a placed pod gets: a static PV, or one provisioned on the node.

The session decides the plan with the placement; the binding carries it out, volumes before
the node (the next session, or `bind_session` when claims wait for a provisioner). A claim
already bound to a PV needs nothing. Otherwise it gets the first Available PV (by name) that
the PV controller would match to it and that no other claim of the same pod took: same storage
class, capacity at least the claim's request, every access mode the claim asks for, labels the
claim's selector accepts, and a node affinity the pod's node meets; failing that, a claim whose
class has a provisioner is provisioned on the node the pod was placed on. A claim with neither
is left alone and waits for a PV to appear. `volume_affinity` gives the predicates the node
affinity of the PVs a pod's claims are bound to, which the pod's node must meet.

`attached` names the CSI volumes a pod's claims put on its node, by driver, and `limits` each
node's CSINode allocatable counts: kube's NodeVolumeLimits refuses a node where the pod's new
volumes would take a driver past its count. A bound claim counts as its PV's driver and volume
handle; an unbound one as its class's provisioner and a handle of its own (one volume per
claim). In-tree volumes that CSI migration would translate are not counted.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Final

from models.quantity import parse_quantity
from models.signals.scheduler import VolumePlan
from scheduling.api import constraints
from scheduling.api.constraints import NodeSelector, NodeSelectorRequirement
from scheduling.api.podterms import AttachedVolume
from scheduling.api.requests import Obj, as_list, as_obj
from scheduling.cache.observed import ObservedPod, namespaced_name

NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"  # the class of static PVs only
AVAILABLE: Final = "Available"  # a PV's phase while no claim holds it
_LABEL_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True)
class LabelSelector:
    """A claim's `selector`: matchLabels and matchExpressions, all of which must hold."""

    match_labels: Mapping[str, str]
    match_expressions: tuple[NodeSelectorRequirement, ...]

    @classmethod
    def parse(cls, selector: Obj) -> LabelSelector:
        return cls(
            match_labels={str(k): str(v) for k, v in as_obj(selector.get("matchLabels")).items()},
            match_expressions=tuple(
                NodeSelectorRequirement.model_validate(e)
                for e in as_list(selector.get("matchExpressions"))
            ),
        )

    def accepts(self, labels: Mapping[str, str]) -> bool:
        """Label-selector operators are In, NotIn, Exists and DoesNotExist: the node ones."""
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.operator in _LABEL_OPERATORS and constraints.matches(r, labels)
            for r in self.match_expressions
        )


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    volume_name: str  # "": not bound to a PV yet
    storage_class: str  # "": no class named
    request: Fraction = Fraction(0)  # resources.requests.storage
    access_modes: frozenset[str] = frozenset()
    selector: LabelSelector | None = None  # None: any PV's labels do

    @classmethod
    def parse(cls, claim: Obj) -> Claim:
        spec = as_obj(claim.get("spec"))
        selector = spec.get("selector")
        return cls(
            *namespaced_name(claim),
            volume_name=str(spec.get("volumeName") or ""),
            storage_class=str(spec.get("storageClassName") or ""),
            request=_quantity(as_obj(as_obj(spec.get("resources")).get("requests")).get("storage")),
            access_modes=_strings(spec.get("accessModes")),
            selector=LabelSelector.parse(as_obj(selector)) if selector is not None else None,
        )


@dataclass(frozen=True)
class PersistentVolume:
    name: str
    storage_class: str  # "": no class named
    available: bool  # no claim holds it
    capacity: Fraction = Fraction(0)
    access_modes: frozenset[str] = frozenset()
    labels: Mapping[str, str] = field(default_factory=dict)
    node_affinity: NodeSelector | None = None  # None: reachable from every node
    csi: AttachedVolume | None = None  # None: not a CSI volume

    @classmethod
    def parse(cls, volume: Obj) -> PersistentVolume:
        meta, spec = as_obj(volume.get("metadata")), as_obj(volume.get("spec"))
        required = as_obj(spec.get("nodeAffinity")).get("required")
        csi = as_obj(spec.get("csi"))
        driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        return cls(
            name=namespaced_name(volume)[1],
            storage_class=str(spec.get("storageClassName") or ""),
            available=as_obj(volume.get("status")).get("phase") == AVAILABLE,
            capacity=_quantity(as_obj(spec.get("capacity")).get("storage")),
            access_modes=_strings(spec.get("accessModes")),
            labels={str(k): str(v) for k, v in as_obj(meta.get("labels")).items()},
            node_affinity=NodeSelector.model_validate(required) if required is not None else None,
            csi=AttachedVolume(driver, f"{driver}/{handle}") if driver and handle else None,
        )

    def reachable(self, node: str, labels: Mapping[str, str]) -> bool:
        """The PV's required node affinity holds for the node (none: every node)."""
        if self.node_affinity is None:
            return True
        return constraints.selector_matches(self.node_affinity, node, labels)

    def matches(self, claim: Claim) -> bool:
        """What the PV controller checks before it binds this PV to `claim`."""
        return (
            self.available
            and self.storage_class == claim.storage_class
            and self.capacity >= claim.request
            and claim.access_modes <= self.access_modes
            and (claim.selector is None or claim.selector.accepts(self.labels))
        )


def _strings(value: object) -> frozenset[str]:
    return (
        frozenset(v for v in value if isinstance(v, str))
        if isinstance(value, list)
        else frozenset()
    )


def _quantity(value: object) -> Fraction:
    """A storage quantity; one that is not (or none) counts as 0."""
    if not isinstance(value, str | int | float):
        return Fraction(0)
    try:
        return parse_quantity(value)
    except ValueError:
        return Fraction(0)


@dataclass(frozen=True)
class StorageClass:
    name: str
    provisioner: str | None  # None: the class names none

    @property
    def provisions(self) -> bool:
        return self.provisioner not in (None, NO_PROVISIONER)

    @classmethod
    def parse(cls, storage_class: Obj) -> StorageClass:
        provisioner = storage_class.get("provisioner")
        return cls(
            name=namespaced_name(storage_class)[1],
            provisioner=None if provisioner is None else str(provisioner),
        )


@dataclass(frozen=True)
class Storage:
    """The claims, PVs, storage classes and node labels one session sees."""

    claims: Mapping[tuple[str, str], Claim]  # by (namespace, name)
    volumes: tuple[PersistentVolume, ...]  # by name
    classes: Mapping[str, StorageClass]  # by name
    nodes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # labels by node name
    limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # node -> driver -> n

    @classmethod
    def parse(
        cls,
        claims: Iterable[Obj],
        volumes: Iterable[Obj],
        classes: Iterable[Obj],
        nodes: Iterable[Obj] = (),
        csi_nodes: Iterable[Obj] = (),
    ) -> Storage:
        return cls(
            claims={(c.namespace, c.name): c for c in map(Claim.parse, claims)},
            volumes=tuple(sorted(map(PersistentVolume.parse, volumes), key=lambda v: v.name)),
            classes={c.name: c for c in map(StorageClass.parse, classes)},
            nodes={
                namespaced_name(n)[1]: {
                    str(k): str(v)
                    for k, v in as_obj(as_obj(n.get("metadata")).get("labels")).items()
                }
                for n in nodes
            },
            limits={namespaced_name(n)[1]: _allocatable(n) for n in csi_nodes},
        )

    @cached_property
    def volumes_by_name(self) -> Mapping[str, PersistentVolume]:
        """Made once per session, not once per pod with claims."""
        return {v.name: v for v in self.volumes}

    def volume_affinity(self, namespace: str, claims: Iterable[str]) -> tuple[NodeSelector, ...]:
        """The node affinity of each PV these claims are bound to (the pod's node must meet
        every one: kube's VolumeBinding filter for bound claims)."""
        by_name = self.volumes_by_name
        out = []
        for name in claims:
            claim = self.claims.get((namespace, name))
            pv = by_name.get(claim.volume_name) if claim is not None else None
            if pv is not None and pv.node_affinity is not None:
                out.append(pv.node_affinity)
        return tuple(out)

    def attached(self, namespace: str, claims: Iterable[str]) -> tuple[AttachedVolume, ...]:
        """The CSI volumes these claims put on the pod's node; a claim without a PV or a
        class naming a driver puts none (NodeVolumeLimits does not count it)."""
        by_name = self.volumes_by_name
        out = []
        for name in claims:
            claim = self.claims.get((namespace, name))
            if claim is None:
                continue
            pv = by_name.get(claim.volume_name)
            if pv is not None and pv.csi is not None:
                out.append(pv.csi)
            elif pv is None and (cls := self.classes.get(claim.storage_class)) is not None:
                driver = cls.provisioner
                if cls.provisions and driver:  # "" provisions, but names no driver to count
                    out.append(AttachedVolume(driver, f"{driver}/claim:{namespace}/{name}"))
        return tuple(out)


def _allocatable(csi_node: Obj) -> dict[str, int]:
    """A CSINode's volume count per driver; a driver with no allocatable count has no limit."""
    found = {}
    for driver in as_list(as_obj(csi_node.get("spec")).get("drivers")):
        count = as_obj(driver.get("allocatable")).get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            found[str(driver.get("name") or "")] = count
    return found


def volume_plan(pod: ObservedPod, storage: Storage, node: str = "") -> VolumePlan:
    """What binding `pod`'s unbound claims on `node` takes: static PVs, then provisioning."""
    used: set[str] = set()
    static: list[tuple[str, str]] = []
    provision: list[str] = []
    labels = storage.nodes.get(node, {})
    for name in pod.claims:
        claim = storage.claims.get((pod.namespace, name))
        if claim is None or claim.volume_name:
            continue
        pv = next(
            (
                v.name
                for v in storage.volumes
                if v.name not in used and v.matches(claim) and v.reachable(node, labels)
            ),
            None,
        )
        storage_class = storage.classes.get(claim.storage_class)
        if pv is not None:
            used.add(pv)
            static.append((name, pv))
        elif storage_class is not None and storage_class.provisions:
            provision.append(name)
    return VolumePlan(static=static, provision=provision)
