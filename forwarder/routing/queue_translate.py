"""Kubernetes objects → QueueWorkflow payloads and the Queue they belong to. Pure functions.

The queue-side twin of `translate` (which keeps the Job side and the raw-object accessors both
use). Reproduces the inputs of Volcano's queue controller: Queue events, every PodGroup
counted under its `spec.queue`, and Commands aimed at a Queue. One object at a
time; whether a change is worth sending given what was seen before is `queue_router`'s call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forwarder.routing import envelopes, translate
from models import keys, queue_refs, scheduling
from models.dispatch import LOST_AFTER_SECONDS, STALE_DEADLINE_SECONDS, DispatchSettings
from models.duration import whole_seconds
from models.signals import dispatch as dispatch_signals
from models.signals import queue as queue_signals

Obj = envelopes.Obj

# What a Queue update must change to be worth a `queue_observed`: (spec, annotations, state).
QueueFingerprint = tuple[Any, Mapping[str, str], str | None]
# What a parent must hear about a child: (parent name, state, closed-by-parent).
ChildFingerprint = tuple[str, str | None, bool]


def queue_ref(obj: Obj) -> envelopes.QueueRef:
    return envelopes.QueueRef(str(translate.metadata(obj).get("name", "")))


def state(obj: Obj) -> str | None:
    """`status.state`; None: the queue controller has not written one yet (read as Open)."""
    found = (obj.get("status") or {}).get("state")
    return str(found) if found else None


def parent(obj: Obj) -> envelopes.QueueRef | None:
    """The queue this one hangs under; None: it is `root`, the top of the tree.

    An empty `spec.parent` means root: Volcano's controller patches it to "root" on the next
    sync, and that patch must not look like a move to another parent.
    """
    ref = queue_ref(obj)
    if ref.name == scheduling.ROOT_QUEUE:
        return None
    named = (obj.get("spec") or {}).get("parent")
    return envelopes.QueueRef(str(named) if named else scheduling.ROOT_QUEUE)


def queue_fingerprint(obj: Obj) -> QueueFingerprint:
    """Volcano enqueues a queue sync on spec changes; the annotations carry closed-by-parent
    and the state is what open/close change. The status counts and `allocated`, written by the
    QueueWorkflow itself and the scheduler, are left out so those writes do not echo back."""
    return (obj.get("spec"), dict(translate.annotations_of(obj)), state(obj))


def child_fingerprint(obj: Obj) -> ChildFingerprint:
    """What the parent's workflow keeps about this child: where it hangs and whether it is
    open, and whether the parent closed it (only those it closed are reopened with it)."""
    up = parent(obj)
    return (up.name if up is not None else "", state(obj), _closed_by_parent(obj))


def _closed_by_parent(obj: Obj) -> bool:
    return translate.annotations_of(obj).get(scheduling.CLOSED_BY_PARENT) == "true"


def queue_observed(obj: Obj) -> queue_signals.QueueObserved:
    return queue_signals.QueueObserved(queue=translate.payload_of(obj))


def child_observed(obj: Obj) -> queue_signals.ChildQueueObserved:
    return queue_signals.ChildQueueObserved(
        name=queue_ref(obj).name, state=state(obj), closed_by_parent=_closed_by_parent(obj)
    )


def dispatch_settings(obj: Obj) -> DispatchSettings | None:
    """The queue's dispatch to worker clusters: its `extendClusters` by name, weight (1 when
    unset) and capacity (a ResourceList, kept as written), how long a cluster may be silent
    (`caldera.dev/lost-after`) and how long a stale copy's may before the copy is given up
    (`caldera.dev/stale-copy-deadline`), and whether a copy on a drained cluster moves
    (`caldera.dev/on-drain: Move`); None: it names no cluster, and its jobs run here."""
    clusters: dict[str, int] = {}
    capacity: dict[str, dict[str, str]] = {}
    for entry in (obj.get("spec") or {}).get("extendClusters") or ():
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name:
            weight = entry.get("weight")
            clusters[str(name)] = weight if isinstance(weight, int) and weight > 0 else 1
            limit = entry.get("capacity")
            if isinstance(limit, Mapping) and limit:
                capacity[str(name)] = {str(k): str(v) for k, v in limit.items()}
    if not clusters:
        return None
    notes = translate.annotations_of(obj)
    lost = _seconds(notes.get(dispatch_signals.LOST_AFTER_ANNOTATION))
    lost_after = max(dispatch_signals.MIN_LOST_AFTER, lost or LOST_AFTER_SECONDS)
    deadline = _seconds(notes.get(dispatch_signals.STALE_DEADLINE_ANNOTATION))
    return DispatchSettings(
        queue=queue_ref(obj).key,
        clusters=clusters,
        lost_after_seconds=lost_after,
        capacity=capacity,
        stale_deadline_seconds=max(lost_after, deadline or STALE_DEADLINE_SECONDS),
        move_on_drain=notes.get(dispatch_signals.ON_DRAIN_ANNOTATION) == "Move",
    )


def _seconds(text: str | None) -> int | None:
    """`models.duration.whole_seconds`; None: unset or unreadable."""
    return whole_seconds(text) if text else None


def child_deleted(name: str) -> queue_signals.ChildQueueObserved:
    """Also sent to an old parent when the child moves: it is gone from that parent's tree."""
    return queue_signals.ChildQueueObserved(name=name, deleted=True)


# --- PodGroups ------------------------------------------------------------------------------


def pod_group_queue(obj: Obj) -> str | None:
    """The canonical id of the queue a PodGroup is counted in (`models.queue_refs`): a cluster
    Queue's name (the CRD defaults an empty `spec.queue` to default), `<namespace>/<name>` for
    `namespace/<name>`, a NamespaceQueue of its own namespace; None: a reference that names no
    queue, counted in none (never in a cluster Queue named after the raw string)."""
    named = (obj.get("spec") or {}).get("queue")
    namespace = str(translate.metadata(obj).get("namespace", ""))
    return queue_refs.workload_id(namespace, str(named) if named else None)


def pod_group_ref(obj: Obj, deleted: bool = False) -> queue_signals.PodGroupRef:
    meta = translate.metadata(obj)
    return queue_signals.PodGroupRef(
        key=keys.pod_group_key(meta.get("namespace", ""), meta.get("name", "")),
        phase=translate.pod_group_phase(obj),
        deleted=deleted,
    )


# --- Commands -------------------------------------------------------------------------------


def _is_queue(ref: Mapping[str, Any]) -> bool:
    return ref.get("kind") == "Queue" and ref.get("apiVersion") == scheduling.API_VERSION


def command_queue(obj: Obj) -> envelopes.QueueRef | None:
    """The Queue a Command targets; None: it targets something else (a Job) or nothing.

    vcctl sets both `target` and a controller ownerReference to the queue, and Volcano's
    queue controller reads `target`. A Command written by hand with only the ownerReference
    is accepted too; a `target` naming anything else wins over the owner references.
    """
    target: Mapping[str, Any] | None = obj.get("target") or None  # None: not set
    if target is not None:
        named = _is_queue(target) and target.get("name")
        return envelopes.QueueRef(str(target["name"])) if named else None
    for ref in translate.metadata(obj).get("ownerReferences") or ():
        if _is_queue(ref) and ref.get("name"):
            return envelopes.QueueRef(str(ref["name"]))
    return None
