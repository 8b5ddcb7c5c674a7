"""The devices of Dynamic Resource Allocation (resource.k8s.io/v1) as one session sees them.

Drivers publish their devices in ResourceSlices (a pool per driver and node, or reachable from
many nodes), a DeviceClass names a kind of device by CEL selectors, and a ResourceClaim asks
for devices of a class, with selectors of its own, a count or `All`, and constraints across its
requests. This module parses those objects, as the session reads them, into `DeviceWorld`, and
answers which devices a selector accepts: CEL is evaluated by the `cel` library (the Rust
cel-interpreter's bindings, `common-expression-language` on PyPI) with Kubernetes' `quantity()`
and `semver()` functions added, each expression compiled once per process and each
(expression, device) answer remembered, since slices rarely change between sessions. Which
devices a pod's claims get is the `dynamicresources` plugin's.

What is read as kube-scheduler reads it: only a pool's newest generation counts, and a pool
whose slices of that generation are not all published yet is left out; attribute and capacity
names without a domain take their driver's; the devices already given to claims (their
`status.allocation`), and those the scheduler has decided on but not written yet (its durable
assumptions, `in_flight`), are taken.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any, Final, NamedTuple

import cel

from models.quantity import format_quantity, parse_quantity
from models.signals.scheduler import ClaimPlan
from scheduling.api import constraints
from scheduling.api.constraints import NodeSelector
from scheduling.api.requests import Obj, as_list, as_obj

# ResourceQuota's name for the devices of one class (`<class>.deviceclass.resource.k8s.io/devices`):
# the dimension a queue's capability, deserved and guarantee count DRA devices in.
DEVICES_SUFFIX: Final = ".deviceclass.resource.k8s.io/devices"
ALL: Final = "All"
EXACT_COUNT: Final = "ExactCount"
_MEMO_LIMIT: Final = 200_000  # (expression, device) answers kept per process
_SEMVER: Final = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")

ClaimKey = tuple[str, str]  # (namespace, name)


def device_dimension(device_class: str) -> str:
    """The resource name a queue quota counts `device_class`'s devices under."""
    return f"{device_class}{DEVICES_SUFFIX}"


def is_device_dimension(name: str) -> bool:
    return name.endswith(DEVICES_SUFFIX)


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


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]  # CEL expressions, all of which must accept a device
    config: tuple[Obj, ...] = ()  # spec.config[]: each `{opaque: {driver, parameters}}`


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
    `quantity` functions below)."""
    by_domain: dict[str, dict[str, object]] = {}
    for name, value in attributes.items():
        domain, _, short = name.rpartition("/")
        by_domain.setdefault(domain, {})[short] = value
    caps: dict[str, dict[str, object]] = {}
    for name, text in capacity.items():
        domain, _, short = name.rpartition("/")
        caps.setdefault(domain, {})[short] = text
    return {"driver": driver, "attributes": by_domain, "capacity": caps}


def _canonical(text: object) -> str:
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
            _qualified(driver, str(k)): _canonical(as_obj(v).get("value"))
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


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _selectors(value: object) -> tuple[str, ...]:
    return tuple(
        str(as_obj(s.get("cel")).get("expression") or "") for s in as_list(value) if s.get("cel")
    )


def _option(name: str, body: Obj, path: str) -> Option:
    mode = str(body.get("allocationMode") or EXACT_COUNT)
    count = body.get("count")
    return Option(
        name=name,
        device_class=str(body.get("deviceClassName") or ""),
        selectors=_selectors(body.get("selectors")),
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


def parse_class(device_class: Obj) -> DeviceClass:
    meta, spec = as_obj(device_class.get("metadata")), as_obj(device_class.get("spec"))
    return DeviceClass(
        name=str(meta.get("name") or ""),
        selectors=_selectors(spec.get("selectors")),
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
        devices = [d for s in _usable_slices(slices) for d in _devices_of(s)]
        order = {s: i for i, s in enumerate(sorted({(d.id.driver, d.id.pool) for d in devices}))}
        devices.sort(key=lambda d: order[(d.id.driver, d.id.pool)])  # stable: slice order kept
        parsed = (parse_claim(c) for c in claims)
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
            n = sum(1 for d in local if accepts(device_class.selectors, d) is True)
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


# --- CEL -------------------------------------------------------------------------------------


class SelectorError(ValueError):
    """A selector that does not compile, or fails on a device (not a plain no)."""


def _quantity_of(value: object) -> Fraction:
    try:
        return parse_quantity(str(value))
    except ValueError as e:
        raise ValueError(f"not a quantity: {value!r}") from e


def _version_of(value: object) -> tuple[int, int, int, tuple[int, str]]:
    found = _SEMVER.match(str(value))
    if found is None:
        raise ValueError(f"not a semantic version: {value!r}")
    major, minor, patch, pre = found.groups()
    # A pre-release sorts before its release; releases compare by numbers alone.
    return int(major), int(minor), int(patch), (0, pre) if pre else (1, "")


def _compare(left: object, right: object) -> int:
    """Kubernetes' `compareTo` of two quantities, or of two semantic versions."""
    a: Any
    b: Any
    if _SEMVER.match(str(left)) and _SEMVER.match(str(right)):
        a, b = _version_of(left), _version_of(right)
    else:
        a, b = _quantity_of(left), _quantity_of(right)
    return int(a > b) - int(a < b)


