"""Forwarder unit tests. Raw-object builders shared by them live here: the forwarder reads the
apiserver's camelCase JSON, so inputs are plain dicts shaped exactly like it."""

from __future__ import annotations

from typing import Any

JOB_API = "batch.volcano.sh/v1alpha1"
QUEUE_API = "scheduling.volcano.sh/v1beta1"


def owner(name: str = "train", uid: str = "job-uid", kind: str = "Job") -> dict[str, Any]:
    return {"apiVersion": JOB_API, "kind": kind, "name": name, "uid": uid, "controller": True}


def job(
    name: str = "train",
    uid: str = "job-uid",
    ns: str = "ns",
    phase: str | None = None,
    replicas: int = 2,
    **status: Any,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": JOB_API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "resourceVersion": "1"},
        "spec": {"tasks": [{"name": "worker", "replicas": replicas}]},
    }
    if phase is not None or status:
        obj["status"] = {**({"state": {"phase": phase}} if phase else {}), **status}
    return obj


def pod(
    name: str = "train-worker-0",
    uid: str = "pod-uid",
    ns: str = "ns",
    job_name: str | None = "train",
    task: str | None = "worker",
    rv: str = "10",
    phase: str | None = "Pending",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    containers: tuple[str, ...] = ("main",),
    statuses: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    node: str | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    notes = {"volcano.sh/task-index": "0", "volcano.sh/job-version": "0"}
    if job_name is not None:
        notes["volcano.sh/job-name"] = job_name
    if task is not None:
        notes["volcano.sh/task-spec"] = task
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": uid,
        "resourceVersion": rv,
        "annotations": {**notes, **(annotations or {})},
        "labels": {"volcano.sh/job-name": job_name or "", **(labels or {})},
        "ownerReferences": [owner()] if owners is None else owners,
    }
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    if node is not None:
        spec["nodeName"] = node
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    return {"metadata": meta, "spec": spec, "status": status}


def container(
    name: str = "main", ready: bool = False, restarts: int = 0, exit_code: int | None = None
) -> dict[str, Any]:
    state = {"terminated": {"exitCode": exit_code}} if exit_code is not None else {"running": {}}
    return {"name": name, "ready": ready, "restartCount": restarts, "state": state}


def pod_group(
    name: str = "train-pg",
    uid: str = "pg-uid",
    ns: str = "ns",
    phase: str | None = "Pending",
    owners: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    queue: str | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if conditions is not None:
        status["conditions"] = conditions
    spec: dict[str, Any] = {"minMember": 1}
    if queue is not None:
        spec["queue"] = queue
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid,
            "ownerReferences": [owner()] if owners is None else owners,
        },
        "spec": spec,
        "status": status,
    }


def queue(
    name: str = "q1",
    uid: str | None = None,
    parent: str | None = "root",
    state: str | None = "Open",
    annotations: dict[str, str] | None = None,
    weight: int = 1,
    **status: Any,
) -> dict[str, Any]:
    """A Queue; uid defaults to "uid-<name>", `status` adds counters such as running=1."""
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": "1"}
    if annotations is not None:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"weight": weight, "reclaimable": True}
    if parent is not None:
        spec["parent"] = parent
    obj: dict[str, Any] = {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": meta}
    obj["spec"] = spec
    if state is not None or status:
        obj["status"] = {**({"state": state} if state else {}), **status}
    return obj


def queue_owner(name: str = "q1", uid: str = "uid-q1") -> dict[str, Any]:
    return {"apiVersion": QUEUE_API, "kind": "Queue", "name": name, "uid": uid, "controller": True}


def command(
    name: str = "train-abortjob-x",
    uid: str = "cmd-uid",
    ns: str = "ns",
    action: str | None = "AbortJob",
    target: dict[str, Any] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """`target` None: the default Job; {}: no target at all."""
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid}
    if owners is not None:
        meta["ownerReferences"] = owners
    obj: dict[str, Any] = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": meta,
        "target": owner() if target is None else target,
        "reason": "user",
        "message": "stop it",
    }
    if action is not None:
        obj["action"] = action
    return obj
