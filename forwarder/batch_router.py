"""Decide what BatchJobWorkflows hear for each batch/v1 Job and pod event. Pure.

The batch/v1 half of the router (`router.Router` owns one and hands it these kinds). Jobs
whose `spec.managedBy` is not Caldera's are ignored outright, and so are their pods: the
built-in job controller runs them. For Caldera's Jobs it follows the Volcano path's rules:

- a Job added, relisted, or changed in spec or deletion → `job_observed` (signal-with-start);
- a Job deleted (or gone from a relist) → `job_deleted`, and its uid is remembered so a late
  event never starts a new run;
- a pod added, changed in anything the workflow reads, or deleted → a snapshot the coalescer
  batches into `pods_changed` (a relist also yields deletions for pods that vanished unseen).

Memory: the managed Jobs by uid (with their fingerprint), the pods last seen, and a bounded
set of deleted Job uids.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from forwarder import batch_translate as bt
from forwarder import bounded, events, logs, translate
from models import signals

logger = logging.getLogger(__name__)

DELETED_JOBS_REMEMBERED = 10_000


@dataclass(frozen=True)
class _JobSeen:
    job: events.BatchJobRef
    fingerprint: bt.JobFingerprint


@dataclass(frozen=True)
class _PodSeen:
    job: events.BatchJobRef
    pod: signals.BatchPodSnapshot


def _same(a: signals.BatchPodSnapshot, b: signals.BatchPodSnapshot) -> bool:
    """Equal in everything the workflow reads: a bare resourceVersion bump is not news."""
    return a.model_copy(update={"resource_version": ""}) == b.model_copy(
        update={"resource_version": ""}
    )


class BatchRouter:
    """batch/v1 Job and pod events → messages to BatchJobWorkflows."""

    def __init__(self, deleted_capacity: int = DELETED_JOBS_REMEMBERED) -> None:
        self._jobs: dict[str, _JobSeen] = {}  # managed Jobs by uid
        self._pods: dict[str, _PodSeen] = {}  # by pod uid
        self._deleted = bounded.BoundedSet(deleted_capacity)

    def job_deleted(self, uid: str) -> bool:
        """Was this Job uid seen deleted (within the remembered window)?"""
        return uid in self._deleted

    def relisted(self, kind: events.Kind, objects: Sequence[events.Obj]) -> list[events.Outbound]:
        """Deletions for what vanished unseen, then the current state of everything listed."""
        listed = {translate.uid(o) for o in objects}
        out: list[events.Outbound] = []
        if kind is events.Kind.BATCH_JOB:
            for uid in sorted(self._jobs.keys() - listed):
                out += self._gone(uid, self._jobs.pop(uid).job)
            for obj in objects:
                out += self.job("ADDED", obj, True)
        else:
            for uid in sorted(self._pods.keys() - listed):
                seen = self._pods.pop(uid)
                gone = seen.pod.model_copy(update={"deleted": True})
                out.append(events.BatchPodUpdate(seen.job, gone))
            for obj in objects:
                out += self.pod("ADDED", obj, True)
        return out

    def _gone(self, uid: str, job: events.BatchJobRef) -> list[events.Outbound]:
        self._deleted.add(uid)
        payload = signals.JobDeleted(uid=uid)
        return [events.Signal(job, signals.SIGNAL_JOB_DELETED, payload)]

    def job(self, type_: events.WatchType, obj: events.Obj, force: bool) -> list[events.Outbound]:
        if not bt.managed(obj):
            return []  # the built-in job controller's
        uid, job = translate.uid(obj), bt.job_ref(obj)
        if type_ == "DELETED":
            self._jobs.pop(uid, None)
            return self._gone(uid, job)
        if uid in self._deleted:
            # A late event of a deleted Job must never signal-with-start a new run.
            logs.for_target(logger, job).debug("late event dropped uid=%s", uid)
            return []
        fingerprint = bt.job_fingerprint(obj)
        seen = self._jobs.get(uid)
        self._jobs[uid] = _JobSeen(job, fingerprint)
        if not force and seen is not None and seen.fingerprint == fingerprint:
            return []
        observed = signals.JobObserved(job=dict(obj))
        return [events.Signal(job, signals.SIGNAL_JOB_OBSERVED, observed, start=True)]

    def pod(self, type_: events.WatchType, obj: events.Obj, force: bool) -> list[events.Outbound]:
        uid = translate.uid(obj)
        owner = bt.owner_uid(obj)
        known = self._jobs.get(owner) if owner is not None else None
        if known is None:
            self._pods.pop(uid, None)
            return []  # not a pod of a Job Caldera runs
        if type_ == "DELETED":
            self._pods.pop(uid, None)
            return [events.BatchPodUpdate(known.job, bt.pod_snapshot(obj, deleted=True))]
        pod = bt.pod_snapshot(obj)
        seen = self._pods.get(uid)
        self._pods[uid] = _PodSeen(known.job, pod)
        if not force and seen is not None and _same(seen.pod, pod):
            return []
        return [events.BatchPodUpdate(known.job, pod)]
