"""Kubernetes objects → signal payloads and the Job they belong to. Pure functions.

Reproduces the filters of Volcano's informer handlers: which pods, PodGroups and Commands
belong to a Job, and which Job updates are worth a signal. Deciding *whether* to send given
what was seen before is the router's job; this module only reads one object at a time.
Objects are the raw camelCase dicts the apiserver sends, never client models, so a field the
Python client does not know is still visible here. The raw-object accessors
(`metadata`, `annotations_of`, `uid`) are shared with `queue_translate`, the Queue side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from forwarder.routing import envelopes
from models import dispatch, labels, vcjob
from models.signals import common as common_signals
from models.signals import job as job_signals

Obj = envelopes.Obj


def metadata(obj: Obj) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def annotations_of(obj: Obj) -> Mapping[str, str]:
    found: Mapping[str, str] = metadata(obj).get("annotations") or {}
    return found


def _labels(obj: Obj) -> Mapping[str, str]:
    found: Mapping[str, str] = metadata(obj).get("labels") or {}
    return found


def _int(text: str | None) -> int | None:
    """An integer annotation; None when absent or not a number (Volcano ignores those too)."""
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def uid(obj: Obj) -> str:
    return str(metadata(obj).get("uid", ""))


def _controller_job(obj: Obj) -> Mapping[str, Any] | None:
    """The controller ownerReference to a Volcano Job; None: not owned by a Job."""
    for ref in metadata(obj).get("ownerReferences") or ():
        group = str(ref.get("apiVersion", "")).split("/")[0]
        if ref.get("controller") and ref.get("kind") == "Job" and group == vcjob.GROUP:
            found: Mapping[str, Any] = ref
            return found
    return None


def controller_job_uid(obj: Obj) -> str | None:
    """The uid of the Volcano Job that controls an object; None: no Job controls it."""
    owner = _controller_job(obj)
    return str(owner.get("uid", "")) if owner is not None else None


# --- Jobs -----------------------------------------------------------------------------------


def job_ref(obj: Obj) -> envelopes.JobRef:
    meta = metadata(obj)
    return envelopes.JobRef(str(meta.get("namespace", "")), str(meta.get("name", "")))


# (spec, deleting, a phase acted on, a dispatched copy's lease: None for every other Job)
JobFingerprint = tuple[Any, bool, str | None, str | None]
# The phases Volcano's controller acts on entering, through the sync its own echo of them
# causes: the passing ones (Restarting kills the pods, the Pending after it creates them again)
# and the finished ones (the soft kill that deletes the PodGroup and the plugin objects).
ACTED_ON: Final = frozenset(
    {
        vcjob.JobPhase.RESTARTING,
        vcjob.JobPhase.ABORTING,
        vcjob.JobPhase.TERMINATING,
        vcjob.JobPhase.COMPLETING,
        vcjob.JobPhase.COMPLETED,
        vcjob.JobPhase.FAILED,
        vcjob.JobPhase.TERMINATED,
        vcjob.JobPhase.ABORTED,
    }
)


def job_fingerprint(obj: Obj) -> JobFingerprint:
    """What a Job update (Volcano's or batch/v1) must change to be worth a signal: its spec
    (suspend, parallelism, …), the deletionTimestamp appearing (the Job is going), or a phase
    change into or out of a phase the controller acts on.

    Volcano's updateJob handler enqueues on every `status.state.phase` change: its controller
    learns its own writes back from the informer, and a state's work starts with the sync that
    echo causes. Caldera's core keeps that shape, so those echoes still go (a job that just
    finished removes its PodGroup on its echo; without it, a queue waiting for its PodGroups
    to go stays Closing); the others (Pending and Running, on the way of every job) change
    nothing and are not sent.

    A copy dispatched here from a manager carries a lease its manager renews: each renewal is
    news (its JobWorkflow re-arms the fencing timer, `controllers.job.lease`); a Job without
    one has None there, always.
    """
    deleting = metadata(obj).get("deletionTimestamp") is not None
    phase = str(((obj.get("status") or {}).get("state") or {}).get("phase") or "")
    lease = annotations_of(obj).get(dispatch.LEASE_ANNOTATION)
    return (obj.get("spec"), deleting, phase if phase in ACTED_ON else None, lease)


def job_observed(obj: Obj) -> job_signals.JobObserved:
    return job_signals.JobObserved(job=payload_of(obj))


def payload_of(obj: Obj) -> dict[str, Any]:
    """The object as a signal carries it: without `metadata.managedFields`, the apiserver's
    record of which client set which field (often larger than the spec), which no core reads;
    every signal and history event that holds the object is that much smaller. The
    annotations stay whole, `kubectl.kubernetes.io/last-applied-configuration` too: a Job's
    are copied onto its PodGroup, as Volcano copies them."""
    meta = metadata(obj)
    if "managedFields" not in meta:
        return dict(obj)
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


# --- Pods -----------------------------------------------------------------------------------


def pod_job(obj: Obj) -> envelopes.JobRef | None:
    """The Job a pod reports to; None: not a Volcano task pod (no job-name or task-spec)."""
    notes = annotations_of(obj)
    job_name = notes.get(labels.JOB_NAME)
    if not job_name or labels.TASK_SPEC not in notes:
        return None
    return envelopes.JobRef(str(metadata(obj).get("namespace", "")), job_name)


def _first_container_exit_code(obj: Obj) -> int | None:
    """Exit code of the first container in spec order; None: it has not terminated.

    Volcano reads `containerStatuses[0]`; the apiserver does not promise status order, so
    the status is matched to the first spec container by name.
    """
    spec = obj.get("spec") or {}
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    containers = spec.get("containers") or []
    first = containers[0].get("name") if containers else None
    chosen = next((s for s in statuses if s.get("name") == first), None)
    if chosen is None and statuses:
        chosen = statuses[0]
    if chosen is None:
        return None
    terminated = (chosen.get("state") or {}).get("terminated")
    if terminated is None:
        return None
    return int(terminated.get("exitCode", 0))


def _ready(obj: Obj) -> bool:
    """Every spec container reports Ready (a pod with no statuses yet is not ready)."""
    containers = (obj.get("spec") or {}).get("containers") or []
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    ready = {s.get("name") for s in statuses if s.get("ready")}
    return bool(containers) and all(c.get("name") in ready for c in containers)


def pod_snapshot(obj: Obj, deleted: bool = False) -> job_signals.PodSnapshot:
    meta = metadata(obj)
    notes = annotations_of(obj)
    status = obj.get("status") or {}
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    owner = _controller_job(obj)
    return job_signals.PodSnapshot(
        name=str(meta.get("name", "")),
        uid=uid(obj),
        resource_version=str(meta.get("resourceVersion", "")),
        job_uid=str(owner["uid"]) if owner is not None and owner.get("uid") else None,
        task=notes.get(labels.TASK_SPEC, ""),
        index=_int(notes.get(labels.TASK_INDEX)),
        job_version=_int(notes.get(labels.JOB_VERSION)) or 0,
        phase=str(status.get("phase") or "Pending"),
        exit_code=_first_container_exit_code(obj),
        restart_count=sum(int(s.get("restartCount", 0)) for s in statuses),
        ready=_ready(obj),
        deleting=meta.get("deletionTimestamp") is not None,
        deleted=deleted,
        out_of_sync=notes.get(labels.OUT_OF_SYNC) == "true",
        partition=_labels(obj).get(labels.PARTITION_ID),
        node_name=(obj.get("spec") or {}).get("nodeName") or None,
    )


# --- PodGroups ------------------------------------------------------------------------------


def pod_group_job(obj: Obj) -> envelopes.JobRef | None:
    """The Job owning a PodGroup; None: not created by a Volcano Job (another controller's)."""
    owner = _controller_job(obj)
    if owner is None:
        return None
    return envelopes.JobRef(str(metadata(obj).get("namespace", "")), str(owner.get("name", "")))


def pod_group_phase(obj: Obj) -> str | None:
    """None: the PodGroup has no phase yet."""
    phase = (obj.get("status") or {}).get("phase")
    return str(phase) if phase else None


def pod_group_observed(obj: Obj, deleted: bool = False) -> job_signals.PodGroupObserved:
    return job_signals.PodGroupObserved(
        name=str(metadata(obj).get("name", "")),
        phase=pod_group_phase(obj),
        conditions=list((obj.get("status") or {}).get("conditions") or []),
        deleted=deleted,
    )


# --- Commands -------------------------------------------------------------------------------


def command_job(obj: Obj) -> envelopes.JobRef | None:
    """The Job a Command targets; None: it targets something else (a Queue) or nothing."""
    target = obj.get("target") or {}
    if target.get("kind") != "Job" or target.get("apiVersion") != vcjob.API_VERSION:
        return None
    if not target.get("name"):
        return None
    return envelopes.JobRef(str(metadata(obj).get("namespace", "")), str(target["name"]))


def command_issued(obj: Obj) -> common_signals.CommandIssued | None:
    """None: the Command names no action, so there is nothing to execute."""
    action = obj.get("action")
    if not action:
        return None
    return common_signals.CommandIssued(
        action=str(action),
        command=str(metadata(obj).get("name", "")),
        reason=str(obj.get("reason") or ""),
        message=str(obj.get("message") or ""),
    )
