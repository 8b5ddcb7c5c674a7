"""The PodGroup made for a pod that names Volcano's scheduler and has none. Pure.

Volcano's PodGroup controller names it after the pod's controlling owner (a ReplicaSet, a
StatefulSet, a Job, ...), or the pod itself when it has none, so every pod of one owner joins
one gang. Min member comes from the owners' `group-min-member` annotation (1 when absent or not
a number), minResources is that many times one pod's requests, the queue and the priority
class come from the pod; the owners' `volcano.sh/` annotations are inherited, and a few of the
pod's own annotations and labels (preemptable, cooldown, revocable zone, the disruption budget,
the network topology) go on top. The PodGroup is owned by whatever controls the pod, so it is
garbage-collected with it.

A pod that names a Kubernetes PodGroup (`spec.schedulingGroup`, `models.kube_gangs`) is in that
PodGroup's gang instead, whoever owns it: the Volcano PodGroup mirrors it (`podgroup-<its
uid>`, owned by it, so it goes with it), its min member is the gang policy's minCount (1 for a
basic policy), its queue the first `volcano.sh/queue-name` (or `scheduling.volcano.sh/
queue-name`) found on the PodGroup, its Workload or the pod's owners, then on the pod.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from models import kube_gangs, labels
from models.meta import ObjectMeta, OwnerReference, controller_reference
from models.quantity import format_quantity, parse_quantity
from models.scheduling import DEFAULT_QUEUE, NetworkTopologySpec, PodGroup, PodGroupSpec
from models.signals.podgroup import CoreGroup, WorkloadPod

# The pod's own keys the PodGroup takes; only these travel from the forwarder.
POD_ANNOTATIONS: Final = (
    labels.POD_QUEUE_NAME,
    labels.PREEMPTABLE,
    labels.COOLDOWN_TIME,
    labels.REVOCABLE_ZONE,
    labels.JDB_MIN_AVAILABLE,
    labels.JDB_MAX_UNAVAILABLE,
    labels.NETWORK_TOPOLOGY_MODE,
    labels.NETWORK_TOPOLOGY_HIGHEST_TIER,
)
POD_LABELS: Final = (labels.PREEMPTABLE, labels.COOLDOWN_TIME)
_COPIED: Final = (labels.PREEMPTABLE, labels.COOLDOWN_TIME, labels.REVOCABLE_ZONE)
_INTEGER: Final = re.compile(r"^[+-]?[0-9]+$")  # what Go's strconv accepts in base 10
_INT32: Final = 2**31 - 1


def _controller(pod: WorkloadPod) -> OwnerReference | None:
    """The owner reference that says controller; None: a bare pod."""
    return next((r for r in pod.owner_references if r.controller), None)


def gang_key(pod: WorkloadPod) -> str:
    """Whose gang the pod is in: the Kubernetes PodGroup it names, else its controlling owner's
    uid, else its own."""
    if pod.scheduling_group:
        return kube_gangs.GANG_KEY_PREFIX + pod.scheduling_group
    owner = _controller(pod)
    return owner.uid if owner is not None else pod.uid


def group_name(pod: WorkloadPod, core: CoreGroup | None = None) -> str:
    """The Volcano PodGroup's name: `podgroup-` and the uid of the Kubernetes PodGroup it
    mirrors, else of the pods' owner (Volcano's naming); "": a mirror not seen yet."""
    if pod.scheduling_group:
        return labels.POD_GROUP_PREFIX + core.uid if core is not None else ""
    return labels.POD_GROUP_PREFIX + gang_key(pod)


def owner_references(pod: WorkloadPod, core: CoreGroup | None = None) -> list[OwnerReference]:
    """The Kubernetes PodGroup the gang mirrors; else the pod's own references when one of them
    is a controller (the PodGroup goes with that owner), else one controller reference to the
    pod (it goes with the pod)."""
    if core is not None:
        return [
            controller_reference(
                kube_gangs.API_VERSION, kube_gangs.POD_GROUP_KIND, core.name, core.uid
            )
        ]
    if _controller(pod) is not None:
        return list(pod.owner_references)
    return [controller_reference("v1", "Pod", pod.name, pod.uid)]


def workload_reference(core: CoreGroup) -> OwnerReference:
    """The Workload a Kubernetes PodGroup was made from, read like an owner for its
    annotations."""
    return OwnerReference(
        api_version=kube_gangs.API_VERSION,
        kind=kube_gangs.WORKLOAD_KIND,
        name=core.workload,
        uid="",
    )


def inherited(key: str) -> bool:
    """The owner annotations the PodGroup reads: min member, and what it copies."""
    return key == labels.GROUP_MIN_MEMBER or key.startswith(labels.INHERITED_PREFIX)


def _int(text: str) -> int | None:
    """An int32 as Go's strconv reads it; None: not one."""
    if not _INTEGER.match(text):
        return None
    value = int(text)
    return value if -_INT32 - 1 <= value <= _INT32 else None


