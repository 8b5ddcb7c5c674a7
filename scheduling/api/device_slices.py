"""The devices drivers publish in ResourceSlices (resource.k8s.io/v1), as kube-scheduler reads them.

A driver publishes its devices in slices, a pool per driver and node (or reachable from many
nodes). Only a pool's newest generation counts, and a pool whose slices of that generation are
not all published yet is left out; attribute and capacity names without a domain take their
driver's. Each device also carries the CEL `device` variable its selectors are evaluated on
(`scheduling/api/device_selectors.py`). Apart from the claims and the session's view
(`scheduling/api/devices.py`) because both build on a device's identity, and this is where it is
read from the API object.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from models.quantity import format_quantity, parse_quantity
from scheduling.api import constraints
from scheduling.api.constraints import NodeSelector
from scheduling.api.requests import Obj, as_list, as_obj


class DeviceId(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Device:
    id: DeviceId
    node: str  # the slice's nodeName; "": not tied to one node
    reach: NodeSelector | None  # the slice's nodeSelector; None with node "": every node
    attributes: Mapping[str, object]  # qualified name ("<domain>/<id>") -> value
    cel: Mapping[str, object] = field(compare=False)  # the CEL `device` variable
    generation: str = ""  # the slice's resourceVersion: a changed slice is evaluated anew

    def reaches(self, node: str, labels: Mapping[str, str]) -> bool:
        if self.node:
            return self.node == node
        return self.reach is None or constraints.selector_matches(self.reach, node, labels)


def _qualified(driver: str, name: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _attribute_value(value: Obj) -> object:
    """A DeviceAttribute's one value: int, bool, string, or version (kept as its text)."""
    for kind in ("int", "bool", "string", "version"):
        if kind in value:
            return value[kind]
    return None


def _cel_device(driver: str, attributes: Mapping[str, object], capacity: Mapping[str, str]) -> Obj:
    """The `device` variable of Kubernetes' device selectors: driver, and attributes and
    capacity by domain, then by name (quantities as their canonical text, read by the
    `quantity` functions of `device_selectors`)."""
    by_domain: dict[str, dict[str, object]] = {}
    for name, value in attributes.items():
        domain, _, short = name.rpartition("/")
        by_domain.setdefault(domain, {})[short] = value
    caps: dict[str, dict[str, object]] = {}
    for name, text in capacity.items():
        domain, _, short = name.rpartition("/")
        caps.setdefault(domain, {})[short] = text
    return {"driver": driver, "attributes": by_domain, "capacity": caps}


def canonical_quantity(text: object) -> str:
    """A quantity's canonical text ("40Gi"), as CEL's `quantity()` compares it; else as it is."""
    try:
        return format_quantity(parse_quantity(str(text)))
    except ValueError:
        return str(text)


def _devices_of(slice_: Obj) -> list[Device]:
    meta, spec = as_obj(slice_.get("metadata")), as_obj(slice_.get("spec"))
    driver = str(spec.get("driver") or "")
    pool = str(as_obj(spec.get("pool")).get("name") or "")
    node = str(spec.get("nodeName") or "")
    selector = spec.get("nodeSelector")
    reach = NodeSelector.model_validate(selector) if isinstance(selector, dict) else None
    out = []
    for device in as_list(spec.get("devices")):
        attributes = {
            _qualified(driver, str(k)): _attribute_value(as_obj(v))
            for k, v in as_obj(device.get("attributes")).items()
        }
        capacity = {
            _qualified(driver, str(k)): canonical_quantity(as_obj(v).get("value"))
            for k, v in as_obj(device.get("capacity")).items()
        }
        out.append(
            Device(
                id=DeviceId(driver, pool, str(device.get("name") or "")),
                node=node,
                reach=reach,
                attributes=attributes,
                cel=_cel_device(driver, attributes, capacity),
                generation=str(meta.get("resourceVersion") or ""),
            )
        )
    return out


def _usable_slices(slices: Iterable[Obj]) -> list[Obj]:
    """The slices of each pool's newest generation, of pools with all of those published."""
    pools: dict[tuple[str, str], list[tuple[int, int, Obj]]] = {}
    for s in slices:
        spec = as_obj(s.get("spec"))
        pool = as_obj(spec.get("pool"))
        generation = pool.get("generation")
        count = pool.get("resourceSliceCount")
        key = (str(spec.get("driver") or ""), str(pool.get("name") or ""))
        pools.setdefault(key, []).append(
            (
                generation if isinstance(generation, int) else 0,
                count if isinstance(count, int) else 1,
                s,
            )
        )
    usable: list[Obj] = []
    for key in sorted(pools):
        entries = pools[key]
        newest = max(g for g, _, _ in entries)
        current = [(c, s) for g, c, s in entries if g == newest]
        if len(current) >= max(c for c, _ in current):
            usable.extend(s for _, s in current)
    return usable


def parse_slices(slices: Iterable[Obj]) -> list[Device]:
    """The devices of the usable slices, in slice order."""
    return [d for s in _usable_slices(slices) for d in _devices_of(s)]
