"""Job status through the status subresource, replaced whole as Volcano's UpdateStatus does.

A JSON-patch `add` of `/status` replaces the object without a resourceVersion precondition:
the JobWorkflow is the only writer and serialises its own writes, so there is nothing to
lose to a conflict. A Job already deleted needs no status.
"""

from __future__ import annotations

from temporalio import activity

from activities import errors, kube
from activities.messages import Done, WriteStatusInput
from models import vcjob


@activity.defn(name="write_job_status")
def write_job_status(request: WriteStatusInput) -> Done:
    patch = [{"op": "add", "path": "/status", "value": request.status.dump()}]
    with errors.kube_call(
        f"write status of job {request.namespace}/{request.name}", ok=errors.GONE_OK
    ):
        kube.custom().patch_namespaced_custom_object_status(
            vcjob.GROUP,
            vcjob.VERSION,
            request.namespace,
            "jobs",
            request.name,
            patch,
            _content_type="application/json-patch+json",
        )
    return Done()
