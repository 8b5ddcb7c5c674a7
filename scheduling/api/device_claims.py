"""A ResourceClaim (resource.k8s.io/v1) as one session reads it: what it asks for, and what it has.

A claim asks for devices of a class, with selectors of its own, a count or `All`, or a list of
`firstAvailable` alternatives (`Option`), and constrains its requests to devices sharing an
attribute (`MatchAttribute`); its `status.allocation` records the devices it was given. Which
devices a pod's claims get is the `dynamicresources` plugin's; this module only parses. Apart
from the slices (`scheduling/api/device_slices.py`) because a claim is the demand and a slice
the supply, read from different objects by different rules.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from scheduling.api import constraints
from scheduling.api.constraints import NodeSelector
from scheduling.api.device_slices import DeviceId
from scheduling.api.requests import Obj, as_list, as_obj

ALL: Final = "All"
EXACT_COUNT: Final = "ExactCount"

ClaimKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class Option:
    """One way to satisfy a request: the request itself, or one of its `firstAvailable`."""

    name: str  # the result's request name ("<request>" or "<request>/<subrequest>")
    device_class: str
    selectors: tuple[str, ...]
    all: bool  # allocationMode All: every matching device, at least one
    count: int
    path: str  # where it is in the claim, for messages ("spec.devices.requests[0].exactly")


@dataclass(frozen=True)
class Request:
    name: str
    options: tuple[Option, ...]  # tried in order; one for an `exactly` request


@dataclass(frozen=True)
class MatchAttribute:
    """Every device of these requests (none named: all of the claim's) has the same value of
    `attribute`."""

    requests: tuple[str, ...]
    attribute: str  # qualified

    def covers(self, request: str) -> bool:
        return not self.requests or request.partition("/")[0] in self.requests


@dataclass(frozen=True)
class Allocation:
    """A claim's `status.allocation`: its devices and where they can be reached from."""

    devices: tuple[DeviceId, ...]
    node_selector: NodeSelector | None  # None: every node

    def reaches(self, node: str, labels: Mapping[str, str]) -> bool:
        if self.node_selector is None:
            return True
        return constraints.selector_matches(self.node_selector, node, labels)


@dataclass(frozen=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    requests: tuple[Request, ...]
    constraints: tuple[MatchAttribute, ...] = ()
    config: tuple[Obj, ...] = ()  # spec.devices.config[]: `{requests, opaque}`
    allocation: Allocation | None = None  # None: not allocated
    reserved_for: tuple[str, ...] = ()  # uids of the pods using it
    owner_pod: str = ""  # uid of the pod it was made for from a template ("": none)
    deleting: bool = False

    @property
    def key(self) -> ClaimKey:
        return (self.namespace, self.name)


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def selector_expressions(value: object) -> tuple[str, ...]:
    """The CEL expressions of a `selectors` list (a claim's request, or a DeviceClass)."""
    return tuple(
        str(as_obj(s.get("cel")).get("expression") or "") for s in as_list(value) if s.get("cel")
    )


def _option(name: str, body: Obj, path: str) -> Option:
    mode = str(body.get("allocationMode") or EXACT_COUNT)
    count = body.get("count")
    return Option(
        name=name,
        device_class=str(body.get("deviceClassName") or ""),
        selectors=selector_expressions(body.get("selectors")),
        all=mode == ALL,
        count=count if isinstance(count, int) and count > 0 else 1,
        path=path,
    )


def _request(index: int, request: Obj) -> Request:
    name = str(request.get("name") or "")
    path = f"spec.devices.requests[{index}]"
    if request.get("exactly") is not None:
        return Request(name, (_option(name, as_obj(request.get("exactly")), f"{path}.exactly"),))
    options = tuple(
        _option(f"{name}/{sub.get('name') or ''}", sub, f"{path}.firstAvailable[{i}]")
        for i, sub in enumerate(as_list(request.get("firstAvailable")))
    )
    return Request(name, options)


def _allocation(status: Obj) -> Allocation | None:
    allocation = status.get("allocation")
    if not isinstance(allocation, dict):
        return None
    results = as_list(as_obj(allocation.get("devices")).get("results"))
    selector = allocation.get("nodeSelector")
    return Allocation(
        devices=tuple(
            DeviceId(str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device")))
            for r in results
        ),
        node_selector=NodeSelector.model_validate(selector) if isinstance(selector, dict) else None,
    )


def parse_claim(claim: Obj) -> ResourceClaim:
    meta, spec = as_obj(claim.get("metadata")), as_obj(claim.get("spec"))
    devices, status = as_obj(spec.get("devices")), as_obj(claim.get("status"))
    owner = next(
        (
            str(o.get("uid") or "")
            for o in as_list(meta.get("ownerReferences"))
            if o.get("kind") == "Pod" and o.get("controller")
        ),
        "",
    )
    return ResourceClaim(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        requests=tuple(_request(i, r) for i, r in enumerate(as_list(devices.get("requests")))),
        constraints=tuple(
            MatchAttribute(
                requests=tuple(str(r) for r in _list(c.get("requests"))),
                attribute=str(c.get("matchAttribute") or ""),
            )
            for c in as_list(devices.get("constraints"))
            if c.get("matchAttribute")
        ),
        config=tuple(as_list(devices.get("config"))),
        allocation=_allocation(status),
        reserved_for=tuple(str(r.get("uid") or "") for r in as_list(status.get("reservedFor"))),
        owner_pod=owner,
        deleting=bool(meta.get("deletionTimestamp")),
    )
