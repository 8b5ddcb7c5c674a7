"""batch/v1 Jobs and their pods → BatchJobWorkflow payloads. Pure functions, one object at a time.

Only Jobs whose `spec.managedBy` is Caldera's controller name are Caldera's; the built-in job
controller runs the rest and the forwarder ignores them. A pod belongs to a Job through its
controller ownerReference (kind Job, apiVersion batch/v1), as the job controller resolves it.
The snapshot carries what the controller reads from a pod, including its finish time by the
controller's own rule (last container finish, else the Ready=False transition, else the
deletion time minus the grace period, else the creation time). Whether a change is worth
sending given what was seen before is the router's call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from forwarder.routing import envelopes, translate
from models import batchv1
from models.meta import parse_time
from models.signals import batchjob as batchjob_signals

Obj = envelopes.Obj


def managed(obj: Obj) -> bool:
    return (obj.get("spec") or {}).get("managedBy") == batchv1.CONTROLLER_NAME


def job_ref(obj: Obj) -> envelopes.BatchJobRef:
    meta = translate.metadata(obj)
    return envelopes.BatchJobRef(str(meta.get("namespace", "")), str(meta.get("name", "")))


def owner_uid(obj: Obj) -> str | None:
    """The uid of the batch/v1 Job controlling this pod; None: no such owner."""
    for ref in translate.metadata(obj).get("ownerReferences") or ():
        if (
            ref.get("controller")
            and ref.get("kind") == batchv1.KIND
            and ref.get("apiVersion") == batchv1.API_VERSION
        ):
            return str(ref.get("uid", ""))
    return None


def _count(notes: Mapping[str, str], key: str) -> int:
    """A non-negative int32 annotation; 0 when absent or malformed, as the controller reads it."""
    try:
        value = int(notes.get(key, "0"))
    except ValueError:
        return 0
    return value if 0 <= value <= 2**31 - 1 else 0


def _index(notes: Mapping[str, str]) -> int | None:
    try:
        value = int(notes[batchv1.COMPLETION_INDEX])
    except (KeyError, ValueError):
        return None
    return value if value >= 0 else None


def _ready(conditions: Sequence[Mapping[str, Any]]) -> tuple[bool, datetime | None]:
    for c in conditions:
        if c.get("type") == "Ready":
            ready = c.get("status") == "True"
            return ready, parse_time(c.get("lastTransitionTime")) if ready else None
    return False, None


def _latest_finish(statuses: Sequence[Mapping[str, Any]]) -> datetime | None:
    """The last finishedAt, or None when any of them has not terminated."""
    latest: datetime | None = None
    for status in statuses:
        finished = parse_time(
            ((status.get("state") or {}).get("terminated") or {}).get("finishedAt")
        )
        if finished is None:
            return None
        latest = finished if latest is None or finished > latest else latest
    return latest


def finished_at(obj: Obj) -> datetime | None:
    """getFinishedTime of the job controller."""
    meta = translate.metadata(obj)
    status = obj.get("status") or {}
    sidecars = {
        c.get("name")
        for c in (obj.get("spec") or {}).get("initContainers") or []
        if c.get("restartPolicy") == "Always"
    }
    inits = [s for s in status.get("initContainerStatuses") or [] if s.get("name") in sidecars]
    found = _latest_finish([*(status.get("containerStatuses") or []), *inits])
    if found is not None:
        return found
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "False":
            at = parse_time(c.get("lastTransitionTime"))
            if at is not None:
                return at
    deleted = parse_time(meta.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - timedelta(seconds=int(meta.get("deletionGracePeriodSeconds") or 0))
    return parse_time(meta.get("creationTimestamp"))


def _exits(
    statuses: Sequence[Mapping[str, Any]], init: bool
) -> list[batchjob_signals.ContainerExitSnapshot]:
    out = []
    for s in statuses:
        terminated = (s.get("state") or {}).get("terminated")
        if terminated is not None:
            code = int(terminated.get("exitCode", 0))
            out.append(
                batchjob_signals.ContainerExitSnapshot(
                    name=str(s.get("name")), exit_code=code, init=init
                )
            )
    return out


def pod_snapshot(obj: Obj, deleted: bool = False) -> batchjob_signals.BatchPodSnapshot:
    meta = translate.metadata(obj)
    notes = translate.annotations_of(obj)
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    containers = status.get("containerStatuses") or []
    inits = status.get("initContainerStatuses") or []
    conditions = status.get("conditions") or []
    ready, ready_since = _ready(conditions)
    sidecars = {
        c.get("name")
        for c in spec.get("initContainers") or []
        if c.get("restartPolicy") == "Always"
    }
    phase = str(status.get("phase") or "Pending")
    deleting = meta.get("deletionTimestamp") is not None
    return batchjob_signals.BatchPodSnapshot(
        name=str(meta.get("name", "")),
        uid=translate.uid(obj),
        resource_version=str(meta.get("resourceVersion", "")),
        job_uid=owner_uid(obj) or "",
        phase=phase,
        ready=ready,
        ready_since=ready_since,
        node_name=spec.get("nodeName") or None,
        deleting=deleting,
        deleted=deleted,
        finalizer=batchv1.TRACKING_FINALIZER in (meta.get("finalizers") or ()),
        index=_index(notes),
        failure_count=_count(notes, batchv1.INDEX_FAILURE_COUNT),
        ignored_failure_count=_count(notes, batchv1.INDEX_IGNORED_FAILURE_COUNT),
        exits=[*_exits(containers, init=False), *_exits(inits, init=True)],
        conditions={str(c.get("type")): str(c.get("status")) for c in conditions},
        max_restarts=max((int(s.get("restartCount", 0)) for s in containers), default=0),
        sidecar_restarts=max(
            (int(s.get("restartCount", 0)) for s in inits if s.get("name") in sidecars), default=0
        ),
        restarts=sum(int(s.get("restartCount", 0)) for s in [*containers, *inits]),
        created_at=parse_time(meta.get("creationTimestamp")),
        finished_at=finished_at(obj) if phase in ("Succeeded", "Failed") or deleting else None,
    )
