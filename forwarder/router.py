"""Decide what to send for each watch event or full list, given what was seen before. Pure.

Owns the forwarder's only memory: a small index of the last state seen per object uid (enough
to filter Volcano-style and to compute what vanished while the watch was down) and a bounded
set of deleted Job uids. The Queue side of that memory (Queues, and PodGroups counted per
queue) lives in `queue_router`, which this router feeds: a PodGroup event goes to both its Job
and its queue, a Command to whichever it targets. It performs no I/O: the pipeline executes
the returned `Outbound`s.

Why an index at all: after a 410 Gone the watch restarts from a fresh list, and objects deleted
in the gap produce no DELETED event. Comparing the list with the index yields them, so each
workflow still hears `job_deleted`, a `deleted=True` pod snapshot or a deleted PodGroup.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from forwarder import batch_router, bounded, events, logs, queue_router, translate
from forwarder import queue_translate as qt
from models import signals

logger = logging.getLogger(__name__)

DELETED_JOBS_REMEMBERED = 10_000


@dataclass(frozen=True)
class _JobSeen:
    job: events.JobRef
    fingerprint: translate.JobFingerprint


@dataclass(frozen=True)
class _PodSeen:
    job: events.JobRef
    pod: signals.PodSnapshot


@dataclass(frozen=True)
class _GroupSeen:
    job: events.JobRef
    group: signals.PodGroupObserved


def _same_pod(a: signals.PodSnapshot, b: signals.PodSnapshot) -> bool:
    """Equal in everything the workflow reads: a bare resourceVersion bump is not news."""
    return a.model_copy(update={"resource_version": ""}) == b.model_copy(
        update={"resource_version": ""}
    )


class Router:
    """Inbound watch items → outbound messages, Volcano's informer filters applied."""

    def __init__(self, deleted_capacity: int = DELETED_JOBS_REMEMBERED) -> None:
        self._jobs: dict[str, _JobSeen] = {}
        self._pods: dict[str, _PodSeen] = {}
        self._groups: dict[str, _GroupSeen] = {}
        self._deleted_jobs = bounded.BoundedSet(deleted_capacity)
        self._queues = queue_router.QueueRouter(deleted_capacity)
        self._batch = batch_router.BatchRouter(deleted_capacity)  # batch/v1 Jobs and pods
        self._handlers: dict[
            events.Kind, Callable[[events.WatchType, events.Obj, bool], list[events.Outbound]]
        ] = {
            events.Kind.JOB: self._job,
            events.Kind.POD: self._pod,
            events.Kind.POD_GROUP: self._pod_group,
            events.Kind.COMMAND: self._command,
            events.Kind.QUEUE: self._queues.queue,
            events.Kind.BATCH_JOB: self._batch.job,
            events.Kind.BATCH_POD: self._batch.pod,
        }

    def job_deleted(self, uid: str) -> bool:
        """Was this Job uid seen deleted (within the remembered window)?"""
        return uid in self._deleted_jobs

    def queue_deleted(self, uid: str) -> bool:
        """Was this Queue uid seen deleted (within the remembered window)?"""
        return self._queues.queue_deleted(uid)

    def route(self, item: events.Inbound) -> list[events.Outbound]:
        if isinstance(item, events.Relisted):
            return self._relisted(item)
        return self._handlers[item.kind](item.type, item.obj, item.type == "ADDED")

    def _relisted(self, item: events.Relisted) -> list[events.Outbound]:
        """Deletions for what vanished unseen, then the current state of everything listed."""
        if item.kind is events.Kind.QUEUE:
            return self._queues.queues_relisted(item.objects)
        if item.kind in (events.Kind.BATCH_JOB, events.Kind.BATCH_POD):
            return self._batch.relisted(item.kind, item.objects)
        listed = {translate.uid(o) for o in item.objects}
        out = self._vanished(item.kind, listed)
        handle = self._handlers[item.kind]
        for obj in item.objects:
            out += handle("ADDED", obj, True)
        return out

    def _vanished(self, kind: events.Kind, listed: set[str]) -> list[events.Outbound]:
        out: list[events.Outbound] = []
        if kind is events.Kind.JOB:
            for uid in sorted(self._jobs.keys() - listed):
                job = self._jobs.pop(uid).job
                self._deleted_jobs.add(uid)
                payload = signals.JobDeleted(uid=uid)
                out.append(events.Signal(job, signals.SIGNAL_JOB_DELETED, payload))
        elif kind is events.Kind.POD:
            for uid in sorted(self._pods.keys() - listed):
                pod = self._pods.pop(uid)
                out.append(events.PodUpdate(pod.job, pod.pod.model_copy(update={"deleted": True})))
        elif kind is events.Kind.POD_GROUP:
            for uid in sorted(self._groups.keys() - listed):
                seen = self._groups.pop(uid)
                gone = seen.group.model_copy(update={"deleted": True})
                out.append(events.Signal(seen.job, signals.SIGNAL_POD_GROUP_OBSERVED, gone))
            out += self._queues.pod_groups_vanished(listed)
        return out  # Commands: nothing to remember, a vanished one was consumed by someone

    def _job(self, type_: events.WatchType, obj: events.Obj, force: bool) -> list[events.Outbound]:
        uid, job = translate.uid(obj), translate.job_ref(obj)
        if type_ == "DELETED":
            self._jobs.pop(uid, None)
            self._deleted_jobs.add(uid)
            return [events.Signal(job, signals.SIGNAL_JOB_DELETED, translate.job_deleted(obj))]
        if uid in self._deleted_jobs:
            # A late event of a deleted Job must never signal-with-start a new run.
            logs.for_job(logger, job.key).debug("late event dropped uid=%s", uid)
            return []
        fingerprint = translate.job_fingerprint(obj)
        seen = self._jobs.get(uid)
        self._jobs[uid] = _JobSeen(job, fingerprint)
        if not force and seen is not None and seen.fingerprint == fingerprint:
            return []
        observed = translate.job_observed(obj)
        return [events.Signal(job, signals.SIGNAL_JOB_OBSERVED, observed, start=True)]

    def _pod(self, type_: events.WatchType, obj: events.Obj, force: bool) -> list[events.Outbound]:
        job = translate.pod_job(obj)
        if job is None:
            return []
        uid = translate.uid(obj)
        if type_ == "DELETED":
            self._pods.pop(uid, None)
            return [events.PodUpdate(job, translate.pod_snapshot(obj, deleted=True))]
        pod = translate.pod_snapshot(obj)
        seen = self._pods.get(uid)
        self._pods[uid] = _PodSeen(job, pod)
        if not force and seen is not None and _same_pod(seen.pod, pod):
            return []
        return [events.PodUpdate(job, pod)]

    def _pod_group(
        self, type_: events.WatchType, obj: events.Obj, force: bool
    ) -> list[events.Outbound]:
        """Every PodGroup counts in its queue; one created by a Job is also the Job's news."""
        return self._job_pod_group(type_, obj, force) + self._queues.pod_group(type_, obj, force)

    def _job_pod_group(
        self, type_: events.WatchType, obj: events.Obj, force: bool
    ) -> list[events.Outbound]:
        job = translate.pod_group_job(obj)
        if job is None:
            return []
        uid = translate.uid(obj)
        name = signals.SIGNAL_POD_GROUP_OBSERVED
        if type_ == "DELETED":
            self._groups.pop(uid, None)
            return [events.Signal(job, name, translate.pod_group_observed(obj, deleted=True))]
        group = translate.pod_group_observed(obj)
        seen = self._groups.get(uid)
        self._groups[uid] = _GroupSeen(job, group)
        # Volcano's updatePodGroup reacts to phase changes only.
        if not force and seen is not None and seen.group.phase == group.phase:
            return []
        return [events.Signal(job, name, group)]

    def _command(
        self, type_: events.WatchType, obj: events.Obj, force: bool
    ) -> list[events.Outbound]:
        """A Command for a Job or a Queue: consumed first, then delivered (at most once)."""
        if type_ != "ADDED":
            return []  # Volcano consumes on add only; the delete we issue comes back as DELETED
        target: events.Target | None = translate.command_job(obj) or qt.command_queue(obj)
        if target is None:
            return []
        issued = translate.command_issued(obj)
        meta = translate.metadata(obj)
        name = str(meta.get("name", ""))
        if issued is None:
            log = logs.for_target(logger, target)
            log.warning("command without action ignored command=%s", name)
            return []
        signal = events.Signal(target, signals.SIGNAL_COMMAND_ISSUED, issued)
        ns = str(meta.get("namespace", ""))
        return [events.ConsumeCommand(ns, name, translate.uid(obj), signal)]
