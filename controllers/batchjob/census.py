"""What one sync counted: the pod table as it was found, each observed pod judged once. Pure.

syncJob reads the same facts in many places: which pods failed, whether the podFailurePolicy
counts a failure, which indexes succeeded. Here they are worked out once, at the start of a
sync, into a `Census` that every later step reads: deciding whether the Job is finishing,
managing its pods, and counting finished pods through uncountedTerminatedPods.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from controllers.batchjob import accounting, indexed, indexes, policies
from controllers.batchjob.state import BatchJobRecord, PodRecord
from models.batchv1 import BatchJob, BatchJobStatus
from models.batchv1 import UncountedTerminatedPods as Uncounted

EXPECTATIONS_TIMEOUT: Final = timedelta(minutes=5)


class Judged(BaseModel):
    """One observed pod and what this sync makes of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pod: PodRecord
    failed: bool  # isPodFailed
    valid: bool  # its index is within 0..completions-1 (always, for a NonIndexed Job)
    policy: policies.Match  # what podFailurePolicy says of its failure (Match(): it counts)


class IndexCount(BaseModel):
    """An Indexed Job's indexes as this sync counts them (all empty for a NonIndexed Job)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recorded: indexes.Intervals = ()  # completedIndexes as the status has it
    succeeded: indexes.Intervals = ()  # those and the indexes of pods that succeeded since
    failed: indexes.Intervals | None = None  # None: backoffLimitPerIndex is not used
    delayed: dict[int, PodRecord] = Field(default_factory=dict)  # index → pod kept back


class Census(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pods: dict[str, PodRecord]  # the table, creations never observed in time forgotten
    pod_seq: int  # pods ever named
    listed: tuple[Judged, ...]  # the observed pods, in table order
    satisfied: bool  # every pod created has been observed (the creation expectations)
    removing: tuple[str, ...]  # uids whose finalizer removal was issued, not seen done yet
    new_succeeded: tuple[PodRecord, ...]  # succeeded, carrying the finalizer, not uncounted
    new_failed: tuple[PodRecord, ...]  # failed likewise, whatever the policy says
    succeeded: int  # counted, uncounted and new (Indexed: the succeeded indexes)
    failed: int  # counted, uncounted and new failures the policy counts
    terminating: int  # observed pods being deleted that have not finished
    indexes: IndexCount = Field(default_factory=IndexCount)


def forget_expired(pods: Mapping[str, PodRecord], now: datetime) -> dict[str, PodRecord]:
    """Drop creations never observed within the expectations timeout (ExpectationsTimeout)."""
    return {
        n: p
        for n, p in pods.items()
        if p.observed or p.issued_at is None or now - p.issued_at < EXPECTATIONS_TIMEOUT
    }


def judge(job: BatchJob, pod: PodRecord) -> Judged:
    return Judged(
        pod=pod,
        failed=accounting.is_failed(job, pod),
        valid=accounting.valid_index(job, pod),
        policy=accounting.policy_match(job, pod),
    )


def count(job: BatchJob, state: BatchJobRecord, now: datetime) -> Census:
    """The Job's pods as this sync finds them, and the counts syncJob decides on."""
    pods = forget_expired(state.pods, now)
    status = state.status
    uncounted = status.uncounted_terminated_pods or Uncounted()
    unc_succeeded, unc_failed = uncounted.succeeded or [], uncounted.failed or []
    skip = {*unc_succeeded, *unc_failed, *state.removing}
    listed = tuple(judge(job, p) for p in pods.values() if p.observed)
    new = [j for j in listed if j.pod.finalizer and j.pod.uid not in skip and j.valid]
    new_succeeded = tuple(j.pod for j in new if j.pod.phase == "Succeeded")
    new_failed = tuple(j.pod for j in new if j.failed)
    counted_failures = sum(1 for j in new if j.failed and j.policy.counts)
    ix = _indexes(job, status, [j.pod for j in listed], skip)
    succeeded = (status.succeeded or 0) + len(new_succeeded) + len(unc_succeeded)
    return Census(
        pods=pods,
        pod_seq=state.pod_seq,
        listed=listed,
        satisfied=all(p.observed for p in pods.values()),
        removing=state.removing,
        new_succeeded=new_succeeded,
        new_failed=new_failed,
        succeeded=indexes.total(ix.succeeded) if job.spec.indexed else succeeded,
        failed=(status.failed or 0) + counted_failures + len(unc_failed),
        terminating=sum(1 for j in listed if j.pod.terminating),
        indexes=ix,
    )


def _indexes(
    job: BatchJob, status: BatchJobStatus, pods: list[PodRecord], skip: set[str]
) -> IndexCount:
    if not job.spec.indexed:
        return IndexCount()
    recorded, succeeded = indexed.succeeded_indexes(job, pods, status.completed_indexes)
    if job.spec.backoff_limit_per_index is None:
        return IndexCount(recorded=recorded, succeeded=succeeded)
    failed = indexed.failed_indexes(job, pods, status.failed_indexes)
    delayed = indexed.delayed_deletion_per_index(job, pods, skip, succeeded, failed)
    return IndexCount(recorded=recorded, succeeded=succeeded, failed=failed, delayed=delayed)


def pod_counts(status: BatchJobStatus, pods: Mapping[str, PodRecord]) -> BatchJobStatus:
    """The status's active, ready and terminating counts for the table as it now is."""
    active = [p for p in pods.values() if p.active]
    return status.model_copy(
        update={
            "active": len(active),
            "ready": sum(1 for p in active if p.ready),
            "terminating": sum(1 for p in pods.values() if p.observed and p.terminating),
        }
    )
