"""Queue side effects: status (state and PodGroup counts) and the controller's own patches.

Status is merged, not replaced: `status.allocated` belongs to the scheduler.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from activities import errors, kube
from activities.messages import Done, PatchQueueInput, QueueStatusInput
from models import scheduling

_PLURAL = "queues"


@activity.defn(name="write_queue_status")
def write_queue_status(request: QueueStatusInput) -> Done:
    with errors.kube_call(f"write status of queue {request.name}", ok=errors.GONE_OK):
        kube.custom().patch_cluster_custom_object_status(
            scheduling.GROUP,
            scheduling.VERSION,
            _PLURAL,
            request.name,
            {"status": request.status},
            _content_type="application/merge-patch+json",
        )
    return Done()


@activity.defn(name="patch_queue")
def patch_queue(request: PatchQueueInput) -> Done:
    """The closed-by-parent annotation and the default parent `root`, as Volcano patches them."""
    patch: dict[str, Any] = {}
    if request.closed_by_parent is not None:
        value = "true" if request.closed_by_parent else "false"
        patch["metadata"] = {"annotations": {scheduling.CLOSED_BY_PARENT: value}}
    if request.parent is not None:
        patch["spec"] = {"parent": request.parent}
    if not patch:
        return Done()
    with errors.kube_call(f"patch queue {request.name}", ok=errors.GONE_OK):
        kube.custom().patch_cluster_custom_object(
            scheduling.GROUP,
            scheduling.VERSION,
            _PLURAL,
            request.name,
            patch,
            _content_type="application/merge-patch+json",
        )
    return Done()
