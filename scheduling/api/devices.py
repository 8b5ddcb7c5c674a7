"""The devices of Dynamic Resource Allocation (resource.k8s.io/v1) as one session sees them.

Drivers publish their devices in ResourceSlices (`scheduling/api/device_slices.py`), a
DeviceClass names a kind of device by CEL selectors (`scheduling/api/device_selectors.py`), and
a ResourceClaim asks for devices of a class (`scheduling/api/device_claims.py`). This module
holds what one session knows of them, `DeviceWorld`: the devices already given to claims (their
`status.allocation`), and those the scheduler has decided on but not written yet (its durable
assumptions, `in_flight`), are taken. Which devices a pod's claims get is the
`dynamicresources` plugin's.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final

from models.signals.scheduler import ClaimPlan
from scheduling.api import device_claims, device_selectors, device_slices
from scheduling.api.constraints import NodeSelector
from scheduling.api.device_claims import Allocation, ClaimKey, ResourceClaim
from scheduling.api.device_slices import Device, DeviceId
from scheduling.api.requests import Obj, as_list, as_obj

# ResourceQuota's name for the devices of one class (`<class>.deviceclass.resource.k8s.io/devices`):
# the dimension a queue's capability, deserved and guarantee count DRA devices in.
DEVICES_SUFFIX: Final = ".deviceclass.resource.k8s.io/devices"


def device_dimension(device_class: str) -> str:
    """The resource name a queue quota counts `device_class`'s devices under."""
    return f"{device_class}{DEVICES_SUFFIX}"


def is_device_dimension(name: str) -> bool:
    return name.endswith(DEVICES_SUFFIX)


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]  # CEL expressions, all of which must accept a device
    config: tuple[Obj, ...] = ()  # spec.config[]: each `{opaque: {driver, parameters}}`


def parse_class(device_class: Obj) -> DeviceClass:
    meta, spec = as_obj(device_class.get("metadata")), as_obj(device_class.get("spec"))
    return DeviceClass(
        name=str(meta.get("name") or ""),
        selectors=device_claims.selector_expressions(spec.get("selectors")),
        config=tuple(as_list(spec.get("config"))),
    )


@dataclass(frozen=True)
class DeviceWorld:
    """Everything one session knows of devices; `devices` sorted by id, as kube-scheduler
    walks pools (driver, then pool) and a slice's devices in order."""

    devices: tuple[Device, ...] = ()
    classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    claims: Mapping[ClaimKey, ResourceClaim] = field(default_factory=dict)
    # Claims the scheduler decided on and has not seen written yet: their devices are taken.
    in_flight: Mapping[ClaimKey, ClaimPlan] = field(default_factory=dict)

    @classmethod
    def parse(
        cls,
        slices: Iterable[Obj],
        classes: Iterable[Obj],
        claims: Iterable[Obj],
        in_flight: Mapping[ClaimKey, ClaimPlan] | None = None,
    ) -> DeviceWorld:
        devices = device_slices.parse_slices(slices)
        order = {s: i for i, s in enumerate(sorted({(d.id.driver, d.id.pool) for d in devices}))}
        devices.sort(key=lambda d: order[(d.id.driver, d.id.pool)])  # stable: slice order kept
        parsed = (device_claims.parse_claim(c) for c in claims)
        return cls(
            devices=tuple(devices),
            classes={c.name: c for c in map(parse_class, classes)},
            claims={c.key: c for c in parsed},
            in_flight=dict(in_flight or {}),
        )

    @property
    def empty(self) -> bool:
        return not self.devices and not self.claims

    @cached_property
    def by_id(self) -> Mapping[DeviceId, Device]:
        return {d.id: d for d in self.devices}

    @cached_property
    def taken(self) -> Mapping[DeviceId, ClaimKey]:
        """Devices given to a claim, in its status or by an assumption not yet written."""
        out: dict[DeviceId, ClaimKey] = {}
        for key, claim in self.claims.items():
            if claim.allocation is not None:
                out.update(dict.fromkeys(claim.allocation.devices, key))
        for key, plan in self.in_flight.items():
            found = self.claims.get(key)
            if found is not None and found.allocation is None and found.uid in ("", plan.uid):
                for r in plan.devices:
                    out[DeviceId(r.driver, r.pool, r.device)] = key
        return out

    def allocation_of(self, key: ClaimKey) -> Allocation | None:
        """The claim's allocation, written or assumed (None: neither)."""
        claim = self.claims.get(key)
        if claim is not None and claim.allocation is not None:
            return claim.allocation
        plan = self.in_flight.get(key)
        if plan is None or not plan.devices or (claim is not None and claim.uid != plan.uid):
            return None
        return Allocation(
            devices=tuple(DeviceId(r.driver, r.pool, r.device) for r in plan.devices),
            node_selector=node_selector(plan.node) if plan.node else None,
        )

    def reachable(self, node: str, labels: Mapping[str, str]) -> tuple[Device, ...]:
        return tuple(d for d in self.devices if d.reaches(node, labels))

    def class_counts(self, node: str, labels: Mapping[str, str]) -> dict[str, int]:
        """Devices on `node` (its own slices only) each class accepts: the node's allocatable
        in the classes' quota dimensions, so a queue's share of devices has a cluster total."""
        local = [d for d in self.devices if d.node == node]
        counts: dict[str, int] = {}
        for name, device_class in sorted(self.classes.items()):
            n = sum(1 for d in local if device_selectors.accepts(device_class.selectors, d) is True)
            if n:
                counts[device_dimension(name)] = n
        return counts


def node_selector(node: str) -> NodeSelector:
    """The allocation's nodeSelector for devices of one node, as kube-scheduler writes it."""
    return NodeSelector.model_validate(
        {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        }
    )
