"""Kubernetes Events on Jobs and Queues, so `kubectl describe` tells the story too.

Best effort: an Event that cannot be written never holds the job back (few retries, and the
workflow ignores the failure).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube
from activities.messages import Done, RecordEventInput
from models.meta import ObjectMeta

COMPONENT = "caldera"


@activity.defn(name="record_event")
def record_event(request: RecordEventInput) -> Done:
    write_event(request)
    return Done()


def write_event(request: RecordEventInput) -> None:
    """One Event; also used inside other activities (the scheduler's Unschedulable events)."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    info = activity.info()
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "generateName": f"{request.name}.",
            "namespace": request.namespace,
        },
        "involvedObject": {
            "apiVersion": request.api_version,
            "kind": request.kind,
            "name": request.name,
            # Namespaced kinds name their namespace; a Queue is cluster-scoped.
            "namespace": None if request.kind == "Queue" else request.namespace,
            "uid": request.uid,
        },
        "type": request.type,
        "reason": request.reason,
        "message": request.message[:1024],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": info.workflow_id,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    with errors.kube_call(f"record event on {request.kind} {request.name}"):
        made = kube.core().create_namespaced_event(
            request.namespace, kube.body(body), _preload_content=False
        )
        kube.unread(made)


def try_event(request: RecordEventInput) -> None:
    """An Event written from inside another activity, best effort: the error it reports stands
    without it, so a refused or failed write is logged and the activity goes on."""
    try:
        write_event(request)
    except ApplicationError as e:
        activity.logger.warning(
            "event not recorded on %s %s/%s reason=%s error=%s",
            request.kind,
            request.namespace,
            request.name,
            request.reason,
            e,
        )


def try_event_on(
    meta: ObjectMeta, type_: str, reason: str, message: str, **object_kind: str
) -> None:
    """`try_event` on the object `meta` describes: a Volcano Job unless `api_version` and
    `kind` say otherwise (`RecordEventInput`'s defaults)."""
    try_event(
        RecordEventInput(
            namespace=meta.namespace or "",
            name=meta.name or "",
            uid=meta.uid or "",
            type=type_,
            reason=reason,
            message=message,
            **object_kind,
        )
    )
