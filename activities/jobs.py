"""Job-level side effects: the TTL deletion and the controller-made PVCs."""

from __future__ import annotations

from kubernetes import client
from temporalio import activity

from activities import errors, kube, podspec
from activities.messages import DeleteJobInput, Done, JobInput
from models import vcjob


@activity.defn(name="delete_job")
def delete_job(request: DeleteJobInput) -> Done:
    """Foreground deletion with a UID precondition: never deletes a newer Job of that name."""
    options = client.V1DeleteOptions(
        propagation_policy="Foreground", preconditions=client.V1Preconditions(uid=request.uid)
    )
    with errors.kube_call(
        f"delete job {request.namespace}/{request.name}", ok=frozenset({404, 409})
    ):
        kube.custom().delete_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, request.namespace, "jobs", request.name, body=options
        )
    return Done()


@activity.defn(name="ensure_volumes")
def ensure_volumes(request: JobInput) -> Done:
    """Create the PVCs of volumes that carry a `volumeClaim` (AlreadyExists is success)."""
    job = request.job
    for claim in podspec.claim_manifests(job):
        meta = claim["metadata"]
        with errors.kube_call(
            f"create pvc {meta['namespace']}/{meta['name']}", ok=errors.EXISTS_OK
        ):
            kube.core().create_namespaced_persistent_volume_claim(
                meta["namespace"], kube.body(claim)
            )
    return Done()
