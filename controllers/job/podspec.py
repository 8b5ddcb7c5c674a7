"""Pod and PVC manifests and PodGroup sizes for a Volcano Job, as Volcano's job controller
makes them: pure builders.

Kept beside the activities that send them, and free of I/O so they are unit-tested alone.
Pod and PodGroup names are deterministic (`<job>-<task>-<index>`, `<job>-<uid>`), so a retried
activity finds what an earlier attempt created; a claim name the controller makes has a random
part, drawn by `activities.controllers.volume_claims` and kept in the Job's spec, which pods read it
from.
"""

from __future__ import annotations

import copy
import string
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

from controllers.job.naming import pod_group_name
from models import labels, queue_refs
from models.defaults import DEFAULT_SCHEDULER
from models.quantity import format_quantity, parse_quantity
from models.scheduling import DEFAULT_QUEUE
from models.vcjob import API_VERSION, Job, TaskSpec

JOB_KIND = "Job"


def owner_reference(job: Job) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": JOB_KIND,
        "name": job.metadata.name,
        "uid": job.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


CLAIM_SUFFIX_CHARS: Final = string.digits + string.ascii_lowercase
CLAIM_SUFFIX_LENGTH: Final = 12


def generated_claim_name(job_name: str, draw: Callable[[str], str]) -> str:
    """`<job>-pvc-<12 of [0-9a-z]>`, Volcano's name for a claim the job did not name; `draw`
    picks one character (the caller's randomness, so this stays pure)."""
    suffix = "".join(draw(CLAIM_SUFFIX_CHARS) for _ in range(CLAIM_SUFFIX_LENGTH))
    return f"{job_name}-pvc-{suffix}"


def claim_names(job: Job) -> list[str]:
    """The PVC each job volume mounts: the name its spec carries (the user's, or the one the
    controller wrote back). A volume without one belongs to a job whose run began before names
    were written back: that run made its PVC as `<job>-pvc-<i>`."""
    return [
        v.volume_claim_name or f"{job.metadata.name}-pvc-{i}"
        for i, v in enumerate(job.spec.volumes or [])
    ]


def _task(job: Job, name: str) -> TaskSpec:
    for task in job.spec.tasks:
        if (task.name or labels.DEFAULT_TASK_SPEC) == name:
            return task
    raise ValueError(f"job {job.metadata.namespace}/{job.metadata.name} has no task {name!r}")


def _queue_label(namespace: str, queue: str) -> dict[str, str]:
    """The queue-name label, for a cluster Queue only, exactly as before NamespaceQueues.

    Volcano's NamespaceQueue design (§3.6.3) keeps labels as compatibility metadata, never the
    scheduler's source of truth: the annotation carries the raw reference. A label value
    cannot hold the '/' of `namespace/<name>`, and a malformed reference (which the webhook
    refuses) might not be a valid label value either: either would fail the pod's creation."""
    try:
        target = queue_refs.workload(namespace, queue)
    except queue_refs.BadReference:
        return {}
    return {} if target.namespaced else {labels.QUEUE_NAME: queue}


