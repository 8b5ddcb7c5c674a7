"""What a pod asks for (Volcano's `InitResreq`), from its spec as the apiserver stores it.

Kubernetes' PodRequests rule, which Volcano's fit check uses: the regular containers add up,
each ordinary init container runs alone so only the largest counts, sidecar init containers
(`restartPolicy: Always`) keep running and so add to both, the pod overhead is added on top,
and pod-level `resources.requests` replace the container sum where set. A container's limit
stands in for a missing request (the apiserver's defaulting). The scoring variant fills kube's
100m CPU / 200Mi memory for requests that are absent, so request-less pods still spread.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Final

from scheduling.api.vectors import CPU, MEMORY, Resources

Obj = Mapping[str, object]

NONZERO_MILLI_CPU: Final = Fraction(100)
NONZERO_MEMORY: Final = Fraction(200 * 1024 * 1024)


def as_obj(value: object) -> Obj:
    """A JSON object field, or an empty one when absent or of the wrong shape."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Obj]:
    """A JSON array of objects, skipping anything that is not an object."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def as_quantities(value: object) -> dict[str, str | int | float]:
    return {str(k): v for k, v in as_obj(value).items() if isinstance(v, str | int | float)}


def _container(container: Obj, nonzero: bool) -> Resources:
    resources = as_obj(container.get("resources"))
    wanted = {**as_quantities(resources.get("limits")), **as_quantities(resources.get("requests"))}
    request = Resources.from_resource_list(wanted)
    if not nonzero:
        return request
    return Resources.of(
        request.milli_cpu if CPU in wanted else NONZERO_MILLI_CPU,
        request.memory if MEMORY in wanted else NONZERO_MEMORY,
        0,
        request.scalars,
    )


def pod_request(spec: Obj, nonzero: bool = False) -> Resources:
    """The pod's request with one pod slot; `nonzero` applies kube's scoring defaults."""
    containers = Resources()
    for container in as_list(spec.get("containers")):
        containers = containers.add(_container(container, nonzero))
    sidecars, init_peak = Resources(), Resources()
    for init in as_list(spec.get("initContainers")):
        request = _container(init, nonzero)
        if init.get("restartPolicy") == "Always":
            containers = containers.add(request)
            sidecars = sidecars.add(request)
            init_peak = init_peak.max_dimension(sidecars)
        else:
            init_peak = init_peak.max_dimension(sidecars.add(request))
    result = containers.max_dimension(init_peak)
    pod_level = as_quantities(as_obj(spec.get("resources")).get("requests"))
    if pod_level:
        level = Resources.from_resource_list(pod_level)
        result = Resources.of(
            level.milli_cpu if CPU in pod_level else result.milli_cpu,
            level.memory if MEMORY in pod_level else result.memory,
            0,
            result.scalars,
        )
    overhead = Resources.from_resource_list(as_quantities(spec.get("overhead")))
    return result.add(overhead).add(Resources.of(pods=1))
