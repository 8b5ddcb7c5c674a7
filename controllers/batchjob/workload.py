"""The Kubernetes Workload and PodGroup of a batch/v1 Job with `spec.scheduling` (Kubernetes
1.37's WorkloadWithJob, `pkg/controller/job/job_scheduling_manager.go`). Pure.

Kubernetes' Job controller makes a Workload (one pod group template, `<job>-pgt-0`) and a
PodGroup for a root Job (no controller owner, no `schedulingGroup` in its template) that never
started, and every pod it makes names that PodGroup. Caldera's controller does the same for a
Job it runs that asks for it: where Kubernetes makes a basic Workload for every root Job,
a Job without `spec.scheduling` keeps Caldera's Volcano PodGroup `podgroup-<uid>`
(`podspec.pod_group`). A child Job whose parent delegated its PodGroup
(`scheduling.k8s.io/group-template-name`) is not followed: a Job with a controller owner keeps
the Volcano path too.

No pod is made before both objects exist (the controller's sync returns its error until they
do), so the PodGroup's uid is known for the pods' owner reference to it. A changed gang
minCount is written onto both on the next sync. The Volcano PodGroup the pods are placed
through is the mirror `controllers.podgroup` makes of the PodGroup, which also annotates the
pods; the PodGroup carries the template's queue so the mirror need not read owners for it.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import BatchJobRecord, KubeGang
from models import batchv1, kube_gangs, labels
from models.batchv1 import BatchJob, ConditionType, SchedulingGroup
from models.meta import controller_reference

# k8s.io/apimachinery/pkg/util/rand's SafeEncodeString alphabet: no vowels, no 0/1/3.
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_NAME_MAX: Final = 253  # validation.DNS1123SubdomainMaxLength
_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193
_BLOCKS: Final = ("schedulingConstraints", "disruptionMode", "resourceClaims")


class WorkloadEnsured(BaseModel):
    """Both objects exist now (made, or found): the PodGroup's uid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["WorkloadEnsured"] = "WorkloadEnsured"
    uid: str