def build_pod(
    job: Job,
    task_name: str,
    index: int,
    version: int,
    retry_count: int,
    scheduler_override: str | None = None,
    pod_group: str | None = None,
) -> dict[str, Any]:
    """The pod `<job>-<task>-<index>` from the task template, as Volcano's createJobPod;
    `pod_group` None: its gang is the job's own PodGroup."""
    task = _task(job, task_name)
    template = task.template.model_dump(mode="json", by_alias=True) if task.template else {}
    meta = copy.deepcopy(template.get("metadata") or {})
    spec: dict[str, Any] = copy.deepcopy(template.get("spec") or {})
    name = f"{job.metadata.name}-{task_name}-{index}"
    job_meta = job.metadata
    annotations = dict(meta.get("annotations") or {})
    pod_labels = dict(meta.get("labels") or {})
    queue = job.spec.queue or DEFAULT_QUEUE
    common = {
        labels.TASK_INDEX: str(index),
        labels.TASK_SPEC: task_name,
        labels.JOB_NAME: job_meta.name or "",
    }
    annotations.update(common)
    annotations[labels.QUEUE_NAME] = queue  # the raw reference: what the scheduler reads
    annotations.update(
        {
            labels.GROUP_NAME: pod_group or pod_group_name(job),
            labels.JOB_VERSION: str(version),
            labels.TEMPLATE_UID: f"{job_meta.name}-{task_name}",
            labels.JOB_RETRY_COUNT: str(retry_count),
        }
    )
    if task.topology_policy:
        annotations[labels.NUMA_TOPOLOGY_POLICY] = task.topology_policy
    pod_labels.update(common)
    pod_labels.update(_queue_label(job_meta.namespace or "", queue))
    pod_labels[labels.JOB_NAMESPACE] = job_meta.namespace or ""
    job_annotations, job_labels = job_meta.annotations or {}, job_meta.labels or {}
    annotations.update(
        {k: job_annotations[k] for k in labels.ANNOTATIONS_TO_PODS if k in job_annotations}
    )
    budget = next((k for k in labels.DISRUPTION_BUDGET if k in job_annotations), None)
    if budget is not None:
        annotations[budget] = job_annotations[budget]
    pod_labels.update({k: job_labels[k] for k in labels.LABELS_TO_PODS if k in job_labels})
    if task.partition_policy is not None:
        size = task.partition_policy.partition_size
        pod_labels[labels.PARTITION_ID] = str(index // size if size > 0 else 0)
    if scheduler_override is not None:
        spec["schedulerName"] = scheduler_override
    elif not spec.get("schedulerName"):
        spec["schedulerName"] = job.spec.scheduler_name or DEFAULT_SCHEDULER
    if job.spec.priority_class_name and not spec.get("priorityClassName"):
        spec["priorityClassName"] = job.spec.priority_class_name
    _mount_volumes(job, spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **{k: v for k, v in meta.items() if k not in ("name", "namespace", "labels")},
            "name": name,
            "namespace": job_meta.namespace,
            "labels": pod_labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }


def _mount_volumes(job: Job, spec: dict[str, Any]) -> None:
    volumes = job.spec.volumes or []
    if not volumes:
        return
    pod_volumes = spec.setdefault("volumes", [])
    for i, (volume, claim) in enumerate(zip(volumes, claim_names(job), strict=True)):
        volume_name = f"caldera-volume-{i}"
        pod_volumes.append({"name": volume_name, "persistentVolumeClaim": {"claimName": claim}})
        for container in spec.get("containers") or []:
            mounts = container.setdefault("volumeMounts", [])
            mounts.append({"name": volume_name, "mountPath": volume.mount_path})


def claim_manifest(job: Job, name: str, claim: dict[str, Any]) -> dict[str, Any]:
    """The PVC the controller creates for a volume's `volumeClaim`, owned by the Job."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": job.metadata.namespace,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": copy.deepcopy(claim),
    }


def min_task_member(job: Job) -> dict[str, int]:
    out = {}
    for task in job.spec.tasks:
        name = task.name or labels.DEFAULT_TASK_SPEC
        partition = task.partition_policy
        if task.min_available is not None:
            out[name] = task.min_available
        elif partition is not None and partition.min_partitions:
            out[name] = partition.min_partitions * partition.partition_size
        else:
            out[name] = task.replicas or 0
    return out


def pod_requests(template_spec: dict[str, Any]) -> dict[str, Fraction]:
    """One pod's requests: containers summed, init containers as a maximum, requests
    defaulting to limits, plus one `pods` (the quota view Volcano sizes minResources with)."""
    total: dict[str, Fraction] = {}
    for container in template_spec.get("containers") or []:
        for name, value in _requests(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in template_spec.get("initContainers") or []:
        for name, value in _requests(container).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    total["pods"] = Fraction(1)
    return total


def _requests(container: dict[str, Any]) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {k: parse_quantity(v) for k, v in merged.items()}


def min_resources(job: Job, priorities: dict[str, int]) -> dict[str, str]:
    """The PodGroup's minResources: what the job's `minAvailable` pods request, taking pods
    from its tasks in priority order (highest priorityClass first), as Volcano counts them."""
    tasks = sorted(
        job.spec.tasks,
        key=lambda t: (
            -priorities.get(
                ((t.template.spec if t.template else None) or {}).get("priorityClassName", ""), 0
            )
        ),
    )
    remaining = job.spec.min_available or 0
    minimum = sum((t.replicas or 0) if t.min_available is None else t.min_available for t in tasks)
    counts: dict[int, int] = {}
    if remaining < minimum:
        for i, task in enumerate(tasks):
            take = min(remaining, task.replicas or 0)
            counts[i], remaining = take, remaining - take
    else:
        for i, task in enumerate(tasks):
            first = (task.replicas or 0) if task.min_available is None else task.min_available
            take = min(remaining, first)
            counts[i], remaining = take, remaining - take
        for i, task in enumerate(tasks):
            extra = min(remaining, (task.replicas or 0) - counts[i])
            counts[i], remaining = counts[i] + extra, remaining - extra
    total: dict[str, Fraction] = {}
    for i, task in enumerate(tasks):
        spec = (task.template.spec if task.template else None) or {}
        for name, value in pod_requests(spec).items():
            total[name] = total.get(name, Fraction(0)) + value * counts[i]
    return {k: format_quantity(v) for k, v in sorted(total.items()) if v}
