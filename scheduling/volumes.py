"""The volume each unbound claim of a placed pod gets: a static PV, or one provisioned on the node.

The scheduler decides and the pod's JobWorkflow carries the plan out when it binds. A claim
already bound to a PV needs nothing. Otherwise it gets the first Available PV (by name) of its
storage class that no other claim of the same pod took; failing that, a claim whose class has a
provisioner is provisioned on the node the pod was placed on. A claim with neither is left
alone and waits for a PV to appear.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from models.signals import VolumePlan
from scheduling.observed import ObservedPod, namespaced_name
from scheduling.requests import Obj, as_obj

NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"  # the class of static PVs only
AVAILABLE: Final = "Available"  # a PV's phase while no claim holds it


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    volume_name: str  # "": not bound to a PV yet
    storage_class: str  # "": no class named

    @classmethod
    def parse(cls, claim: Obj) -> Claim:
        spec = as_obj(claim.get("spec"))
        return cls(
            *namespaced_name(claim),
            volume_name=str(spec.get("volumeName") or ""),
            storage_class=str(spec.get("storageClassName") or ""),
        )


@dataclass(frozen=True)
class PersistentVolume:
    name: str
    storage_class: str  # "": no class named
    available: bool  # no claim holds it

    @classmethod
    def parse(cls, volume: Obj) -> PersistentVolume:
        return cls(
            name=namespaced_name(volume)[1],
            storage_class=str(as_obj(volume.get("spec")).get("storageClassName") or ""),
            available=as_obj(volume.get("status")).get("phase") == AVAILABLE,
        )


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
    """The claims, PVs and storage classes one session sees."""

    claims: Mapping[tuple[str, str], Claim]  # by (namespace, name)
    volumes: tuple[PersistentVolume, ...]  # by name
    classes: Mapping[str, StorageClass]  # by name

    @classmethod
    def parse(
        cls, claims: Iterable[Obj], volumes: Iterable[Obj], classes: Iterable[Obj]
    ) -> Storage:
        return cls(
            claims={(c.namespace, c.name): c for c in map(Claim.parse, claims)},
            volumes=tuple(sorted(map(PersistentVolume.parse, volumes), key=lambda v: v.name)),
            classes={c.name: c for c in map(StorageClass.parse, classes)},
        )


def volume_plan(pod: ObservedPod, storage: Storage) -> VolumePlan:
    """What binding `pod`'s unbound claims on its node takes: static PVs, then provisioning."""
    used: set[str] = set()
    static: list[tuple[str, str]] = []
    provision: list[str] = []
    for name in pod.claims:
        claim = storage.claims.get((pod.namespace, name))
        if claim is None or claim.volume_name:
            continue
        pv = next(
            (
                v.name
                for v in storage.volumes
                if v.available and v.storage_class == claim.storage_class and v.name not in used
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
