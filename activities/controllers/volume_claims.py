"""A Volcano Job's volumes (Volcano's createJobIOIfNotExist): claim names chosen, written into
the Job's spec, and the PVCs made.

A volume without a claim name gets `<job>-pvc-<12 random>`, one no PVC of the namespace has.
The name is written into the stored Job (an update, as Volcano's controller does) before its
PVC is created, so the Job itself is where a chosen name lives: an attempt that runs again after
a failure, or on another worker, reads the Job first and keeps the names it finds, and the PVC
it creates again is AlreadyExists. A claim the job names must exist; until it does the attempt
fails (retried with back-off, a Warning Event `PVCError` first), and the job waits Pending.

The randomness is here, not in the workflow, which must replay the same decisions: the workflow
learns the names from the result.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any, Final

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube, kube_events
from activities.messages import JobInput, VolumesResult
from controllers.job import podspec
from models import keys, vcjob

JOB_GONE: Final = "JobGone"  # the Job was deleted or replaced: its volumes are no one's to make


def missing_claim(name: str) -> str:
    """Volcano's words for a named claim that does not exist."""
    return f"pvc {name} is not found, the job will be in the Pending state until the PVC is created"


def _claim_exists(namespace: str, name: str) -> bool:
    with errors.kube_call(f"get pvc {namespace}/{name}", ok=errors.GONE_OK):
        kube.core().read_namespaced_persistent_volume_claim(name, namespace)
        return True
    return False  # reached only when kube_call swallowed the NotFound


def _stored(job: vcjob.Job) -> dict[str, Any]:
    """The Job as the apiserver holds it now, or JobGone when it is not this Job any more."""
    ns, name = job.metadata.namespace or "", job.metadata.name or ""
    found: dict[str, Any] | None = None
    with errors.kube_call(f"get job {ns}/{name}", ok=errors.GONE_OK):
        found = kube.as_dict(
            kube.custom().get_namespaced_custom_object(vcjob.GROUP, vcjob.VERSION, ns, "jobs", name)
        )
    if found is None or (found.get("metadata") or {}).get("uid") != job.metadata.uid:
        raise ApplicationError(
            f"job {ns}/{name} (uid {job.metadata.uid}) is gone", type=JOB_GONE, non_retryable=True
        )
    return found


def _unused_name(namespace: str, job_name: str) -> str:
    """Volcano draws until no PVC has the name; so does this."""
    while True:
        name = podspec.generated_claim_name(job_name, secrets.choice)
        if not _claim_exists(namespace, name):
            return name


def _write_names(stored: dict[str, Any], names: dict[int, str]) -> None:
    """Write the chosen names into the Job's spec: an update with the resourceVersion read, so
    a Job changed meanwhile is a conflict, retried from a fresh read."""
    body = copy.deepcopy(stored)
    for index, name in sorted(names.items()):
        body["spec"]["volumes"][index]["volumeClaimName"] = name
    meta = body["metadata"]
    with errors.kube_call(f"write claim names into job {meta['namespace']}/{meta['name']}"):
        kube.custom().replace_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, meta["namespace"], "jobs", meta["name"], body
        )


def _warn(job: vcjob.Job, message: str) -> None:
    """Volcano's `PVCError` Event, so a waiting job says why: once, on the first attempt (the
    retries that follow say the same, and the job's end has its own `ActionFailed` Event).
    Best effort: an Event not written never hides the error itself."""
    if activity.info().attempt != 1:
        return
    kube_events.try_event_on(
        job.metadata, "Warning", "PVCError", f"Failed to create PVC, err: {message}"
    )


@activity.defn(name="ensure_volumes")
def ensure_volumes(request: JobInput) -> VolumesResult:
    """Every volume's claim: named (generated and written back where missing), made from its
    `volumeClaim` when it has one, or checked to exist when it has only a name."""
    job = request.job
    ns, job_name = job.metadata.namespace or "", job.metadata.name or ""
    key = keys.job_key(ns, job_name)
    stored = _stored(job)
    volumes = list((stored.get("spec") or {}).get("volumes") or [])
    names = {i: str(v.get("volumeClaimName") or "") for i, v in enumerate(volumes)}
    chosen = {i: _unused_name(ns, job_name) for i, name in names.items() if not name}
    if chosen:
        _write_names(stored, chosen)
        activity.logger.info(
            "claim names written job=%s claims=%s",
            key,
            ",".join(chosen[i] for i in sorted(chosen)),
            extra={"job": key},
        )
    names.update(chosen)
    for i, volume in enumerate(volumes):
        name, claim = names[i], volume.get("volumeClaim")
        if claim is not None:
            manifest = podspec.claim_manifest(job, name, claim)
            with errors.kube_call(f"create pvc {ns}/{name}", ok=errors.EXISTS_OK):
                kube.core().create_namespaced_persistent_volume_claim(ns, kube.body(manifest))
        elif not _claim_exists(ns, name):
            message = missing_claim(name)
            _warn(job, message)
            raise ApplicationError(message, type="ClaimNotFound")
    return VolumesResult(claims=[names[i] for i in range(len(volumes))])
