"""Job-level side effects: the TTL deletion (the volumes have
`activities.controllers.volume_claims`)."""

from __future__ import annotations

from kubernetes import client
from temporalio import activity

from activities import errors, kube
from activities.messages import DeleteJobInput, Done
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
        deleted = kube.custom().delete_namespaced_custom_object(
            vcjob.GROUP,
            vcjob.VERSION,
            request.namespace,
            "jobs",
            request.name,
            body=options,
            _preload_content=False,
        )
        kube.unread(deleted)
    return Done()
