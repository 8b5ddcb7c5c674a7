"""Pod snapshots → Volcano requests: which event a pod change means.

The forwarder sends the latest state of each pod; the event is derived by comparing it with
what the workflow last knew, as Volcano's informer handlers compare old and new objects.
"""

from __future__ import annotations

from collections.abc import Mapping

from controllers.job.policies import Request
from controllers.job.state import PodRecord
from models.bus import Event
from models.signals.job import PodSnapshot
from models.vcjob import JobSpec

DEFAULT_TASK_MAX_RETRY = 3


def record_of(snapshot: PodSnapshot) -> PodRecord:
    return PodRecord(
        name=snapshot.name,
        task=snapshot.task,
        index=snapshot.index,
        uid=snapshot.uid,
        job_version=snapshot.job_version,
        phase=snapshot.phase,
        exit_code=snapshot.exit_code,
        restart_count=snapshot.restart_count,
        ready=snapshot.ready,
        deleting=snapshot.deleting,
        out_of_sync=snapshot.out_of_sync,
        partition=snapshot.partition,
        node=snapshot.node_name,
    )


def task_completed(spec: JobSpec, pods: Mapping[str, PodRecord], task: str) -> bool:
    replicas = next((t.replicas or 0 for t in spec.tasks if t.name == task), 0)
    done = sum(1 for p in pods.values() if p.task == task and p.phase == "Succeeded")
    return replicas > 0 and done >= replicas


def task_failed(spec: JobSpec, pods: Mapping[str, PodRecord], task: str) -> bool:
    limit = next((t.max_retry for t in spec.tasks if t.name == task), None)
    limit = limit or DEFAULT_TASK_MAX_RETRY
    restarts = sum(
        p.restart_count
        for p in pods.values()
        if p.task == task and p.phase in ("Running", "Pending")
    )
    return restarts >= limit


def event_of(
    old: PodRecord | None, new: PodSnapshot, spec: JobSpec, pods: Mapping[str, PodRecord]
) -> Event:
    """`pods` already holds `new`; `old` is what was known before (None: first sight)."""
    if new.deleted:
        known = old is not None and not old.out_of_sync and not new.out_of_sync
        return Event.POD_EVICTED if known else Event.OUT_OF_SYNC
    if new.out_of_sync:
        return Event.OUT_OF_SYNC
    # A pod seen for the first time changes from "no phase". Volcano's addPod says PodPending
    # whatever the phase, which re-arms PodPending timers for running pods after a restart;
    # deriving the event from the phase avoids that.
    first_sight = old is None or old.uid is None or old.uid != new.uid
    old_phase = "" if first_sight or old is None else old.phase
    if new.phase == "Failed" and old_phase != "Failed":
        return Event.POD_FAILED
    if new.phase == "Succeeded" and old_phase != "Succeeded":
        return Event.TASK_COMPLETED if task_completed(spec, pods, new.task) else Event.OUT_OF_SYNC
    if new.phase in ("Running", "Pending"):
        if new.phase != old_phase:
            return Event.POD_RUNNING if new.phase == "Running" else Event.POD_PENDING
        return Event.TASK_FAILED if task_failed(spec, pods, new.task) else Event.OUT_OF_SYNC
    return Event.OUT_OF_SYNC


def request_of(event: Event, snapshot: PodSnapshot) -> Request:
    return Request(
        event=event,
        task=snapshot.task,
        pod=snapshot.name,
        pod_uid=snapshot.uid,
        job_uid=snapshot.job_uid or "",
        job_version=snapshot.job_version,
        exit_code=snapshot.exit_code or 0 if event == Event.POD_FAILED else 0,
        partition=snapshot.partition or "",
    )
