"""Which watch events wake a gang scheduler's waiting session.

A session waits for work in the worker that runs it, next to the cluster cache, instead of a
timer in the SchedulerWorkflow and a `work_arrived` signal per burst: the cache asks this of
every change it applies. Work is a pod that arrived waiting for a node, a pod that joined its
PodGroup while waiting (its gang can be placed now), and a new PodGroup to enqueue (it names no
scheduler: its Job's default one is woken). For Dynamic Resource Allocation, as kube-scheduler's
DynamicResources plugin registers: a new or changed ResourceSlice or DeviceClass (devices to
place on), a new ResourceClaim (a template's claim is made after its pod, which waits for it)
and a claim's devices freed (its allocation cleared, or the claim deleted while allocated); these
name no scheduler either. A NamespaceQueue that becomes schedulable (Open and Ready) is work
too: its jobs waited for it. Anything else waits for the scheduler's period.
Pure: the objects are the apiserver's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from models import labels
from models.defaults import DEFAULT_SCHEDULER
from models.namespacequeue import NamespaceQueue

Obj = Mapping[str, Any]


def _waiting(pod: Obj) -> bool:
    """Pending on no node, not going."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    return not spec.get("nodeName") and phase == "Pending" and not meta.get("deletionTimestamp")


def _group(pod: Obj | None) -> str:
    annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(labels.GROUP_NAME) or "")


def _allocated(claim: Obj | None) -> bool:
    return bool(((claim or {}).get("status") or {}).get("allocation"))


def _devices_changed(type_: str, before: Obj | None, after: Obj) -> bool:
    """A ResourceSlice or DeviceClass added, or its spec changed (not only its metadata)."""
    if type_ == "DELETED":
        return False
    return type_ == "ADDED" or before is None or before.get("spec") != after.get("spec")


def _claim_news(type_: str, before: Obj | None, after: Obj) -> bool:
    """A claim created (its pod may be waiting for it), or its devices freed."""
    if type_ == "DELETED":
        return _allocated(after)
    if type_ == "ADDED" or before is None:  # None: not in the cache before (a relist gap)
        return True
    return _allocated(before) and not _allocated(after)


def _schedulable(queue: Obj | None) -> bool:
    """A NamespaceQueue that may place jobs; one that does not parse may not."""
    if queue is None:
        return False
    try:
        return NamespaceQueue.load(dict(queue)).schedulable
    except ValidationError:
        return False


def woken(kind: str, type_: str, before: Obj | None, after: Obj) -> str | None:
    """The scheduler this change is work for (`kind` as the cluster cache names its stores:
    "pods", "podgroups", "slices", "deviceclasses", "resourceclaims", "namespacequeues");
    None: no one's."""
    if kind == "podgroups":
        return DEFAULT_SCHEDULER if type_ == "ADDED" else None
    if kind in ("slices", "deviceclasses"):
        return DEFAULT_SCHEDULER if _devices_changed(type_, before, after) else None
    if kind == "resourceclaims":
        return DEFAULT_SCHEDULER if _claim_news(type_, before, after) else None
    if kind == "namespacequeues":
        opened = type_ != "DELETED" and _schedulable(after) and not _schedulable(before)
        return DEFAULT_SCHEDULER if opened else None
    if kind != "pods" or type_ == "DELETED" or not _waiting(after):
        return None
    name = (after.get("spec") or {}).get("schedulerName")
    if not name:
        return None
    if type_ == "ADDED" or before is None:
        return str(name)
    joined = _group(after) and not _group(before)
    return str(name) if joined else None
