"""Pods of a batch/v1 Job, as the built-in controller makes them from the template. Pure.

GetPodFromTemplate takes the template's labels, annotations and finalizers and its spec
verbatim (schedulerName included: kube-scheduler or Caldera's gang scheduler, whichever the
template names), adds the job-tracking finalizer and a controller owner reference that blocks
the Job's deletion. An Indexed Job's pod also gets the completion index as annotation and
label, `JOB_COMPLETION_INDEX` in every container, the hostname `<job>-<index>` and, with
backoffLimitPerIndex, the index's failure counts.
"""

from __future__ import annotations

import copy
from typing import Any

from controllers.batchjob import workload
from controllers.job import podspec
from models import batchv1, scheduling
from models import labels as volcano_labels
from models.batchv1 import NewPod
from models.quantity import format_quantity


def owner_reference(job: batchv1.BatchJob) -> dict[str, Any]:
    return {
        "apiVersion": batchv1.API_VERSION,
        "kind": batchv1.KIND,
        "name": job.metadata.name,
        "uid": job.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _index_env(container: dict[str, Any]) -> None:
    env = container.setdefault("env", [])
    if any(e.get("name") == batchv1.COMPLETION_INDEX_ENV for e in env):
        return
    path = f"metadata.labels['{batchv1.COMPLETION_INDEX}']"
    env.append(
        {"name": batchv1.COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": path}}}
    )


def build_pod(
    job: batchv1.BatchJob, pod: NewPod, group: batchv1.SchedulingGroup | None = None
) -> dict[str, Any]:
    """`group`: the Kubernetes PodGroup the pod names (`workload.pod_spec`); None: a gang
    scheduled Job's pod is annotated with its Volcano PodGroup."""
    template = job.spec.template
    meta = template.metadata or {}
    spec: dict[str, Any] = copy.deepcopy(template.spec or {})
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    finalizers = list(meta.get("finalizers") or [])
    if batchv1.TRACKING_FINALIZER not in finalizers:
        finalizers.append(batchv1.TRACKING_FINALIZER)
    if job.gang_scheduled and group is None:
        annotations[volcano_labels.GROUP_NAME] = job.pod_group_name
    if pod.index is not None:
        index = str(pod.index)
        annotations[batchv1.COMPLETION_INDEX] = index
        labels[batchv1.COMPLETION_INDEX] = index
        spec["hostname"] = f"{job.metadata.name}-{index}"
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            _index_env(container)
        if pod.failure_count is not None:
            annotations[batchv1.INDEX_FAILURE_COUNT] = str(pod.failure_count)
            if pod.ignored_failure_count > 0:
                count = str(pod.ignored_failure_count)
                annotations[batchv1.INDEX_IGNORED_FAILURE_COUNT] = count
    metadata: dict[str, Any] = {
        "name": pod.name,
        "namespace": job.metadata.namespace,
        "labels": labels,
        "annotations": annotations,
        "finalizers": finalizers,
        "ownerReferences": [owner_reference(job)],
    }
    if group is not None:
        workload.pod_spec(spec, metadata, group)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod_group(job: batchv1.BatchJob) -> dict[str, Any]:
    """The PodGroup of a Job whose pods name Caldera's gang scheduler, as Volcano's PodGroup
    controller makes one for pods it did not create: one pod is enough to run (minMember 1),
    minResources one pod's requests, the queue from the template's queue-name annotation."""
    template = job.spec.template
    notes = (template.metadata or {}).get("annotations") or {}
    pod_spec = template.spec or {}
    requests = podspec.pod_requests(pod_spec)
    spec: dict[str, Any] = {
        "minMember": 1,
        "queue": notes.get(batchv1.QUEUE_ANNOTATION) or scheduling.DEFAULT_QUEUE,
        "minResources": {k: format_quantity(v) for k, v in sorted(requests.items()) if v},
    }
    if pod_spec.get("priorityClassName"):
        spec["priorityClassName"] = pod_spec["priorityClassName"]
    return {
        "apiVersion": f"{scheduling.GROUP}/{scheduling.VERSION}",
        "kind": "PodGroup",
        "metadata": {
            "name": job.pod_group_name,
            "namespace": job.metadata.namespace,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }
