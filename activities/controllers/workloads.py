"""PodGroups for pods Caldera did not create (PodGroupWorkflow): read the pods' owners, create
or update the PodGroup, annotate the pods with its name.

Owners are read by reference: a ReplicaSet, StatefulSet, DaemonSet or batch/v1 Job the pod
names (and first, for pods that name a Kubernetes PodGroup, that PodGroup's Workload), and the
Deployment that controls a ReplicaSet after it (the Deployment controller copies
its annotations to its ReplicaSets, so this only matters while they lag). An owner already gone
is skipped, as Volcano skips one it cannot read. The PodGroup is created; if it exists, its
spec, labels and annotations are replaced when they differ from what the core built (the
fields Volcano's controller updates; the scheduler writes only the status). Annotating a pod
already gone is nothing to do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kubernetes import client
from pydantic import BaseModel, ConfigDict, Field
from temporalio import activity

from activities import errors, kube
from controllers.podgroup import build
from models import kube_gangs, labels, scheduling
from models.meta import OwnerReference
from models.scheduling import PodGroup

_APPS: Final = "apps/v1"
_BATCH: Final = "batch/v1"


class ReadOwnersInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    owners: list[OwnerReference]


class OwnerAnnotations(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    annotations: dict[str, str] = Field(default_factory=dict)  # only what the PodGroup reads


class ApplyPodGroupInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    group_name: str
    group: PodGroup | None  # None: leave the PodGroup as it is
    pods: dict[str, str]  # name → uid


class PodsAnnotated(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    uids: list[str] = Field(default_factory=list)  # annotated now, or gone


def _metadata(kind: str, name: str, namespace: str) -> client.V1ObjectMeta | None:
    """The owner's metadata; None: gone, or a kind whose annotations Volcano does not read."""
    apps, batch = client.AppsV1Api(kube.api()), client.BatchV1Api(kube.api())
    reads: dict[str, Callable[[str, str], Any]] = {
        "ReplicaSet": apps.read_namespaced_replica_set,
        "StatefulSet": apps.read_namespaced_stateful_set,
        "DaemonSet": apps.read_namespaced_daemon_set,
        "Deployment": apps.read_namespaced_deployment,
        "Job": batch.read_namespaced_job,
        kube_gangs.WORKLOAD_KIND: client.SchedulingV1beta1Api(kube.api()).read_namespaced_workload,
    }
    read = reads.get(kind)
    if read is None:
        return None
    found: Any = None
    with errors.kube_call(f"read {kind} {namespace}/{name}", ok=errors.GONE_OK):
        found = read(name, namespace)
    meta: client.V1ObjectMeta | None = found.metadata if found is not None else None
    return meta


def _ours(ref: OwnerReference) -> bool:
    group = {"Job": _BATCH, kube_gangs.WORKLOAD_KIND: kube_gangs.API_VERSION}.get(ref.kind, _APPS)
    return bool(ref.name) and ref.api_version == group


def _deployment(meta: client.V1ObjectMeta) -> str | None:
    """The Deployment controlling a ReplicaSet; None: none does."""
    for ref in meta.owner_references or ():
        if ref.controller and ref.kind == "Deployment" and ref.api_version == _APPS:
            return str(ref.name)
    return None


@activity.defn(name="read_owner_annotations")
def read_owner_annotations(request: ReadOwnersInput) -> OwnerAnnotations:
    """getAnnotationsFromUpperRes: every owner's annotations, the first owner's value of a key
    winning; of each only the keys the PodGroup reads."""
    found: dict[str, str] = {}
    for ref in request.owners:
        if not _ours(ref):
            continue
        metas = [_metadata(ref.kind, ref.name, request.namespace)]
        deployment = _deployment(metas[0]) if ref.kind == "ReplicaSet" and metas[0] else None
        if deployment is not None:
            metas.append(_metadata("Deployment", deployment, request.namespace))
        for meta in metas:
            for key, value in ((meta.annotations if meta else None) or {}).items():
                if build.inherited(key):
                    found.setdefault(key, value)
    return OwnerAnnotations(annotations=dict(sorted(found.items())))


def _differs(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    meta, want = existing.get("metadata") or {}, desired.get("metadata") or {}
    return (
        existing.get("spec") != desired.get("spec")
        or (meta.get("labels") or {}) != (want.get("labels") or {})
        or (meta.get("annotations") or {}) != (want.get("annotations") or {})
    )


def _apply(namespace: str, group: PodGroup) -> None:
    custom, name = kube.custom(), group.metadata.name or ""
    desired = group.dump()
    what = f"podgroup {namespace}/{name}"
    created = False  # stays so when it exists already
    with errors.kube_call(f"create {what}", ok=errors.EXISTS_OK):
        custom.create_namespaced_custom_object(
            scheduling.GROUP, scheduling.VERSION, namespace, "podgroups", desired
        )
        created = True
    if created:
        activity.logger.info("podgroup created podgroup=%s/%s", namespace, name)
        return
    with errors.kube_call(f"read {what}"):
        existing = kube.as_dict(
            custom.get_namespaced_custom_object(
                scheduling.GROUP, scheduling.VERSION, namespace, "podgroups", name
            )
        )
    if not _differs(existing, desired):
        return
    meta = desired["metadata"]
    patch = [
        {"op": "add", "path": "/spec", "value": desired["spec"]},
        {"op": "add", "path": "/metadata/labels", "value": meta.get("labels") or {}},
        {"op": "add", "path": "/metadata/annotations", "value": meta.get("annotations") or {}},
    ]
    with errors.kube_call(f"update {what}"):
        custom.patch_namespaced_custom_object(
            scheduling.GROUP,
            scheduling.VERSION,
            namespace,
            "podgroups",
            name,
            patch,
            _content_type="application/json-patch+json",
        )
    activity.logger.info("podgroup updated podgroup=%s/%s", namespace, name)


@activity.defn(name="apply_workload_pod_group")
def apply_workload_pod_group(request: ApplyPodGroupInput) -> PodsAnnotated:
    """The PodGroup first, then each pod's group-name annotation (a pod's scheduler must never
    see the name before the group exists)."""
    if request.group is not None:
        _apply(request.namespace, request.group)
    patch = {"metadata": {"annotations": {labels.GROUP_NAME: request.group_name}}}
    core = kube.core()
    for name, _ in sorted(request.pods.items()):
        with errors.kube_call(f"annotate pod {request.namespace}/{name}", ok=errors.GONE_OK):
            core.patch_namespaced_pod(name, request.namespace, patch)
    return PodsAnnotated(uids=sorted(request.pods.values()))
