"""Which Volcano Jobs are dispatched to worker clusters, and what their DispatchWorkflows hear.

A Job goes to a DispatchWorkflow (`dispatch/<ns>/<name>`) instead of its JobWorkflow when,
at its first sight, its queue names `extendClusters` and it has not run here (no phase), or
it says it was dispatched (`caldera.dev/dispatched-to`, also written while it waits for a
cluster, so a forwarder that starts over routes it the same way). A Job carrying
`caldera.dev/dispatch-origin` is a copy dispatched here from a manager: it always runs here.
The choice sticks to the Job's uid for as long as the forwarder knows it, so a queue that
gains or loses clusters never moves a job already running one way or the other.

What the workflow hears: `job_observed` when the spec changes or the Job starts going (its
phase and annotations are the workflow's own writes, so their echoes are not sent), with the
queue's dispatch settings; `job_deleted`; the Commands aimed at it. On a cluster whose queues
name no cluster this is a few dictionary lookups per Job event: no request, no signal.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any

from forwarder.routing import envelopes, index, translate
from models import queue_refs
from models.dispatch import DISPATCHED_TO_ANNOTATION, ORIGIN_ANNOTATION, DispatchSettings
from models.scheduling import DEFAULT_QUEUE
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals.dispatch import DispatchObserved

Settings = Callable[[str], DispatchSettings | None]  # a queue's, None: it dispatches nothing
Fingerprint = tuple[Any, bool]  # (spec, deleting)


def queue_of(obj: envelopes.Obj) -> str:
    """The cluster Queue whose `extendClusters` the Job follows; "": it names a NamespaceQueue
    (`namespace/<name>`) or nothing a queue can be called, and neither dispatches: it runs
    here."""
    named = (obj.get("spec") or {}).get("queue")
    namespace = str(translate.metadata(obj).get("namespace", ""))
    try:
        target = queue_refs.workload(namespace, str(named) if named else DEFAULT_QUEUE)
    except queue_refs.BadReference:
        return ""
    return "" if target.namespaced else target.name


def dispatch_ref(obj: envelopes.Obj) -> envelopes.DispatchRef:
    meta = translate.metadata(obj)
    return envelopes.DispatchRef(str(meta.get("namespace", "")), str(meta.get("name", "")))


def fingerprint(obj: envelopes.Obj) -> Fingerprint:
    return (obj.get("spec"), translate.metadata(obj).get("deletionTimestamp") is not None)


def dispatched(obj: envelopes.Obj, settings: Settings) -> bool:
    """The rule at a Job's first sight (see the module's docstring)."""
    notes = translate.annotations_of(obj)
    if ORIGIN_ANNOTATION in notes:
        return False
    if DISPATCHED_TO_ANNOTATION in notes:
        return True
    phase = ((obj.get("status") or {}).get("state") or {}).get("phase")
    return not phase and settings(queue_of(obj)) is not None


class Dispatches:
    """The dispatched Jobs by uid (an owner index of their own) and by namespace/name (for
    the Commands aimed at them)."""

    def __init__(self, settings: Settings, deleted_capacity: int) -> None:
        self._settings = settings
        rules = index.OwnerRules(
            ref=dispatch_ref,
            fingerprint=fingerprint,
            observed=self._observed,
            observed_signal=job_signals.SIGNAL_JOB_OBSERVED,
            deleted=lambda uid: common_signals.JobDeleted(uid=uid),
            deleted_signal=job_signals.SIGNAL_JOB_DELETED,
        )
        self._owners = index.Owners(rules, deleted_capacity)
        self._keys: dict[tuple[str, str], str] = {}  # (namespace, name) → the live Job's uid

    def _observed(self, obj: envelopes.Obj) -> DispatchObserved:
        return DispatchObserved(
            job=translate.payload_of(obj), settings=self._settings(queue_of(obj))
        )

    def takes(self, obj: envelopes.Obj, here: Callable[[str], bool]) -> bool:
        """Is this Job (event) a dispatched one's? `here`: is a uid a Job run here?"""
        uid = translate.uid(obj)
        if self._owners.ref(uid) is not None or self._owners.deleted(uid):
            return True
        if here(uid):
            return False
        return dispatched(obj, self._settings)

    def event(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool
    ) -> list[envelopes.Outbound]:
        ref, uid = dispatch_ref(obj), translate.uid(obj)
        key = (ref.namespace, ref.name)
        out = self._owners.event(type_, obj, force, relisted)
        if type_ == "DELETED":
            if self._keys.get(key) == uid:
                del self._keys[key]
        elif self._owners.ref(uid) is not None:
            self._keys[key] = uid
        return out

    def vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        out = self._owners.vanished(listed)
        self._keys = {k: uid for k, uid in self._keys.items() if uid in listed}
        return out

    def deleted(self, uid: str) -> bool:
        return self._owners.deleted(uid)

    def namespace_gone(self, namespace: str) -> list[envelopes.Outbound]:
        return self._owners.namespace_gone(namespace)

    def command_target(self, job: envelopes.JobRef) -> envelopes.DispatchRef | None:
        """The dispatched Job a Command aimed at `job` goes to; None: not a dispatched one."""
        if (job.namespace, job.name) not in self._keys:
            return None
        return envelopes.DispatchRef(job.namespace, job.name)