def _fnv1a32(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def _hash(text: str) -> str:
    """SafeEncodeString of the decimal fnv-1a 32 of `text`."""
    return "".join(_ALPHABET[ord(c) % len(_ALPHABET)] for c in str(_fnv1a32(text.encode())))


def template_name(job: BatchJob) -> str:
    return f"{job.metadata.name}-pgt-0"


def workload_name(job: BatchJob) -> str:
    """computeWorkloadName: `<job name, truncated>-<hash of its uid>`. Kubernetes hashes the
    uid as `dump.ForHash` prints it; this hashes the plain string, so the names are shaped
    alike but not byte-identical to what kube-controller-manager would choose."""
    suffix = _hash(job.metadata.uid or "")
    return f"{(job.metadata.name or '')[: _NAME_MAX - len(suffix) - 1]}-{suffix}"


def pod_group_name(workload: str, template: str) -> str:
    """computePodGroupName: `<workload>-<template>-<hash of both>`, the longer part cut when
    they do not fit (each keeps up to half; the workload gets the odd character)."""
    suffix = _hash(workload + template)
    room = _NAME_MAX - len(suffix) - 2
    if len(workload) + len(template) > room:
        half = room // 2
        if len(workload) <= half:
            template = template[: room - len(workload)]
        elif len(template) <= half:
            workload = workload[: room - len(template)]
        else:
            workload, template = workload[: room - half], template[:half]
    return f"{workload}-{template}-{suffix}"


def wanted(job: BatchJob) -> bool:
    """A root Job with `spec.scheduling` whose template names no PodGroup of its own."""
    owned = any(r.controller for r in job.metadata.owner_references or ())
    brought = (job.spec.template.spec or {}).get("schedulingGroup")
    return job.spec.scheduling is not None and not brought and not owned


def never_started(state: BatchJobRecord) -> bool:
    """isNewJob: no pods, no startTime, no pod counted, never suspended (a Job seen first after
    it ran keeps the Volcano path, as Kubernetes leaves Jobs older than its gate alone)."""
    status = state.status
    return (
        not state.pods
        and status.start_time is None
        and not status.succeeded
        and not status.failed
        and status.condition(ConditionType.SUSPENDED) is None
    )


def min_count(job: BatchJob) -> int | None:
    """The gang's minCount, defaulted to max(1, parallelism) (defaultMinCountForJob: follows
    parallelism while unset); None: a basic policy."""
    gang = job.spec.scheduling.gang if job.spec.scheduling else None
    if gang is None:
        return None
    if gang.min_count is not None:
        return gang.min_count
    return max(1, job.spec.parallelism if job.spec.parallelism is not None else 1)


def _config(job: BatchJob) -> dict[str, Any]:
    """What the template and the PodGroup both carry: the policy, priority class and the
    other building blocks as written."""
    count = min_count(job)
    policy: dict[str, Any] = {"gang": {"minCount": count}} if count else {"basic": {}}
    written: dict[str, Any] = job.spec.scheduling.dump() if job.spec.scheduling else {}
    out: dict[str, Any] = {
        "schedulingPolicy": policy,
        **{k: written[k] for k in _BLOCKS if k in written},
    }
    priority = (job.spec.template.spec or {}).get("priorityClassName")
    if priority:
        out["priorityClassName"] = priority
    return out


def _job_owner(job: BatchJob) -> dict[str, Any]:
    ref = controller_reference(
        batchv1.API_VERSION, batchv1.KIND, job.metadata.name or "", job.metadata.uid or ""
    )
    return ref.dump()


def workload(job: BatchJob) -> dict[str, Any]:
    """The Job's Workload: owned by it, `spec.controllerRef` naming it, one template."""
    return {
        "apiVersion": kube_gangs.API_VERSION,
        "kind": kube_gangs.WORKLOAD_KIND,
        "metadata": {
            "name": workload_name(job),
            "namespace": job.metadata.namespace,
            "ownerReferences": [_job_owner(job)],
        },
        "spec": {
            "controllerRef": {
                "apiGroup": batchv1.GROUP,
                "kind": batchv1.KIND,
                "name": job.metadata.name,
            },
            "podGroupTemplates": [{"name": template_name(job), **_config(job)}],
        },
    }


def pod_group(job: BatchJob, workload_uid: str) -> dict[str, Any]:
    """The Job's PodGroup: controlled by the Job, also owned by its Workload (no deletion
    blocked), made from the template; with the template's queue for the mirror."""
    name, template = workload_name(job), template_name(job)
    meta: dict[str, Any] = {
        "name": pod_group_name(name, template),
        "namespace": job.metadata.namespace,
        "ownerReferences": [
            _job_owner(job),
            {
                "apiVersion": kube_gangs.API_VERSION,
                "kind": kube_gangs.WORKLOAD_KIND,
                "name": name,
                "uid": workload_uid,
            },
        ],
    }
    notes = (job.spec.template.metadata or {}).get("annotations") or {}
    queue = notes.get(batchv1.QUEUE_ANNOTATION)
    if queue:
        meta["annotations"] = {labels.QUEUE_NAME: queue}
    return {
        "apiVersion": kube_gangs.API_VERSION,
        "kind": kube_gangs.POD_GROUP_KIND,
        "metadata": meta,
        "spec": {"workloadRef": {"workloadName": name, "templateName": template}, **_config(job)},
    }


def min_count_patch(count: int) -> dict[str, Any]:
    """A merge patch of the PodGroup's minCount (the Workload's is `workload_patch`)."""
    return {"spec": {"schedulingPolicy": {"gang": {"minCount": count}}}}


def workload_patch(count: int) -> list[dict[str, Any]]:
    """A JSON patch of the one template's minCount (a merge patch would replace the list)."""
    path = "/spec/podGroupTemplates/0/schedulingPolicy/gang/minCount"
    return [{"op": "replace", "path": path, "value": count}]


def pod_spec(spec: dict[str, Any], meta: dict[str, Any], group: SchedulingGroup) -> None:
    """A pod of the Job names the PodGroup, and is also owned by it (no deletion blocked, as
    Kubernetes does); the Volcano group-name annotation is the mirror's to write."""
    spec["schedulingGroup"] = {"podGroupName": group.pod_group}
    meta["ownerReferences"].append(
        {
            "apiVersion": kube_gangs.API_VERSION,
            "kind": kube_gangs.POD_GROUP_KIND,
            "name": group.pod_group,
            "uid": group.uid,
        }
    )


# -- the core's part ---------------------------------------------------------------------------


def follow(state: BatchJobRecord) -> tuple[BatchJobRecord, list[batch_fx.AnyEffect]]:
    """Before the first pod of a Job that never started: take its Workload and PodGroup on,
    ensured until they exist; then a changed minCount written onto both."""
    job = state.job
    if job is None or state.deleted or not state.follow_scheduling or state.status.finished:
        return state, []
    gang = state.kube_gang
    if gang is None:
        if not wanted(job) or not never_started(state) or state.pod_group:
            return state, []
        name = workload_name(job)
        gang = KubeGang(workload=name, pod_group=pod_group_name(name, template_name(job)))
        state = state.model_copy(update={"kube_gang": gang})
    if gang.uid is None:
        return state, [batch_fx.EnsureWorkload(job=job)]
    count = min_count(job)
    if count is None or count == gang.min_count:
        return state, []
    gang = gang.model_copy(update={"min_count": count})
    return state.model_copy(update={"kube_gang": gang}), [
        batch_fx.PatchGangMinCount(job=job, min_count=count)
    ]


def waiting(state: BatchJobRecord) -> bool:
    """The Job's PodGroup is not ensured yet: nothing else is done for it before."""
    return state.kube_gang is not None and state.kube_gang.uid is None


def ensured(state: BatchJobRecord, outcome: WorkloadEnsured) -> BatchJobRecord:
    """Both exist, with the minCount they were made with (the activity brings one found
    already there up to date)."""
    if state.kube_gang is None or state.job is None:
        return state
    gang = state.kube_gang.model_copy(
        update={"uid": outcome.uid, "min_count": min_count(state.job)}
    )
    return state.model_copy(update={"kube_gang": gang})


def failed(state: BatchJobRecord, effect: str) -> BatchJobRecord:
    """A minCount write that gave up is written again on the next sync."""
    if effect != "PatchGangMinCount" or state.kube_gang is None:
        return state
    return state.model_copy(
        update={"kube_gang": state.kube_gang.model_copy(update={"min_count": None})}
    )


def named(
    state: BatchJobRecord, effects: tuple[batch_fx.AnyEffect, ...]
) -> tuple[batch_fx.AnyEffect, ...]:
    """The sync's CreatePods, naming the Job's PodGroup when it has one."""
    gang = state.kube_gang
    if gang is None or gang.uid is None:
        return effects
    group = SchedulingGroup(pod_group=gang.pod_group, uid=gang.uid)
    return tuple(
        e.model_copy(update={"group": group}) if isinstance(e, batch_fx.CreatePods) else e
        for e in effects
    )
