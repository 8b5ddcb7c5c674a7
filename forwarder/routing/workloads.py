"""Routing of pods that wait for a PodGroup (`Kind.WORKLOAD_POD`): each to the PodGroupWorkflow
of its gang.

Volcano's PodGroup controller acts on a pod's arrival; here a pod is sent on its first sight
(and again on a full list, since what was sent before may have been lost with a leader), as a
signal-with-start: the gang's workflow may have ended for want of new pods. The pod is
remembered only until it is seen with its group-name annotation or deleted, so the index holds
just the pods still waiting. (Seeing one annotated while it waits for a node wakes its
scheduler: the worker's cluster cache does that, `scheduling.cache.arrivals`.)

Kubernetes' own PodGroups (`Kind.KUBE_POD_GROUP`) are remembered as the mirror reads them; a pod
that names one carries it to the gang's workflow, and once a pod has named it, its creation or
change (a new minCount) is sent as well (`core_group_seen`). PodGroups no pod of Caldera's
scheduler names start no workflow.
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
        that pod's PodGroup, unless the pod names a Kubernetes PodGroup); None: no such Job."""
        self._batch_job = batch_job
        self._waiting: set[str] = set()
        self._cores: dict[tuple[str, str], podgroup_signals.CoreGroup] = {}  # by namespace, name
        # Kubernetes PodGroups our pods named, with the newest such pod (what a new run of the
        # gang's workflow builds the mirror from when the PodGroup changes)
        self._named: dict[tuple[str, str], podgroup_signals.WorkloadPod] = {}

    def event(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        uid = translate.uid(obj)
        if type_ == "DELETED":
            self._waiting.discard(uid)
            return []
        named = wt.scheduling_group(obj)
        if named:  # remembered even once annotated: the PodGroup's changes still matter
            self._named[(str(translate.metadata(obj).get("namespace", "")), named)] = (
                wt.workload_pod(obj)
            )
        # A Caldera-run batch/v1 Job's pod gets its PodGroup from the Job's workflow, unless it
        # names a Kubernetes PodGroup (spec.scheduling): that one's mirror is its gang.
        if not wt.wants_group(obj) or (self._batch_job(obj) is not None and not named):
            self._waiting.discard(uid)  # annotated (the scheduler's cache wakes it), or not ours
            return []
        if uid in self._waiting and not force:
            return []  # sent already; its workflow annotates it
        self._waiting.add(uid)
        pod = wt.workload_pod(obj)
        core = self._cores.get((pod.namespace, named)) if named else None
        seen = podgroup_signals.WorkloadPodSeen(pod=pod, core=core)
        target = wt.workload_ref(pod)
        return [
            envelopes.Signal(target, podgroup_signals.SIGNAL_WORKLOAD_POD_SEEN, seen, start=True)
        ]

    def vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        """Pods missing from a full list are gone: nobody needs telling."""
        self._waiting &= set(listed)
        return []

    def core_group(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        group = wt.core_group(obj)
        key = (group.namespace, group.name)
        if type_ == "DELETED":
            self._cores.pop(key, None)
            self._named.pop(key, None)  # its pods go with it; a new one is named anew
            return []
        before, self._cores[key] = self._cores.get(key), group
        if key not in self._named or (before == group and not force):
            return []
        seen = podgroup_signals.CoreGroupSeen(group=group, pod=self._named[key])
        target = wt.core_group_ref(*key)
        return [envelopes.Signal(target, podgroup_signals.SIGNAL_CORE_GROUP_SEEN, seen, start=True)]

    def core_groups_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        """Kubernetes PodGroups missing from a full list are gone: forget them."""
        gone = [k for k, g in self._cores.items() if g.uid not in listed]
        for key in gone:
            self._cores.pop(key)
            self._named.pop(key, None)
        return []
