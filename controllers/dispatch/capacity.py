"""A whole cluster's size and what is left of it: what a probe of a worker cluster reports.

Allocatable is the sum of the nodes' `status.allocatable`; free is that less what the pods on
those nodes request (Kubernetes' PodRequests rule, `requests.pod_request`), leaving out pods
that finished (Succeeded, Failed), which hold nothing. A dimension is never shown below zero:
an overcommitted node has no room, not negative room. Dimensions are the scheduler's own
(cpu, memory, pods and extended resources; ephemeral-storage is not one), so a job fits a
cluster's figures the way it fits a node's.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict

from scheduling.api.requests import Obj, as_obj, as_quantities, pod_request
from scheduling.api.vectors import Resources

FINISHED: Final = frozenset({"Succeeded", "Failed"})


class Capacity(BaseModel):
    """Nodes, summed allocatable and free, as ResourceLists."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int
    allocatable: dict[str, str]
    free: dict[str, str]


def _node_name(node: Obj) -> str:
    return str(as_obj(node.get("metadata")).get("name") or "")


def _holds(pod: Obj, nodes: set[str]) -> bool:
    """The pod sits on one of `nodes` and has not finished."""
    spec, status = as_obj(pod.get("spec")), as_obj(pod.get("status"))
    return spec.get("nodeName") in nodes and status.get("phase") not in FINISHED


def _at_least_zero(r: Resources) -> Resources:
    return Resources.of(
        max(r.milli_cpu, 0),
        max(r.memory, 0),
        max(r.pods, 0),
        {name: max(value, 0) for name, value in r.scalars.items()},
    )


def capacity(
    nodes: Iterable[Mapping[str, object]], pods: Iterable[Mapping[str, object]]
) -> Capacity:
    """The cluster's figures from its node and pod objects (as the apiserver lists them)."""
    names: set[str] = set()
    allocatable = Resources()
    for node in nodes:
        names.add(_node_name(node))
        listed = as_quantities(as_obj(node.get("status")).get("allocatable"))
        allocatable = allocatable.add(Resources.from_resource_list(listed))
    used = Resources()
    for pod in pods:
        if _holds(pod, names):
            used = used.add(pod_request(as_obj(pod.get("spec"))))
    free = _at_least_zero(allocatable.sub(used))
    return Capacity(
        nodes=len(names),
        allocatable=allocatable.to_resource_list() if names else {},
        free=free.to_resource_list() if names else {},
    )
