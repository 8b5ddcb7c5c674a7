"""NamespaceQueues, and the queue a workload names, as a session sees them.

Volcano's NamespaceQueue design (§3.5, §3.6): the scheduler reads cluster Queues and
NamespaceQueues into one `QueueInfo` model, keyed by the canonical id of `models.queue_refs`
(`<name>`, or `<namespace>/<name>`), and resolves a workload's raw reference with that same
grammar, so the webhook, the NamespaceQueue controller and the scheduler never disagree.

What may place jobs is decided elsewhere (`framework.state`, `plugins.namespace_subtrees`);
here each NamespaceQueue gets its numbers, its parent's id and, when it is not Open and
Ready, its `refusal` naming the queue and its condition's reason. A reference that finds no
NamespaceQueue, or does not parse, never falls back to another queue: a stand-in queue
(`listed=False`) carries the reason, so its jobs stay pending and say why. A cluster name
that finds no Queue is what it was before: the job is not in the session.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from typing import Final

from pydantic import ValidationError

from models import queue_refs
from models.keys import QueueName
from models.namespacequeue import ConditionType, NamespaceQueue
from models.scheduling import QueueState
from scheduling.api.requests import Obj, as_obj
from scheduling.api.snapshot import EPOCH, QueueInfo
from scheduling.api.vectors import Resources

NOT_RECONCILED: Final = "its controller has not set Ready yet"


def workload_queue(namespace: str, raw: str | None, default_queue: str) -> QueueName:
    """The id of the queue a workload in `namespace` names (`raw` unset: `default_queue`).

    A reference that does not parse gets an id no queue can have (the namespace, then the
    raw text: more than one '/', or a name no object may carry), so its jobs wait under a
    stand-in of their own (`stand_in`) rather than in some other queue."""
    ref = raw or default_queue
    found = queue_refs.workload_id(namespace, ref)
    return QueueName(found if found is not None else f"{namespace}/{ref}")


def stand_in(group: Obj, default_queue: str) -> QueueInfo | None:
    """The queue standing in for one a PodGroup names but the session does not know; None
    where it names a cluster Queue (a missing one hides the job, as it always has)."""
    meta, spec = as_obj(group.get("metadata")), as_obj(group.get("spec"))
    namespace = str(meta.get("namespace") or "default")
    raw = spec.get("queue")
    ref = raw if isinstance(raw, str) and raw else default_queue
    key = f"podgroup {namespace}/{meta.get('name') or ''}"
    try:
        target = queue_refs.workload(namespace, ref)
    except queue_refs.BadReference as e:
        why = f"{key}: spec.queue {ref!r} is not a queue reference ({e}): it is never scheduled"
        return _stand_in(workload_queue(namespace, ref, default_queue), namespace, why)
    if not target.namespaced:
        return None
    why = f"NamespaceQueue {target.id} does not exist: {key} waits until it does"
    return _stand_in(QueueName(target.id), namespace, why)


def _stand_in(name: QueueName, namespace: str, why: str) -> QueueInfo:
    return QueueInfo(name=name, namespace=namespace, refusal=why, listed=False)


def queue_info(obj: Obj) -> QueueInfo:
    """One NamespaceQueue as a session queue; one that does not parse places nothing."""
    meta = as_obj(obj.get("metadata"))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    ident = QueueName(queue_refs.namespace_queue_id(namespace, name))
    try:
        queue = NamespaceQueue.load(dict(obj))
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        why = f"NamespaceQueue {ident} does not parse: {field}: {first['msg']}"
        return QueueInfo(name=ident, namespace=namespace, refusal=why)
    spec = queue.spec
    guarantee = spec.guarantee.resource if spec.guarantee else None
    parent: QueueName | None = None  # None: its parent reference does not parse
    refusal = _refusal(ident, queue)
    try:
        parent = QueueName(queue_refs.parent(namespace, spec.parent).id)
    except queue_refs.BadReference as e:
        refusal = refusal or f"NamespaceQueue {ident} is not ready: {e.reason}: {e}"
    return QueueInfo(
        name=ident,
        namespace=namespace,
        capability=Resources.from_resource_list(spec.capability) if spec.capability else None,
        guarantee=Resources.from_resource_list(guarantee) if guarantee else None,
        deserved=Resources.from_resource_list(spec.deserved) if spec.deserved else None,
        state=(queue.status.state if queue.status else None) or QueueState.OPEN,
        parent=parent,
        priority=spec.priority or 0,
        creation=queue.metadata.creation_timestamp or EPOCH,
        reclaimable=spec.reclaimable is not False,
        refusal=refusal,
    )


def capped(queues: list[QueueInfo]) -> list[QueueInfo]:
    """Each NamespaceQueue's priority at most its cluster Queue's (the one its chain hangs
    under): a tenant orders its own queues, never itself ahead of the queues the cluster's
    administrator ranked above the one it was given. Unchanged where the chain breaks."""
    by_name = {q.name: q for q in queues}

    def ceiling(queue: QueueInfo) -> int | None:
        seen = {queue.name}
        current = queue
        while current.namespaced:
            up = by_name.get(current.parent) if current.parent is not None else None
            if up is None or up.name in seen:
                return None  # a missing parent or a cycle: nothing to cap against
            seen.add(up.name)
            current = up
        return current.priority

    out = []
    for q in queues:
        top = ceiling(q) if q.namespaced else None
        out.append(
            q if top is None or q.priority <= top else q.model_copy(update={"priority": top})
        )
    return out


def _refusal(ident: str, queue: NamespaceQueue) -> str | None:
    """Why a NamespaceQueue places nothing (the design's `State == Open && Ready == True`,
    read by `NamespaceQueue.schedulable`), naming its state or Ready's reason; None: it may."""
    if queue.schedulable:
        return None
    state = queue.status.state if queue.status else None
    if state not in (None, QueueState.OPEN):
        return f"NamespaceQueue {ident} is {state}"
    ready = queue.condition(ConditionType.READY)
    if ready is None:
        return f"NamespaceQueue {ident} is not ready: {NOT_RECONCILED}"
    said = ": ".join(s for s in (ready.reason, ready.message) if s)
    return f"NamespaceQueue {ident} is not ready: {said or 'Ready is ' + ready.status}"