_FUNCTIONS: Final[dict[str, Any]] = {
    "quantity": lambda text: _checked(_quantity_of, text),
    "semver": lambda text: _checked(_version_of, text),
    "isQuantity": lambda text: _is(lambda: _quantity_of(text)),
    "isSemver": lambda text: _is(lambda: _version_of(text)),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "asInteger": lambda q: int(_quantity_of(q)),
    "asApproximateFloat": lambda q: float(_quantity_of(q)),
    "major": lambda v: _version_of(v)[0],
    "minor": lambda v: _version_of(v)[1],
    "patch": lambda v: _version_of(v)[2],
}


def _checked(parse: Any, text: object) -> str:
    """`quantity("40Gi")` and `semver("1.2.3")`: the text, canonical, once it parses."""
    parse(text)
    return _canonical(text) if parse is _quantity_of else str(text)


def _is(parse: Any) -> bool:
    try:
        parse()
    except ValueError:
        return False
    return True


@lru_cache(maxsize=4096)
def _program(expression: str) -> Any:
    try:
        return cel.compile(expression)
    except Exception as e:  # the library raises ValueError, and others on odd input
        raise SelectorError(f"compile error: {e}") from e


def compile_error(expression: str) -> str | None:
    """Why `expression` does not compile (None: it does)."""
    try:
        _program(expression)
    except SelectorError as e:
        return str(e)
    return None


_MEMO: dict[tuple[str, DeviceId, str], bool | str] = {}


def _evaluate(expression: str, device: Device) -> bool | str:
    key = (expression, device.id, device.generation)
    found = _MEMO.get(key)
    if found is not None:
        return found
    try:
        program = _program(expression)
        value = program.execute(cel.Context(variables={"device": device.cel}, functions=_FUNCTIONS))
        answer: bool | str = (
            value if isinstance(value, bool) else f"result is {type(value).__name__}, not bool"
        )
    except SelectorError as e:
        answer = str(e)
    except Exception as e:  # a missing attribute or a type mismatch, at runtime
        answer = f"runtime error: {e}"
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = answer
    return answer


def accepts(selectors: Iterable[str], device: Device) -> bool | str:
    """True when every selector accepts `device`, False when one does not, else why one
    failed (a compile or runtime error, which kube-scheduler reports rather than skips)."""
    for expression in selectors:
        answer = _evaluate(expression, device)
        if answer is not True:
            return answer
    return True
