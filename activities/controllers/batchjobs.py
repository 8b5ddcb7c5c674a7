"""batch/v1 Job writes: the status subresource, the TTL-after-finished deletion, and the
PodGroup of a Job whose pods Caldera's gang scheduler places.

The status is replaced whole with a JSON patch that first tests `metadata.uid`: the workflow
is the Job's only status writer and orders its own writes, and the test makes sure a status
never lands on a newer Job of the same name (422, non-retryable: that Job has its own
workflow). A Job already gone needs no status. The deletion is foreground with a uid
precondition, like the TTL-after-finished controller's.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client
from temporalio import activity

from activities import errors, kube
from activities.messages import BatchJobInput, BatchJobStatusInput, DeleteJobInput, Done
from controllers.batchjob import podspec
from models import scheduling


@activity.defn(name="write_batch_job_status")
def write_batch_job_status(request: BatchJobStatusInput) -> Done:
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/uid", "value": request.uid},
        {"op": "add", "path": "/status", "value": request.status.dump()},
    ]
    with errors.kube_call(
        f"write status of job {request.namespace}/{request.name}", ok=errors.GONE_OK
    ):
        client.BatchV1Api(kube.api()).patch_namespaced_job_status(
            request.name,
            request.namespace,
            patch,
            _content_type="application/json-patch+json",
        )
    return Done()


@activity.defn(name="delete_batch_job")
def delete_batch_job(request: DeleteJobInput) -> Done:
    options = client.V1DeleteOptions(
        propagation_policy="Foreground", preconditions=client.V1Preconditions(uid=request.uid)
    )
    with errors.kube_call(
        f"delete job {request.namespace}/{request.name}", ok=frozenset({404, 409})
    ):
        client.BatchV1Api(kube.api()).delete_namespaced_job(
            request.name, request.namespace, body=options
        )
    return Done()


@activity.defn(name="ensure_batch_pod_group")
def ensure_batch_pod_group(request: BatchJobInput) -> Done:
    """Create the Job's PodGroup (AlreadyExists is success: it is never changed afterwards)."""
    job = request.job
    group = podspec.pod_group(job)
    namespace = job.metadata.namespace or "default"
    with errors.kube_call(f"create podgroup {namespace}/{job.pod_group_name}", ok=errors.EXISTS_OK):
        kube.custom().create_namespaced_custom_object(
            scheduling.GROUP, scheduling.VERSION, namespace, "podgroups", group
        )
    return Done()
