"""Resource vectors (Volcano's `api.Resource`) as exact numbers.

Owns the arithmetic every scheduling rule is written in: CPU in milli-cores, memory in bytes,
extended ("scalar") resources in milli-units, and `pods`, the number of pod slots. Quantities
are read as Volcano reads them (`MilliValue`/`Value`, rounded up), so node and pod vectors are
plain integers and cheap to add; only proportion's weighted shares and the overcommit factor
make `Fraction`s, which stay exact. Either way replay gives the same answer on every worker.
The 0.1 epsilon of Volcano's `minResource` is kept in the comparisons so that a rule written
against Volcano's floats decides the same way here.

`pods` is Volcano's `MaxTaskNum`: a node's allocatable has its pod capacity there and each task
takes one slot, but it is no fairness dimension, so the comparisons (`less_equal`, `is_empty`,
`share`, `insufficient`) ignore it; the pod-number predicate alone reads it.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from models.quantity import format_quantity, parse_quantity

Number = int | Fraction  # int for quantities read from objects, Fraction once shares divide

EPSILON: Final = Fraction(1, 10)  # Volcano's minResource
CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
_MILLI: Final = 1000


class Missing(StrEnum):
    """What a dimension absent on the right counts as (Volcano's DimensionDefaultValue)."""

    ZERO = "Zero"
    INFINITY = "Infinity"


def is_scalar_name(name: str) -> bool:
    """Volcano keeps extended (`vendor/x`) and hugepages resources; ephemeral-storage is ignored."""
    return "/" in name or name.startswith("hugepages-")


def _le(left: Number, right: Number) -> bool:
    return left <= right or left - right < EPSILON


_NEW: Final = object.__new__
_SET: Final = object.__setattr__  # Resources is frozen: its own __setattr__ refuses
_FIELDS: Final = frozenset({"milli_cpu", "memory", "pods", "scalars"})


class Resources(BaseModel):
    """One resource vector; immutable, every operation returns a new one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    milli_cpu: Number = 0
    memory: Number = 0  # bytes
    pods: int = 0
    scalars: dict[str, Number] = Field(default_factory=dict)  # milli-units, sorted by name

    @field_validator("scalars")
    @classmethod
    def _sorted(cls, value: dict[str, Number]) -> dict[str, Number]:
        """Sorted keys, so equal vectors dump alike and iteration order never depends on input."""
        return dict(sorted(value.items()))

    @classmethod
    def of(
        cls,
        milli_cpu: Number = 0,
        memory: Number = 0,
        pods: int = 0,
        scalars: Mapping[str, Number] | None = None,  # None: no scalar resources
    ) -> Resources:
        """Trusted construction without validation: the hot path of every add and sub. What
        `model_construct` sets, set directly: a third of its cost, and a session builds a
        vector per task and per job several times over."""
        made = _NEW(cls)
        _SET(
            made,
            "__dict__",
            {
                "milli_cpu": milli_cpu,
                "memory": memory,
                "pods": pods,
                "scalars": dict(sorted(scalars.items())) if scalars else {},
            },
        )
        _SET(made, "__pydantic_fields_set__", set(_FIELDS))
        _SET(made, "__pydantic_extra__", None)
        _SET(made, "__pydantic_private__", None)
        return made

    @classmethod
    def from_resource_list(cls, resources: Mapping[str, str | int | float] | None) -> Resources:
        """A Kubernetes ResourceList ("500m", "4Gi", 2) in Volcano's units, rounded up.

        None (an absent list) is the empty vector.
        """
        cpu, memory, pods = 0, 0, 0
        scalars: dict[str, Number] = {}
        for name, text in (resources or {}).items():
            value = parse_quantity(text)
            if name == CPU:
                cpu = math.ceil(value * _MILLI)
            elif name == MEMORY:
                memory = math.ceil(value)
            elif name == PODS:
                pods = math.ceil(value)
            elif is_scalar_name(name):
                scalars[name] = math.ceil(value * _MILLI)
        return cls.of(cpu, memory, pods, scalars)

    def to_resource_list(self) -> dict[str, str]:
        """The inverse, as a queue's `status.allocated` is written; zero scalars are left out."""
        cpu = Fraction(self.milli_cpu) / _MILLI
        out = {CPU: format_quantity(cpu), MEMORY: format_quantity(Fraction(self.memory))}
        if self.pods:
            out[PODS] = str(self.pods)
        for name, value in self.scalars.items():
            if value:
                out[name] = format_quantity(Fraction(value) / _MILLI)
        return out

    def dimensions(self) -> Iterator[tuple[str, Number]]:
        """cpu, memory, then the scalars by name; `pods` is not a dimension (see module doc)."""
        yield CPU, self.milli_cpu
        yield MEMORY, self.memory
        yield from self.scalars.items()

    def get(self, name: str) -> Number:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == PODS:
            return self.pods
        return self.scalars.get(name, 0)

    def _names(self, other: Resources) -> Iterable[str]:
        if not other.scalars:
            return self.scalars
        if not self.scalars:
            return other.scalars
        return sorted(self.scalars.keys() | other.scalars.keys())

    def add(self, other: Resources) -> Resources:
        return Resources.of(
            self.milli_cpu + other.milli_cpu,
            self.memory + other.memory,
            self.pods + other.pods,
            {n: self.get(n) + other.get(n) for n in self._names(other)},
        )

    def sub(self, other: Resources) -> Resources:
        """Plain difference; may go negative, as a node's Idle does when it is overcommitted."""
        return Resources.of(
            self.milli_cpu - other.milli_cpu,
            self.memory - other.memory,
            self.pods - other.pods,
            {n: self.get(n) - other.get(n) for n in self._names(other)},
        )

    def multiply(self, factor: Number) -> Resources:
        """Scaled dimensions (the overcommit factor, a weight's part of the remainder)."""
        return Resources.of(
            self.milli_cpu * factor,
            self.memory * factor,
            self.pods,
            {n: v * factor for n, v in self.scalars.items()},
        )

    def exceeded_part(self, other: Resources) -> Resources:
        """max(self - other, 0) per dimension (Volcano's ExceededPart)."""
        diff = self.sub(other)
        return Resources.of(
            max(diff.milli_cpu, 0),
            max(diff.memory, 0),
            max(diff.pods, 0),
            {n: max(v, 0) for n, v in diff.scalars.items()},
        )

    def min_dimension(self, other: Resources, missing: Missing) -> Resources:
        """Per-dimension minimum; a scalar absent from `other` counts as `missing`."""
        scalars: dict[str, Number] = {}
        for name, value in self.scalars.items():
            if name in other.scalars:
                scalars[name] = min(value, other.scalars[name])
            else:
                scalars[name] = value if missing is Missing.INFINITY else 0
        return Resources.of(
            min(self.milli_cpu, other.milli_cpu),
            min(self.memory, other.memory),
            min(self.pods, other.pods),
            scalars,
        )

    def max_dimension(self, other: Resources) -> Resources:
        """Per-dimension maximum over the union of dimensions."""
        return Resources.of(
            max(self.milli_cpu, other.milli_cpu),
            max(self.memory, other.memory),
            max(self.pods, other.pods),
            {n: max(self.get(n), other.get(n)) for n in self._names(other)},
        )

    def is_empty(self) -> bool:
        """Every dimension below the epsilon: a BestEffort request, an exhausted remainder."""
        return all(value < EPSILON for _, value in self.dimensions())

    def less_equal(self, other: Resources, missing: Missing = Missing.ZERO) -> bool:
        """self <= other in every dimension, within the epsilon (Volcano's LessEqual)."""
        if not (_le(self.milli_cpu, other.milli_cpu) and _le(self.memory, other.memory)):
            return False
        for name, value in self.scalars.items():
            if name not in other.scalars and missing is Missing.INFINITY:
                continue
            if not _le(value, other.get(name)):
                return False
        return True

    def less_equal_with_dimension(self, other: Resources, request: Resources) -> bool:
        """self <= other only on the dimensions `request` asks for (LessEqualWithDimension)."""
        for name, wanted in request.dimensions():
            if wanted > 0 and not _le(self.get(name), other.get(name)):
                return False
        return True

    def insufficient(self, capacity: Resources, used: Resources | None = None) -> tuple[str, ...]:
        """The dimensions this request does not fit into `capacity - used` on, in order.

        `used` None means nothing is used. Taking both keeps the node-fit check, run for every
        task on every node, from building an idle vector each time.
        """
        taken = used or EMPTY
        return tuple(
            name
            for name, wanted in self.dimensions()
            if wanted > 0 and not _le(wanted, capacity.get(name) - taken.get(name))
        )


EMPTY: Final = Resources()


def share(allocated: Number, deserved: Number) -> Fraction:
    """Volcano's Share: allocated/deserved, with 0/0 = 0 and x/0 = 1."""
    if deserved == 0:
        return Fraction(0) if allocated == 0 else Fraction(1)
    return Fraction(allocated) / deserved


def dominant_share(allocated: Resources, total: Resources) -> Fraction:
    """The largest share over `total`'s dimensions (the proportion and drf plugins' share)."""
    return max(
        (share(allocated.get(name), value) for name, value in total.dimensions()),
        default=Fraction(0),
    )


def total(items: Iterable[Resources]) -> Resources:
    """The sum of several vectors; the empty sum is EMPTY. Summed field by field and built once:
    a session sums every task's request, and a vector per step was most of its cost."""
    cpu: Number = 0
    memory: Number = 0
    pods = 0
    scalars: dict[str, Number] = {}
    count = 0
    for item in items:
        cpu += item.milli_cpu
        memory += item.memory
        pods += item.pods
        for name, value in item.scalars.items():
            scalars[name] = scalars.get(name, 0) + value
        count += 1
    return Resources.of(cpu, memory, pods, scalars) if count else EMPTY
