"""The manager's side of a dispatched Job: its status (the copy's, mirrored), its
`caldera.dev/dispatched-to` annotation, and the copy's Events recorded on it. Short writes to
the manager's own apiserver, local activities like the JobWorkflow's; the DispatchWorkflow is
the Job's only writer there (no JobWorkflow runs it on the manager).
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from activities import errors, kube, kube_events, status
from activities.messages import Done, Message, RecordEventInput
from controllers.dispatch import mirror
from controllers.dispatch.results import RemoteEvent
from models import vcjob
from models.dispatch import DISPATCHED_TO_ANNOTATION


class ManagerStatusInput(Message):
    namespace: str
    name: str
    status: dict[str, Any]


class MarkInput(Message):
    namespace: str
    name: str
    uid: str
    cluster: str  # "": dispatching, no cluster yet


class MirrorEventsInput(Message):
    namespace: str
    name: str
    uid: str
    cluster: str
    events: list[RemoteEvent]


@activity.defn(name="write_dispatch_status")
def write_dispatch_status(request: ManagerStatusInput) -> Done:
    status.replace_status("jobs", request.namespace, request.name, request.status)
    return Done()


@activity.defn(name="mark_dispatched")
def mark_dispatched(request: MarkInput) -> Done:
    """The annotation, read then replaced (the worker may update a Job, never patch one), on
    this very Job: a newer one of that name is not this dispatch's to mark. A conflict is
    retried with a fresh read."""
    where = f"mark job {request.namespace}/{request.name} dispatched"
    found: object = None
    with errors.kube_call(where, ok=errors.GONE_OK):
        found = kube.custom().get_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, request.namespace, "jobs", request.name
        )
    if found is None:
        return Done()
    job = kube.as_dict(found)
    meta = job.setdefault("metadata", {})
    notes = meta.get("annotations") or {}
    if meta.get("uid") != request.uid or notes.get(DISPATCHED_TO_ANNOTATION) == request.cluster:
        return Done()
    meta["annotations"] = {**notes, DISPATCHED_TO_ANNOTATION: request.cluster}
    with errors.kube_call(where, ok=errors.GONE_OK):
        replaced = kube.custom().replace_namespaced_custom_object(
            vcjob.GROUP,
            vcjob.VERSION,
            request.namespace,
            "jobs",
            request.name,
            job,
            _preload_content=False,
        )
        kube.unread(replaced)
    return Done()


@activity.defn(name="mirror_events")
def mirror_events(request: MirrorEventsInput) -> Done:
    """Each of the copy's Events as an Event on the manager's Job, best effort."""
    for event in request.events:
        kube_events.try_event(
            RecordEventInput(
                namespace=request.namespace,
                name=request.name,
                uid=request.uid,
                type=event.type,
                reason=event.reason,
                message=mirror.event_message(request.cluster, event),
            )
        )
    return Done()


ACTIVITIES = (write_dispatch_status, mark_dispatched, mirror_events)
