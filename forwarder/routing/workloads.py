"""Routing of pods that wait for a PodGroup (`Kind.WORKLOAD_POD`): each to the PodGroupWorkflow
of its gang.

Volcano's PodGroup controller acts on a pod's arrival; here a pod is sent on its first sight
(and again on a full list, since what was sent before may have been lost with a leader), as a
signal-with-start: the gang's workflow may have ended for want of new pods. The pod is
remembered only until it is seen with its group-name annotation or deleted, so the index holds
just the pods still waiting. Seeing one annotated while it waits for a node wakes the
scheduler it names: its PodGroup exists now, and the gang can be placed without waiting for
the scheduler's next period.
"""

from __future__ import annotations

from collections.abc import Callable, Set

from forwarder.routing import events, translate
from forwarder.routing import workload_translate as wt
from models import labels, signals


def _ready_to_place(obj: events.Obj) -> bool:
    """Annotated with a group name, not going, Pending on no node."""
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase") or "Pending"
    return (
        bool(translate.annotations_of(obj).get(labels.GROUP_NAME))
        and translate.metadata(obj).get("deletionTimestamp") is None
        and not spec.get("nodeName")
        and phase == "Pending"
    )


class WorkloadPods:
    """Pods without a PodGroup, by uid."""

    def __init__(self, batch_job: Callable[[events.Obj], events.BatchJobRef | None]) -> None:
        """`batch_job`: the Caldera-managed batch/v1 Job controlling a pod (its workflow makes
        that pod's PodGroup); None: no such Job."""
        self._batch_job = batch_job
        self._waiting: set[str] = set()

    def event(
        self, type_: events.WatchType, obj: events.Obj, force: bool, relisted: bool = False
    ) -> list[events.Outbound]:
        uid = translate.uid(obj)
        if type_ == "DELETED":
            self._waiting.discard(uid)
            return []
        if not wt.wants_group(obj) or self._batch_job(obj) is not None:
            if uid not in self._waiting:
                return []
            self._waiting.discard(uid)
            if not _ready_to_place(obj):
                return []
            scheduler = events.SchedulerRef(str((obj.get("spec") or {}).get("schedulerName")))
            return [events.WorkUpdate(scheduler, "pod joined its podgroup")]
        if uid in self._waiting and not force:
            return []  # sent already; its workflow annotates it
        self._waiting.add(uid)
        pod = wt.workload_pod(obj)
        seen = signals.WorkloadPodSeen(pod=pod)
        target = wt.workload_ref(pod)
        return [events.Signal(target, signals.SIGNAL_WORKLOAD_POD_SEEN, seen, start=True)]

    def vanished(self, listed: Set[str]) -> list[events.Outbound]:
        """Pods missing from a full list are gone: nobody needs telling."""
        self._waiting &= set(listed)
        return []
