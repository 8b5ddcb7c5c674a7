"""The manager's side of a dispatched Job: its status (the copy's, mirrored), its
`caldera.dev/dispatched-to` and `caldera.dev/left-behind` annotations, and the copy's Events
recorded on it. Short writes to
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
from models.dispatch import DISPATCHED_TO_ANNOTATION, LEFT_BEHIND_ANNOTATION


class ManagerStatusInput(Message):
    namespace: str
    name: str
    status: dict[str, Any]


class MarkInput(Message):
    namespace: str
    name: str
    uid: str
    cluster: str  # "": dispatching, no cluster yet


class LeftBehindInput(Message):
    namespace: str
    name: str
    uid: str
    copies: list[str]  # "<cluster>/<generation>" of every stale copy given up


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
    _annotate(
        request.namespace, request.name, request.uid, DISPATCHED_TO_ANNOTATION, request.cluster
    )
    return Done()


@activity.defn(name="mark_left_behind")
def mark_left_behind(request: LeftBehindInput) -> Done:
    value = ",".join(request.copies)
    _annotate(request.namespace, request.name, request.uid, LEFT_BEHIND_ANNOTATION, value)
    return Done()


def _annotate(namespace: str, name: str, uid: str, key: str, value: str) -> None:
    """The annotation, read then replaced (the worker may update a Job, never patch one), on
    this very Job: a newer one of that name is not this dispatch's to mark. A conflict is
    retried with a fresh read."""
    where = f"annotate job {namespace}/{name} {key}"
    found: object = None
    with errors.kube_call(where, ok=errors.GONE_OK):
        found = kube.custom().get_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, "jobs", name
        )
    if found is None:
        return
    job = kube.as_dict(found)
    meta = job.setdefault("metadata", {})
    notes = meta.get("annotations") or {}
    if meta.get("uid") != uid or notes.get(key) == value:
        return
    meta["annotations"] = {**notes, key: value}
    with errors.kube_call(where, ok=errors.GONE_OK):
        replaced = kube.custom().replace_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, "jobs", name, job, _preload_content=False
        )
        kube.unread(replaced)


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


ACTIVITIES = (write_dispatch_status, mark_dispatched, mark_left_behind, mirror_events)
