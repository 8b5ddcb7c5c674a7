"""What the soak saw happen, recorded while it runs: every pod's life from a watch of the
namespace (re-listed after the apiserver restarts: a pod missing from the new list ended
while no one watched), and the jobs' phases from a poll."""

from __future__ import annotations

import functools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubernetes import client

from models import batchv1, labels
from service.reflector import Obj, Reflector

FINISHED = frozenset({"Completed", "Failed", "Terminated"})  # Volcano phases with no way back


@dataclass
class PodLife:
    uid: str
    name: str
    job: str  # the owning job's name ("" for a pod of no job)
    job_uid: str
    key: str  # job/task/index/version: never two live at once
    created: float  # creationTimestamp, epoch seconds
    node: str = ""
    phase: str = "Pending"
    running_at: float | None = None  # first seen Running
    ended: float | None = None  # Succeeded/Failed, or deleted


@dataclass
class JobSeen:
    name: str
    api: str
    uid: str = ""
    phase: str = ""  # Volcano phase, or Complete/Failed for batch/v1 ("" while neither)
    finished_at: float | None = None  # when it entered a phase with no way back
    deleted: bool = False
    restarts: int = 0  # Volcano retryCount
    version: int = 0


@dataclass
class Audit:
    namespace: str
    pods: dict[str, PodLife] = field(default_factory=dict)
    jobs: dict[str, JobSeen] = field(default_factory=dict)
    relists: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def live(self) -> list[PodLife]:
        with self._lock:
            return [p for p in self.pods.values() if p.ended is None]


def _epoch(ts: str | None) -> float:
    if not ts:
        return time.time()
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def _pod_key(pod: Obj) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    lab = meta.get("labels") or {}
    ann = meta.get("annotations") or {}
    if labels.JOB_NAME in lab:
        job = str(lab[labels.JOB_NAME])
        owners = meta.get("ownerReferences") or []
        owner = next((str(o.get("uid")) for o in owners if o.get("kind") == "Job"), "")
        task = ann.get(labels.TASK_SPEC) or lab.get(labels.TASK_SPEC, "")
        index = ann.get(labels.TASK_INDEX) or lab.get(labels.TASK_INDEX, "")
        version = ann.get(labels.JOB_VERSION) or lab.get(labels.JOB_VERSION, "")
        return job, owner, f"{job}/{task}/{index}/v{version}"
    job = str(lab.get(batchv1.JOB_NAME_LABEL, ""))
    owner = str(lab.get(batchv1.CONTROLLER_UID_LABEL, ""))
    index = ann.get(batchv1.COMPLETION_INDEX)
    # A non-indexed batch/v1 pod is one of `parallelism`: counted, not keyed.
    return job, owner, f"{job}/{index}" if index is not None else f"{job}/#{meta.get('name')}"


def _record(audit: Audit, pod: Obj, deleted: bool) -> None:
    meta = pod.get("metadata") or {}
    uid = str(meta.get("uid", ""))
    job, owner, key = _pod_key(pod)
    with audit._lock:
        life = audit.pods.get(uid)
        if life is None:
            life = PodLife(
                uid=uid,
                name=str(meta.get("name", "")),
                job=job,
                job_uid=owner,
                key=key,
                created=_epoch(meta.get("creationTimestamp")),
            )
            audit.pods[uid] = life
        life.node = str((pod.get("spec") or {}).get("nodeName") or life.node)
        life.phase = str((pod.get("status") or {}).get("phase") or life.phase)
        if life.phase == "Running" and life.running_at is None:
            life.running_at = time.time()
        if life.ended is None:
            life.ended = _ended(pod, deleted)


def _ended(pod: Obj, deleted: bool) -> float | None:
    """When the pod stopped counting as live, by the apiserver's clock where it says: its
    deletion began, or its containers finished (a replacement may start from then on)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    if meta.get("deletionTimestamp"):
        # The deletionTimestamp is when the grace period ends; the deletion began before it.
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        return _epoch(meta["deletionTimestamp"]) - grace
    if status.get("phase") in ("Succeeded", "Failed"):
        finished = [
            ((c.get("state") or {}).get("terminated") or {}).get("finishedAt")
            for c in status.get("containerStatuses") or []
        ]
        stamps = [_epoch(f) for f in finished if f]
        return max(stamps) if stamps else time.time()
    return time.time() if deleted else None


def watch_pods(audit: Audit, api: client.ApiClient) -> Reflector:
    """The namespace's pods, watched from now on (started; `stop()` it at the end)."""
    core = client.CoreV1Api(api)

    def listed(pods: list[Obj]) -> None:
        seen = {str((p.get("metadata") or {}).get("uid")) for p in pods}
        for pod in pods:
            _record(audit, pod, deleted=False)
        with audit._lock:
            for uid, life in audit.pods.items():
                if uid not in seen and life.ended is None:
                    life.ended = time.time()  # it went while no one watched
            audit.relists += 1

    reflector = Reflector(
        "pods",
        functools.partial(core.list_namespaced_pod, audit.namespace),
        listed,
        lambda kind, pod: _record(audit, pod, deleted=kind == "DELETED"),
    )
    reflector.start()
    return reflector


def _volcano_phase(job: Obj) -> tuple[str, float | None, int, int]:
    status = job.get("status") or {}
    state = status.get("state") or {}
    since = state.get("lastTransitionTime")
    return (
        str(state.get("phase") or ""),
        _epoch(since) if since else None,
        int(status.get("retryCount") or 0),
        int(status.get("version") or 0),
    )


def _batch_end(job: Obj) -> tuple[str, float | None]:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"]), _epoch(c.get("lastTransitionTime"))
    return "", None


def _items(response: Any) -> list[Obj]:
    items: list[Obj] = json.loads(response.data).get("items") or []
    return items


def poll_jobs(audit: Audit, api: client.ApiClient) -> None:
    """One look at every job of the namespace (errors leave the last look as it was)."""
    try:
        vc = _items(
            client.CustomObjectsApi(api).list_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", audit.namespace, "jobs", _preload_content=False
            )
        )
        plain = _items(
            client.BatchV1Api(api).list_namespaced_job(audit.namespace, _preload_content=False)
        )
    except Exception:
        return
    with audit._lock:
        present: set[str] = set()
        for api_name, items in (("volcano", vc), ("batch", plain)):
            for item in items:
                meta = item.get("metadata") or {}
                name = str(meta.get("name"))
                present.add(name)
                seen = audit.jobs.setdefault(name, JobSeen(name=name, api=api_name))
                seen.uid = str(meta.get("uid", ""))
                if api_name == "volcano":
                    phase, since, seen.restarts, seen.version = _volcano_phase(item)
                    finished = phase in FINISHED
                else:
                    phase, since = _batch_end(item)
                    finished = bool(phase)
                if finished and seen.finished_at is None:
                    seen.finished_at = since or time.time()
                seen.phase = phase
        for name, seen in audit.jobs.items():
            seen.deleted = name not in present and bool(seen.uid)
