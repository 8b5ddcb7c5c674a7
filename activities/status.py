"""Job status through the status subresource, replaced whole as Volcano's UpdateStatus does.

A JSON-patch `add` of `/status` replaces the object without a resourceVersion precondition:
the JobWorkflow is the only writer and serialises its own writes, so there is nothing to
lose to a conflict. A Job already deleted needs no status.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from activities import errors, kube
from activities.messages import Done, WriteStatusInput
from models import vcjob


def replace_status(
    plural: str,
    namespace: str,
    name: str,
    status: dict[str, Any],
    group: tuple[str, str] = (vcjob.GROUP, vcjob.VERSION),
) -> None:
    """Replace the whole status of a Volcano object (a Job, a CronJob, a JobFlow) whose one
    writer is its workflow; `group`: its API group and version."""
    patch = [{"op": "add", "path": "/status", "value": status}]
    what = plural.removesuffix("s")
    with errors.kube_call(f"write status of {what} {namespace}/{name}", ok=errors.GONE_OK):
        written = kube.custom().patch_namespaced_custom_object_status(
            *group,
            namespace,
            plural,
            name,
            patch,
            _content_type="application/json-patch+json",
            _preload_content=False,
        )
        kube.unread(written)


@activity.defn(name="write_job_status")
def write_job_status(request: WriteStatusInput) -> Done:
    replace_status("jobs", request.namespace, request.name, request.status.dump())
    return Done()
