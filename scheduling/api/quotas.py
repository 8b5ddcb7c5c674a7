"""Namespace ResourceQuotas as the resourcequota plugin reads them, and a PodGroup's quota view.

Volcano's scheduler cache keeps, per namespace, the `status` of each ResourceQuota
(`api.NamespaceCollection`): `status.hard` and `status.used` as kube-controller-manager's
resourcequota controller (and the apiserver's quota admission) wrote them. The spec is not
read, and neither are scopes: a quota the controller has not synced yet limits nothing, and a
scoped quota counts every job of its namespace, as in Volcano.

A PodGroup's minResources is compared name by name with a quota's hard names. Volcano's job
controller writes minResources in the quota evaluator's names (`GetPodQuotaUsage`, over
`PodUsageFunc`): `cpu` and `requests.cpu`, `memory` and `requests.memory`, `pods` and
`count/pods`, an extended resource `x/y` and `requests.x/y`, and so on. Caldera's job
controller records the plain names only, so `quota_usage` adds the prefixed ones: a quota
on `requests.cpu` and one on `cpu` both hold a job, as they do under Volcano. `limits.*` names
are compared only when the minResources itself carries them (Caldera's job controller records
requests, not limits).

Quantities stay exact `Fraction`s: Volcano compares `resource.Quantity` values, not floats.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from models.quantity import format_quantity, parse_quantity
from scheduling.api.requests import Obj, as_obj

Amounts = dict[str, Fraction]  # resource name -> exact quantity, names sorted

REQUESTS: Final = "requests."
_WITH_REQUESTS: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_PREFIXED: Final = ("requests.", "limits.", "count/")


class ResourceQuota(BaseModel):
    """What the plugin keeps of one ResourceQuota: its status."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    name: str
    hard: Amounts = Field(default_factory=dict)  # status.hard; empty until the controller syncs it
    used: Amounts = Field(default_factory=dict)  # status.used

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, obj: Obj) -> ResourceQuota:
        """Raises ValueError when a quantity of its status does not parse."""
        meta, status = as_obj(obj.get("metadata")), as_obj(obj.get("status"))
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            hard=amounts(as_obj(status.get("hard"))),
            used=amounts(as_obj(status.get("used"))),
        )


def amounts(resources: Mapping[str, object]) -> Amounts:
    """A ResourceList's exact values, by name; raises ValueError on one that is no quantity."""
    out: Amounts = {}
    for name, value in sorted(resources.items()):
        if not isinstance(value, int | float | str) or isinstance(value, bool):
            raise ValueError(f"{name}: invalid quantity {value!r}")
        out[name] = parse_quantity(value)
    return out


def _is_extended(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName: a `domain/name` outside `kubernetes.io/`."""
    return "/" in name and not name.startswith(_PREFIXED) and "kubernetes.io/" not in name


def quota_usage(min_resources: Mapping[str, str | int | float]) -> Amounts:
    """minResources in the names the quota evaluator charges a pod's requests under.

    Each name stays, and `cpu`, `memory`, `ephemeral-storage`, `hugepages-*` and extended
    resources are also charged as `requests.<name>`, `pods` also as `count/pods`
    (`PodUsageFunc`). A prefixed name given in minResources itself wins over the derived one.
    Raises ValueError on a value that is no quantity."""
    given = amounts(min_resources)
    usage = dict(given)
    for name, value in given.items():
        if name in _WITH_REQUESTS or name.startswith("hugepages-") or _is_extended(name):
            usage.setdefault(REQUESTS + name, value)
        elif name == "pods":
            usage.setdefault("count/pods", value)
    return dict(sorted(usage.items()))


def add(left: Mapping[str, Fraction], right: Mapping[str, Fraction]) -> Amounts:
    """quotav1.Add: the sum over the union of names."""
    names = sorted(left.keys() | right.keys())
    return {n: left.get(n, Fraction(0)) + right.get(n, Fraction(0)) for n in names}


def show(resources: Mapping[str, Fraction]) -> str:
    """A ResourceList as Go prints a map (`map[requests.cpu:2]`), quantities in their text form."""
    return (
        "map[" + " ".join(f"{n}:{format_quantity(v)}" for n, v in sorted(resources.items())) + "]"
    )