def min_member(upper: Mapping[str, str]) -> int:
    """The owners' group-min-member; 1 when absent, not a number or negative."""
    text = upper.get(labels.GROUP_MIN_MEMBER)
    value = None if text is None else _int(text)
    return value if value is not None and value >= 0 else 1


def min_resources(requests: Mapping[str, str], members: int) -> dict[str, str]:
    """`members` times one pod's requests; zero quantities are left out."""
    out: dict[str, str] = {}
    for name, text in sorted(requests.items()):
        value = parse_quantity(text) * members
        if value != Fraction(0):
            out[name] = format_quantity(value)
    return out


def network_topology(notes: Mapping[str, str]) -> NetworkTopologySpec | None:
    """The pod's network-topology annotations; None: it has neither. An unknown mode reads as
    hard, a tier that is not a number is left out (Volcano logs both and goes on)."""
    mode_text = notes.get(labels.NETWORK_TOPOLOGY_MODE)
    tier_text = notes.get(labels.NETWORK_TOPOLOGY_HIGHEST_TIER)
    if mode_text is None and tier_text is None:
        return None
    mode = (mode_text or "").lower()
    tier = None if tier_text is None else _int(tier_text)
    return NetworkTopologySpec(
        mode="soft" if mode == "soft" else "hard",
        highest_tier_allowed=tier if tier is not None and tier >= 0 else None,
    )


def _annotations(pod: WorkloadPod, upper: Mapping[str, str]) -> dict[str, str]:
    """Inherited `volcano.sh/` annotations, then the pod's own on top; of the disruption
    budget the pod's min-available wins, else its max-unavailable."""
    out = {k: v for k, v in upper.items() if k.startswith(labels.INHERITED_PREFIX)}
    notes = pod.annotations
    for key in _COPIED:
        if key in notes:
            out[key] = notes[key]
    if labels.JDB_MIN_AVAILABLE in notes:
        out[labels.JDB_MIN_AVAILABLE] = notes[labels.JDB_MIN_AVAILABLE]
    elif labels.JDB_MAX_UNAVAILABLE in notes:
        out[labels.JDB_MAX_UNAVAILABLE] = notes[labels.JDB_MAX_UNAVAILABLE]
    return dict(sorted(out.items()))


def _queue(pod: WorkloadPod, upper: Mapping[str, str], core: CoreGroup | None) -> str:
    if core is not None:
        for notes in (core.annotations, upper):
            found = notes.get(labels.QUEUE_NAME) or notes.get(labels.POD_QUEUE_NAME)
            if found:
                return found
    return pod.annotations.get(labels.POD_QUEUE_NAME) or DEFAULT_QUEUE


def pod_group(
    pod: WorkloadPod, upper: Mapping[str, str], core: CoreGroup | None = None
) -> PodGroup:
    """buildPodGroupFromPod: `upper` is what the pod's owners' annotations say (first owner
    first; a Kubernetes PodGroup's Workload first of all), already read; `core` the
    Kubernetes PodGroup the pod names, when it does."""
    members = core.min_member if core is not None else min_member(upper)
    pod_labels = {k: pod.labels[k] for k in POD_LABELS if k in pod.labels}
    annotations = _annotations(pod, {**upper, **core.annotations} if core else upper)
    priority_class = (core.priority_class_name if core else "") or pod.priority_class_name
    return PodGroup(
        metadata=ObjectMeta(
            name=group_name(pod, core),
            namespace=pod.namespace,
            owner_references=owner_references(pod, core),
            labels=pod_labels or None,
            annotations=annotations or None,
        ),
        spec=PodGroupSpec(
            min_member=members,
            min_resources=min_resources(pod.requests, members),
            queue=_queue(pod, upper, core),
            priority_class_name=priority_class or None,
            network_topology=network_topology(pod.annotations),
        ),
    )
