"""The cached pods, PodGroups and queues as a session's writes and handoffs read them.

The snapshot (`scheduling.cache.objects`) keeps what placing needs; what the session writes back and
hands over reads other fields: the PodScheduled condition a waiting pod already carries, its
claims and UID, a PodGroup's owners and current status, what a queue's status says is
allocated. The activity parses each cached object once into one of these views, so the
planners (`writes`, `placements`, `volumes` beside it in `scheduling.cache`) take typed
values and stay testable without the cache.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models import queue_refs
from models.keys import JobKey, QueueName, job_key
from scheduling.api.requests import Obj, as_list, as_obj
from scheduling.api.snapshot import PodKey

POD_SCHEDULED = "PodScheduled"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def namespaced_name(obj: Obj) -> tuple[str, str]:
    """(namespace, name) from an object's metadata; "" where absent."""
    meta = as_obj(obj.get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


@dataclass(frozen=True)
class Owner:
    """One of a PodGroup's ownerReferences."""

    api_version: str
    kind: str
    name: str
    uid: str

    @classmethod
    def parse(cls, ref: Obj) -> Owner:
        return cls(*(str(ref.get(k) or "") for k in ("apiVersion", "kind", "name", "uid")))


def claim_names(pod: Obj) -> tuple[str, ...]:
    """The claimName of each PVC volume of the pod, in spec order."""
    claims = (
        str(as_obj(v.get("persistentVolumeClaim")).get("claimName") or "")
        for v in as_list(as_obj(pod.get("spec")).get("volumes"))
    )
    return tuple(c for c in claims if c)


@dataclass(frozen=True)
class ObservedPod:
    namespace: str
    name: str
    uid: str
    node_name: str  # "": not bound to a node
    claims: tuple[str, ...]  # the claimName of each PVC volume, in spec order
    scheduled: tuple[str | None, str | None]  # PodScheduled (reason, message); None: absent
    nominated: str = ""  # status.nominatedNodeName

    @property
    def key(self) -> PodKey:
        return PodKey(f"{self.namespace}/{self.name}")

    @classmethod
    def parse(cls, pod: Obj) -> ObservedPod:
        namespace, name = namespaced_name(pod)
        spec, status = as_obj(pod.get("spec")), as_obj(pod.get("status"))
        condition = next(
            (c for c in as_list(status.get("conditions")) if c.get("type") == POD_SCHEDULED), {}
        )
        return cls(
            namespace=namespace,
            name=name,
            uid=str(as_obj(pod.get("metadata")).get("uid") or ""),
            node_name=str(spec.get("nodeName") or ""),
            claims=claim_names(pod),
            scheduled=(_text(condition.get("reason")), _text(condition.get("message"))),
            nominated=str(status.get("nominatedNodeName") or ""),
        )


@dataclass(frozen=True)
class ObservedGroup:
    namespace: str
    name: str
    owners: tuple[Owner, ...]
    phase: str | None  # None: no phase yet
    conditions: tuple[Obj, ...]  # as read: a status write carries the ones it keeps unchanged

    @property
    def key(self) -> JobKey:
        return job_key(self.namespace, self.name)

    @property
    def job_name(self) -> str:
        """The name users know the gang by (`caldera job why NAME`): its Job's (Volcano or
        batch/v1), else its first owner's, else the PodGroup's own (a Volcano Job's PodGroup is
        `<job>-<uid>`)."""
        jobs = [o.name for o in self.owners if o.kind == "Job" and o.name]
        others = [o.name for o in self.owners if o.name]
        return next(iter(jobs or others), self.name)

    @classmethod
    def parse(cls, group: Obj) -> ObservedGroup:
        namespace, name = namespaced_name(group)
        status = as_obj(group.get("status"))
        refs = as_list(as_obj(group.get("metadata")).get("ownerReferences"))
        return cls(
            namespace=namespace,
            name=name,
            owners=tuple(Owner.parse(r) for r in refs),
            phase=_text(status.get("phase")),
            conditions=tuple(as_list(status.get("conditions"))),
        )


@dataclass(frozen=True)
class ObservedQueue:
    """A cluster Queue or a NamespaceQueue as read, by its canonical id (`models.queue_refs`)."""

    name: QueueName
    allocated: Mapping[str, str]  # status.allocated as read; empty: none written
    namespace: str = ""  # a NamespaceQueue's; "": a cluster Queue
    object_name: str = ""  # metadata.name; "": `name` (a cluster Queue)

    @classmethod
    def parse(cls, queue: Obj) -> ObservedQueue:
        allocated = as_obj(as_obj(queue.get("status")).get("allocated"))
        namespace, name = namespaced_name(queue)
        return cls(
            name=QueueName(queue_refs.namespace_queue_id(namespace, name) if namespace else name),
            allocated={str(k): str(v) for k, v in allocated.items()},
            namespace=namespace,
            object_name=name if namespace else "",
        )
