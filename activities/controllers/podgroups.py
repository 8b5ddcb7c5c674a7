"""PodGroup side effects: ensure the job's gang exists with current sizes; delete it on kills.

Volcano updates an existing PodGroup only when minMember, minTaskMember, minResources, the
priority class or the sub-group policies (`controllers.job.subgroups`) differ; its queue,
network topology, labels and annotations are never changed after creation.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client
from temporalio import activity

from activities import errors, kube
from activities.messages import Done, EnsurePodGroupInput, PodGroupInput
from controllers.job import naming, podspec, subgroups
from models import scheduling
from models.scheduling import NetworkTopologySpec
from models.vcjob import Job

_GROUP, _VERSION, _PLURAL = scheduling.GROUP, scheduling.VERSION, "podgroups"


def _priorities(job: Job) -> dict[str, int]:
    """PriorityClass values of the classes the templates name (tasks are sized in that order)."""
    names = {
        ((t.template.spec if t.template else None) or {}).get("priorityClassName")
        for t in job.spec.tasks
    } - {None}
    if not names:
        return {}
    out: dict[str, int] = {}
    with errors.kube_call("list priority classes"):
        classes = client.SchedulingV1Api(kube.api()).list_priority_class().items
    for item in classes:
        name = item.metadata.name if item.metadata else None
        if name is not None and name in names:
            out[name] = item.value or 0
    return out


def desired_spec(job: Job, priorities: dict[str, int]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minMember": job.spec.min_available or 0,
        "minTaskMember": podspec.min_task_member(job),
        "queue": job.spec.queue or scheduling.DEFAULT_QUEUE,
        "minResources": podspec.min_resources(job, priorities),
    }
    if job.spec.priority_class_name:
        spec["priorityClassName"] = job.spec.priority_class_name
    if (topology := job.spec.network_topology) is not None:
        # Volcano copies one of the two limits, the tier number first; only at creation.
        spec["networkTopology"] = NetworkTopologySpec(
            mode=topology.mode or "hard",
            highest_tier_allowed=topology.highest_tier_allowed,
            highest_tier_name=(
                topology.highest_tier_name if topology.highest_tier_allowed is None else None
            ),
        ).dump()
    if policies := subgroups.sub_group_policy(job):
        # Only for a job with partitions: other PodGroups stay as Volcano writes them (its
        # empty list is left out on the wire).
        spec["subGroupPolicy"] = [p.dump() for p in policies]
    return spec


@activity.defn(name="ensure_pod_group")
def ensure_pod_group(request: EnsurePodGroupInput) -> Done:
    """Create the job's PodGroup, or bring an existing one's sizes up to date.

    With `look_up` (a job that ran under a controller before), as Volcano's controller does:
    its own `<job>-<uid>`, else the `<job>` Volcano named them before 1.5, which is then kept
    and updated instead of making a second gang. A new job skips the reads: its create is the
    lookup."""
    job = request.job
    namespace = job.metadata.namespace or "default"
    spec = desired_spec(job, _priorities(job))
    if request.look_up:
        for name in (naming.pod_group_name(job), naming.legacy_pod_group_name(job)):
            current = _read(namespace, name)
            if current is not None:
                _update(namespace, name, update_patch(job, current, spec))
                return Done()
    name = naming.pod_group_name(job)
    manifest = {
        "apiVersion": scheduling.API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(job.metadata.labels or {}),
            "annotations": dict(job.metadata.annotations or {}),
            "ownerReferences": [podspec.owner_reference(job)],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    created = False
    with errors.kube_call(f"create podgroup {namespace}/{name}", ok=errors.EXISTS_OK):
        made = kube.custom().create_namespaced_custom_object(
            _GROUP, _VERSION, namespace, _PLURAL, manifest, _preload_content=False
        )
        kube.unread(made)
        created = True
    if not created:
        current = _read(namespace, name)
        if current is not None:
            _update(namespace, name, update_patch(job, current, spec))
    return Done()


def _read(namespace: str, name: str) -> dict[str, Any] | None:
    """None: there is no such PodGroup."""
    found: dict[str, Any] | None = None
    with errors.kube_call(f"read podgroup {namespace}/{name}", ok=errors.GONE_OK):
        found = kube.as_dict(
            kube.custom().get_namespaced_custom_object(_GROUP, _VERSION, namespace, _PLURAL, name)
        )
    return found


def update_patch(job: Job, current: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The merge patch of the existing PodGroup `current`'s spec (shouldUpdateExistingPodGroup):
    the fields of `spec` Volcano changes that differ, and the sub-group policies when
    updatePgSubGroupPolicy would rewrite them; a field to clear is None (merge-patch null),
    which also stands for Volcano's empty policy list, left out on the wire. {}: nothing."""
    now = current.get("spec") or {}
    mutable = ("minMember", "minTaskMember", "minResources", "priorityClassName")
    patch = {k: spec.get(k) for k in mutable if now.get(k) != spec.get(k)}
    policies = subgroups.updated_sub_group_policy(job, now.get("subGroupPolicy"))
    if policies is not None:
        patch["subGroupPolicy"] = [p.dump() for p in policies] or None
    return patch


def _update(namespace: str, name: str, patch: dict[str, Any]) -> None:
    if patch:
        with errors.kube_call(f"update podgroup {namespace}/{name}"):
            patched = kube.custom().patch_namespaced_custom_object(
                _GROUP, _VERSION, namespace, _PLURAL, name, {"spec": patch}, _preload_content=False
            )
            kube.unread(patched)


@activity.defn(name="delete_pod_group")
def delete_pod_group(request: PodGroupInput) -> Done:
    with errors.kube_call(f"delete podgroup {request.namespace}/{request.name}", ok=errors.GONE_OK):
        deleted = kube.custom().delete_namespaced_custom_object(
            _GROUP, _VERSION, request.namespace, _PLURAL, request.name, _preload_content=False
        )
        kube.unread(deleted)
    return Done()
