"""Pods Caldera did not create → what the PodGroup controller reads of them. Pure functions.

Volcano's PodGroup controller takes every pod whose schedulerName is one Volcano schedules and
that has no `scheduling.k8s.io/group-name` annotation; pods of Volcano Jobs and of Caldera's
batch/v1 Jobs carry that annotation from birth (and are ruled out by owner as well, in case one
is created without it), but for a batch/v1 Job's pods that name a Kubernetes PodGroup (its
`spec.scheduling`), which join that PodGroup's gang like any other pod naming one. A pod being
deleted needs no PodGroup. Only the annotations and labels the PodGroup takes travel, with one
pod's requests, so the workflow never holds the pod.

A Kubernetes PodGroup (`models.kube_gangs`) travels as what its mirror reads of it: its uid,
generation, minCount (1 for a basic policy), priority class, Workload and `volcano.sh/`
annotations.
"""

from __future__ import annotations

from controllers.podgroup import build
from forwarder.routing import envelopes, translate
from models import kube_gangs, labels
from models.defaults import DEFAULT_SCHEDULER
from models.meta import OwnerReference
from models.signals import podgroup as podgroup_signals
from scheduling.api.requests import pod_request

Obj = envelopes.Obj


def wants_group(obj: Obj) -> bool:
    """A pod that names Volcano's scheduler, has no group name yet, is not going, and is not a
    Volcano Job's (whose controller gives it its PodGroup)."""
    spec = obj.get("spec") or {}
    meta = translate.metadata(obj)
    return (
        spec.get("schedulerName") == DEFAULT_SCHEDULER
        and not translate.annotations_of(obj).get(labels.GROUP_NAME)
        and meta.get("deletionTimestamp") is None
        and translate.controller_job_uid(obj) is None
    )


def scheduling_group(obj: Obj) -> str:
    """The Kubernetes PodGroup the pod names (spec.schedulingGroup.podGroupName); "": none."""
    group = (obj.get("spec") or {}).get("schedulingGroup") or {}
    return str(group.get("podGroupName") or "") if isinstance(group, dict) else ""


def _min_count(spec: Obj) -> int:
    """The gang policy's minCount; 1 for a basic policy, or one not read."""
    gang = (spec.get("schedulingPolicy") or {}).get("gang")
    count = gang.get("minCount") if isinstance(gang, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def core_group(obj: Obj) -> podgroup_signals.CoreGroup:
    meta = translate.metadata(obj)
    spec = obj.get("spec") or {}
    notes = translate.annotations_of(obj)
    workload = spec.get("workloadRef") or {}
    return podgroup_signals.CoreGroup(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=translate.uid(obj),
        generation=int(meta.get("generation") or 0),
        min_member=_min_count(spec),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        annotations={k: v for k, v in notes.items() if k.startswith(labels.INHERITED_PREFIX)},
        workload=str(workload.get("workloadName") or "") if isinstance(workload, dict) else "",
    )


def core_group_ref(namespace: str, name: str) -> envelopes.WorkloadRef:
    """The PodGroupWorkflow that mirrors the Kubernetes PodGroup `namespace/name`."""
    return envelopes.WorkloadRef(namespace, kube_gangs.GANG_KEY_PREFIX + name)


def owner_references(obj: Obj) -> list[OwnerReference]:
    refs = translate.metadata(obj).get("ownerReferences") or []
    return [OwnerReference.load(dict(r)) for r in refs]


def workload_pod(obj: Obj) -> podgroup_signals.WorkloadPod:
    meta = translate.metadata(obj)
    spec = obj.get("spec") or {}
    notes = translate.annotations_of(obj)
    pod_labels: dict[str, str] = meta.get("labels") or {}
    requests = pod_request(spec).to_resource_list()
    return podgroup_signals.WorkloadPod(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=translate.uid(obj),
        owner_references=owner_references(obj),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        requests=requests,
        annotations={k: notes[k] for k in build.POD_ANNOTATIONS if k in notes},
        labels={k: pod_labels[k] for k in build.POD_LABELS if k in pod_labels},
        scheduling_group=scheduling_group(obj),
    )


def workload_ref(pod: podgroup_signals.WorkloadPod) -> envelopes.WorkloadRef:
    """The PodGroupWorkflow of the pod's gang: its Kubernetes PodGroup's, its controlling
    owner's, or its own."""
    return envelopes.WorkloadRef(pod.namespace, build.gang_key(pod))
