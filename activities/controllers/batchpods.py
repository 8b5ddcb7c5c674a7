"""Pods of batch/v1 Jobs: create in slow-start batches, delete, release the tracking finalizer.

Creation follows the built-in controller: batches of 1, 2, 4, … pods, each batch in parallel;
when a pod of a batch cannot be created the rest are skipped and reported, so the workflow
retries them after its API back-off instead of this activity hammering a full quota. Pod names
are chosen by the workflow, so a retried attempt finds its own pod (AlreadyExists with our
owner is success; the name held by someone else's pod is a failure). Each created or deleted
pod gets the controller's Event (SuccessfulCreate, FailedCreate, SuccessfulDelete).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

from kubernetes.client import ApiException
from temporalio import activity

from activities import errors, kube, kube_events
from activities.controllers.pods import batch_done, slow_start_batches
from activities.messages import (
    CreateJobPodsInput,
    CreateJobPodsResult,
    DeleteJobPodsInput,
    Done,
    RemoveFinalizersInput,
)
from controllers.batchjob import podspec
from models import batchv1
from models.batchv1 import CreatedPod, NewPod

_PARALLEL: Final = 16
_REMOVE_FINALIZER: Final = {
    "metadata": {"$deleteFromPrimitiveList/finalizers": [batchv1.TRACKING_FINALIZER]}
}
_STRATEGIC: Final = "application/strategic-merge-patch+json"
T = TypeVar("T")
R = TypeVar("R")


def _parallel(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """Each call in a copy of the activity's context (Events read the activity info)."""
    contexts = [(contextvars.copy_context(), item) for item in items]
    with ThreadPoolExecutor(max_workers=_PARALLEL) as pool:
        return list(pool.map(lambda c: c[0].run(fn, c[1]), contexts))


def _event(job: batchv1.BatchJob, type_: str, reason: str, message: str) -> None:
    """The job controller's Events on the Job; best effort."""
    kube_events.try_event_on(
        job.metadata, type_, reason, message, api_version=batchv1.API_VERSION, kind=batchv1.KIND
    )


def _create(
    job: batchv1.BatchJob, pod: NewPod, group: batchv1.SchedulingGroup | None
) -> CreatedPod | str:
    """The pod created (or found, ours), or why it could not be."""
    namespace = job.metadata.namespace or "default"
    core = kube.core()
    try:
        made = core.create_namespaced_pod(namespace, kube.body(podspec.build_pod(job, pod, group)))
    except ApiException as e:
        if e.status != errors.CONFLICT:
            why = f"{e.status} {e.reason}: {(e.body or '')[:300]}"
            _event(job, "Warning", "FailedCreate", f"Error creating: {why}")
            return why
        made = core.read_namespaced_pod(pod.name, namespace)
        owners = made.metadata.owner_references or [] if made.metadata else []
        if not any(o.uid == job.metadata.uid and o.controller for o in owners):
            return f"pod {namespace}/{pod.name} exists and belongs to someone else"
    meta = made.metadata
    if meta is None or not meta.uid:
        return f"pod {namespace}/{pod.name}: the apiserver returned no uid"
    _event(job, "Normal", "SuccessfulCreate", f"Created pod: {pod.name}")
    return CreatedPod(uid=meta.uid, created_at=meta.creation_timestamp)


@activity.defn(name="create_job_pods")
def create_job_pods(request: CreateJobPodsInput) -> CreateJobPodsResult:
    job = request.job
    created: dict[str, CreatedPod] = {}
    failed: dict[str, str] = {}
    start = 0
    for size in slow_start_batches(len(request.pods)):
        batch = request.pods[start : start + size]
        start += size
        for pod, outcome in zip(
            batch, _parallel(lambda p: _create(job, p, request.group), batch), strict=True
        ):
            if isinstance(outcome, str):
                failed[pod.name] = outcome
            else:
                created[pod.name] = outcome
        batch_done(start)
        if failed:
            for pod in request.pods[start:]:
                failed[pod.name] = "skipped: an earlier pod of the slow start failed"
            break
    activity.logger.info(
        "pods created job=%s/%s created=%d failed=%d",
        job.metadata.namespace,
        job.metadata.name,
        len(created),
        len(failed),
    )
    return CreateJobPodsResult(created=created, failed=failed)


def _release(namespace: str, name: str) -> None:
    """Remove the tracking finalizer (a pod already gone needs nothing)."""
    with errors.kube_call(f"remove finalizer of pod {namespace}/{name}", ok=errors.GONE_OK):
        kube.core().patch_namespaced_pod(
            name, namespace, kube.body(_REMOVE_FINALIZER), _content_type=_STRATEGIC
        )


@activity.defn(name="delete_job_pods")
def delete_job_pods(request: DeleteJobPodsInput) -> Done:
    job = batchv1.BatchJob.model_validate(
        {
            "metadata": {
                "name": request.job_name,
                "namespace": request.namespace,
                "uid": request.job_uid,
            }
        }
    )

    def delete(name: str) -> None:
        if not request.keep_finalizers:
            _release(request.namespace, name)
        deleted = False
        with errors.kube_call(f"delete pod {request.namespace}/{name}", ok=errors.GONE_OK):
            kube.core().delete_namespaced_pod(name, request.namespace)
            deleted = True
        if deleted:
            _event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

    _parallel(delete, request.names)
    return Done()


@activity.defn(name="remove_pod_finalizers")
def remove_pod_finalizers(request: RemoveFinalizersInput) -> Done:
    """Finished pods were counted in the Job's status: let them go."""
    _parallel(lambda name: _release(request.namespace, name), sorted(request.pods))
    return Done()
