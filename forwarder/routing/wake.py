"""When to wake a gang scheduler: a new pod waiting for a node, or a new PodGroup to enqueue.

Without a wake-up a scheduler looks at its period (backing off to 8 s while idle), and every
job's first pod would wait for it. The coalescer sends one `work_arrived` per scheduler per
window however many arrived. Pure: the pipeline adds these to what the router returns.
"""

from __future__ import annotations

from forwarder.routing import events
from models.defaults import DEFAULT_SCHEDULER


def wakes(item: events.Inbound) -> list[events.Outbound]:
    """A watch's ADDED of a pod still Pending on no node wakes the scheduler it names; a new
    PodGroup names no scheduler, so its Job's default one is woken (a session with nothing to
    do costs one read). A relist wakes nobody: the periodic session covers what it finds."""
    if not isinstance(item, events.Observed) or item.type != "ADDED":
        return []
    obj = item.obj
    if item.kind in (events.Kind.POD, events.Kind.BATCH_POD):
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase") or "Pending"
        name = spec.get("schedulerName")
        if not name or spec.get("nodeName") or phase != "Pending":
            return []
        return [events.WorkUpdate(events.SchedulerRef(str(name)), "pod created")]
    if item.kind is events.Kind.POD_GROUP:
        return [events.WorkUpdate(events.SchedulerRef(DEFAULT_SCHEDULER), "podgroup created")]
    return []
