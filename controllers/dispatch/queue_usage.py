"""What each queue holds on a cluster, from its pods, and a queue object read as the figures a
dispatcher weighs: the queue-side twin of `capacity`, for a probe of a worker cluster.

A pod is in the queue its `volcano.sh/queue-name` label names (Volcano's job controller and
Caldera's put it on every pod of a Job), else the `scheduling.volcano.sh/queue-name`
annotation (pods Volcano did not create); a pod with neither is in no queue. Finished pods
(Succeeded, Failed) hold nothing. `requested` counts every unfinished pod, pending ones too
(work already sent there); `bound` only those on a node, which is what a queue's capability
caps (Volcano checks capability against what is allocated, not what waits).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from controllers.dispatch.capacity import FINISHED
from models import labels
from models.dispatch import QueueThere
from scheduling.api.requests import Obj, as_obj, as_quantities, pod_request
from scheduling.api.vectors import Resources


class Usage(BaseModel):
    """One queue's pods on one cluster: what the unfinished ones request, and the bound ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requested: Resources = Resources()
    bound: Resources = Resources()


def pod_queue(pod: Obj) -> str:
    """The queue the pod is in ("": none)."""
    meta = as_obj(pod.get("metadata"))
    named = as_obj(meta.get("labels")).get(labels.QUEUE_NAME) or as_obj(
        meta.get("annotations")
    ).get(labels.POD_QUEUE_NAME)
    return named if isinstance(named, str) else ""


def usage_by_queue(pods: Iterable[Mapping[str, object]]) -> dict[str, Usage]:
    """Each queue's usage, from the pods as the apiserver lists them."""
    out: dict[str, Usage] = {}
    for pod in pods:
        queue = pod_queue(pod)
        spec, status = as_obj(pod.get("spec")), as_obj(pod.get("status"))
        if not queue or status.get("phase") in FINISHED:
            continue
        request = pod_request(spec)
        now = out.get(queue, Usage())
        out[queue] = Usage(
            requested=now.requested.add(request),
            bound=now.bound.add(request) if spec.get("nodeName") else now.bound,
        )
    return out


def queue_there(asked: str, found: Obj | None, usage: Mapping[str, Usage]) -> QueueThere:
    """The figures of the queue a copy of a job of queue `asked` lands in (`found`: that queue
    object, the job's own or `default`; None: neither exists there)."""
    if found is None:
        return QueueThere(asked=asked)
    name = str(as_obj(found.get("metadata")).get("name") or asked)
    spec, status = as_obj(found.get("spec")), as_obj(found.get("status"))
    pods = usage.get(name, Usage())
    written = Resources.from_resource_list(as_quantities(status.get("allocated")))
    return QueueThere(
        asked=asked,
        name=name,
        state=str(status.get("state") or ""),
        capability={k: str(v) for k, v in as_quantities(spec.get("capability")).items()},
        allocated=written.max_dimension(pods.bound).to_resource_list(),
        used=pods.requested.to_resource_list(),
    )
