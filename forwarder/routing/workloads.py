"""Routing of pods that wait for a PodGroup (`Kind.WORKLOAD_POD`): each to the PodGroupWorkflow
of its gang.

Volcano's PodGroup controller acts on a pod's arrival; here a pod is sent on its first sight
(and again on a full list, since what was sent before may have been lost with a leader), as a
signal-with-start: the gang's workflow may have ended for want of new pods. The pod is
remembered only until it is seen with its group-name annotation or deleted, so the index holds
just the pods still waiting. (Seeing one annotated while it waits for a node wakes its
scheduler: the worker's cluster cache does that, `scheduling.cache.arrivals`.)
"""

from __future__ import annotations

from collections.abc import Callable, Set

from forwarder.routing import envelopes, translate
from forwarder.routing import workload_translate as wt
from models.signals import podgroup as podgroup_signals


class WorkloadPods:
    """Pods without a PodGroup, by uid."""

    def __init__(self, batch_job: Callable[[envelopes.Obj], envelopes.BatchJobRef | None]) -> None:
        """`batch_job`: the Caldera-managed batch/v1 Job controlling a pod (its workflow makes
        that pod's PodGroup); None: no such Job."""
        self._batch_job = batch_job
        self._waiting: set[str] = set()

    def event(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        uid = translate.uid(obj)
        if type_ == "DELETED":
            self._waiting.discard(uid)
            return []
        if not wt.wants_group(obj) or self._batch_job(obj) is not None:
            self._waiting.discard(uid)  # annotated (the scheduler's cache wakes it), or not ours
            return []
        if uid in self._waiting and not force:
            return []  # sent already; its workflow annotates it
        self._waiting.add(uid)
        pod = wt.workload_pod(obj)
        seen = podgroup_signals.WorkloadPodSeen(pod=pod)
        target = wt.workload_ref(pod)
        return [
            envelopes.Signal(target, podgroup_signals.SIGNAL_WORKLOAD_POD_SEEN, seen, start=True)
        ]

    def vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        """Pods missing from a full list are gone: nobody needs telling."""
        self._waiting &= set(listed)
        return []
