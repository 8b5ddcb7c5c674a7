"""Short builders for what the session's writes read from the cache, beyond `builders`.

`group("a", "Inqueue", conditions=[unschedulable("why")], owners=[vcjob_owner("a")])` and
`pod("a-0", node="n1", claims=["data"], scheduled=("Unschedulable", "why"))` run the real
parsers (`scheduling.cache.observed`) over dicts shaped as the apiserver stores them; `claim`, `pv`
and `storage_class` are the storage objects `scheduling.cache.volumes` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from models import batchv1, vcjob
from scheduling.cache.observed import ObservedGroup, ObservedPod, ObservedQueue
from tests.unit.scheduling.builders import make_pod, make_podgroup, make_queue

Obj = dict[str, Any]


def vcjob_owner(name: str, uid: str | None = None) -> Obj:
    uid = f"uid-{name}" if uid is None else uid
    return {"apiVersion": vcjob.API_VERSION, "kind": "Job", "name": name, "uid": uid}


def batch_owner(name: str) -> Obj:
    return {"apiVersion": batchv1.API_VERSION, "kind": "Job", "name": name, "uid": f"uid-{name}"}


def other_owner(name: str, kind: str = "ReplicaSet", api_version: str = "apps/v1") -> Obj:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}


def condition(type_: str, message: str, transition: str = "1", **fields: str) -> Obj:
    """A PodGroup condition as an earlier session wrote it (plus any `fields`)."""
    written = {"type": type_, "status": "True", "reason": "", "message": message}
    return {**written, "transitionID": transition, **fields}


def group_obj(
    name: str = "pg",
    phase: str | None = "Inqueue",
    conditions: Sequence[Obj] = (),
    owners: Sequence[Obj] = (),
    namespace: str = "default",
) -> Obj:
    obj = make_podgroup(name, namespace=namespace)
    obj["metadata"]["ownerReferences"] = list(owners)
    obj["status"] = {"phase": phase} if phase is not None else {}
    if conditions:
        obj["status"]["conditions"] = list(conditions)
    return obj


def group(*args: Any, **kwargs: Any) -> ObservedGroup:
    """`group_obj(...)` as the session reads it."""
    return ObservedGroup.parse(group_obj(*args, **kwargs))


def pod_obj(
    name: str,
    node: str = "",
    claims: Sequence[str] = (),
    scheduled: tuple[str, str] | None = None,  # (reason, message) of PodScheduled=False
    namespace: str = "default",
) -> Obj:
    builder = make_pod(name, namespace=namespace)
    if node:
        builder.on(node, "Pending")
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    obj = builder.spec(volumes=volumes).obj() if volumes else builder.obj()
    obj["metadata"]["uid"] = f"uid-{name}"
    if scheduled is not None:
        reason, message = scheduled
        obj["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        ]
    return obj


def pod(*args: Any, **kwargs: Any) -> ObservedPod:
    """`pod_obj(...)` as the session reads it."""
    return ObservedPod.parse(pod_obj(*args, **kwargs))


def queue(name: str = "default", allocated: dict[str, str] | None = None) -> ObservedQueue:
    obj = make_queue(name)
    if allocated is not None:
        obj["status"]["allocated"] = allocated
    return ObservedQueue.parse(obj)


def claim(
    name: str, storage_class: str = "", bound_to: str = "", namespace: str = "default"
) -> Obj:
    spec = {"storageClassName": storage_class} if storage_class else {}
    if bound_to:
        spec["volumeName"] = bound_to
    return {"metadata": {"namespace": namespace, "name": name}, "spec": spec}


def pv(name: str, storage_class: str = "", phase: str = "Available") -> Obj:
    spec = {"storageClassName": storage_class} if storage_class else {}
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def storage_class(name: str, provisioner: str | None) -> Obj:
    obj: Obj = {"metadata": {"name": name}}
    if provisioner is not None:
        obj["provisioner"] = provisioner
    return obj
