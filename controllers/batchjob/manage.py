"""manageJob: how many pods a running Job wants, which to delete, which to create. Pure.

The built-in controller's rules: suspended → delete every active pod; completions nil →
parallelism until the first success, then leave what runs; else min(parallelism, completions -
succeeded). Surplus pods go first, in the controller's deletion order, and deletion wins over
creation in one sync. New pods wait out the pod-failure back-off (per index with
backoffLimitPerIndex). At most 500 pods are created or deleted per sync. A finishing Job's
active pods are stopped here too, keeping their finalizers so they are counted as failed.

Pod names are `<job>-<5 chars>` (Indexed: `<job>-<index>-<5 chars>`) like the apiserver's
generateName, but derived from the Job uid and a sequence number so a retried activity finds
the pod an earlier attempt created instead of creating another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict

from controllers.batchjob import accounting, backoff, indexed
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.census import Census
from controllers.batchjob.state import Backoff, PodRecord
from models.batchv1 import BatchJob, JobCondition, NewPod

MAX_PER_SYNC: Final = 500  # MaxPodCreateDeletePerSync
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet
_MAX_GENERATED_PREFIX: Final = 58  # 63 - 5 random characters
_SPACE: Final = len(_ALPHABET) ** 5
_STRIDE: Final = 7_368_787  # a prime, so coprime with 27^5: every step lands on a new name


class Managed(BaseModel):
    """The pod table after this sync's deletions or creations, and what carries them out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pods: dict[str, PodRecord]
    pod_seq: int
    effects: tuple[batch_fx.AnyEffect, ...] = ()
    wait_until: datetime | None = None  # None: no back-off holds pod creation back


def unchanged(counted: Census) -> Managed:
    return Managed(pods=counted.pods, pod_seq=counted.pod_seq)


def pod_name(job: BatchJob, index: int | None, seq: int, unique: bool = True) -> str:
    name = job.metadata.name or ""
    prefix = f"{name}-" if index is None else f"{name}-{index}-"
    if len(prefix) > _MAX_GENERATED_PREFIX:
        tail = "-" if index is None else f"-{index}-"
        prefix = prefix[: _MAX_GENERATED_PREFIX - len(tail)] + tail
    if not unique:
        digest = hashlib.sha256(f"{job.metadata.uid}/{seq}".encode()).digest()
        return prefix + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])
    return prefix + _suffix(job.metadata.uid or "", seq)


def _suffix(uid: str, seq: int) -> str:
    """Five characters of the generateName alphabet that look random but are one to one in
    `seq`: the uid picks a start and each sequence number steps by a stride coprime with the
    space, so a Job's first 27^5 pod names never repeat and a retried create finds its pod."""
    start = int.from_bytes(hashlib.sha256(uid.encode()).digest()[:8], "big")
    n = (start + seq * _STRIDE) % _SPACE
    chars = []
    for _ in range(5):
        n, digit = divmod(n, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "".join(chars)


def want_active(job: BatchJob, active: int, succeeded: int) -> int:
    parallelism = job.spec.parallelism or 0
    if job.spec.completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(job.spec.completions - succeeded, parallelism))


def delete(
    counted: Census, doomed: Sequence[PodRecord], why: str, *, keep_finalizers: bool
) -> Managed:
    """Delete `doomed`. With their finalizers they are counted as failed (a failing Job);
    otherwise the finalizer goes before the delete, so a removed pod never counts."""
    if not doomed:
        return unchanged(counted)
    update: dict[str, object] = {"deleting": True}
    if not keep_finalizers:
        update["finalizer"] = False
    pods = dict(counted.pods)
    for pod in doomed:
        pods[pod.name] = pod.model_copy(update=update)
    names = [p.name for p in doomed]
    effect = batch_fx.DeletePods(names=names, keep_finalizers=keep_finalizers, why=why)
    return Managed(pods=pods, pod_seq=counted.pod_seq, effects=(effect,))


def stop(counted: Census, finishing: JobCondition) -> Managed:
    """A finishing Job's observed active pods are deleted, finalizers kept."""
    doomed = [p for p in counted.pods.values() if p.active and p.observed]
    why = f"job finishing: {finishing.reason}"
    return delete(counted, doomed, why, keep_finalizers=True)


def manage(
    job: BatchJob,
    counted: Census,
    record: Backoff,
    now: datetime,
    *,
    hold: bool,
    unique: bool = True,
) -> Managed:
    """`record` is the pod-failure back-off; `hold`: an API back-off runs, create nothing;
    `unique`: pod names one to one in the sequence (False: the hashed names first shipped)."""
    active = [p for p in counted.pods.values() if p.active]
    if job.spec.suspended:
        doomed = accounting.for_removal(job, active, len(active))
        return delete(counted, doomed, "job suspended", keep_finalizers=False)
    want = want_active(job, len(active), counted.succeeded)
    doomed = accounting.for_removal(job, active, max(0, len(active) - want))[:MAX_PER_SYNC]
    if doomed:
        why = f"too many pods running, want {want}"
        return delete(counted, doomed, why, keep_finalizers=False)
    held = counted.terminating if job.spec.only_replace_failed else 0
    missing = min(want - held - len(active), MAX_PER_SYNC)
    if missing <= 0 or hold:
        return unchanged(counted)
    if job.spec.backoff_limit_per_index is None:
        wait = backoff.remaining(record.failures, record.last_failure, now)
        if wait > timedelta(0):
            return unchanged(counted).model_copy(update={"wait_until": now + wait})
    if not job.spec.indexed:
        return create(job, counted, [None] * missing, now, unique)
    wanted, wait = pending_indexes(job, counted, active, missing, now)
    if wait > timedelta(0):
        return unchanged(counted).model_copy(update={"wait_until": now + wait})
    return create(job, counted, wanted, now, unique)


def pending_indexes(
    job: BatchJob, counted: Census, active: Sequence[PodRecord], missing: int, now: datetime
) -> tuple[list[int], timedelta]:
    """The lowest indexes to start; with backoffLimitPerIndex only those whose back-off is
    over, or none and the shortest wait."""
    ix = counted.indexes
    wanted = indexed.first_pending_indexes(job, active, missing, ix.succeeded, ix.failed)
    if job.spec.backoff_limit_per_index is None:
        return wanted, timedelta(0)
    return indexed.ready_indexes(wanted, ix.delayed, now)


def create(
    job: BatchJob,
    counted: Census,
    slots: Sequence[int | None],
    now: datetime,
    unique: bool = True,
) -> Managed:
    """CreatePods for one pod per slot (its completion index; None: NonIndexed), each named
    by the next sequence number and recorded as issued, not yet observed."""
    if not slots:
        return unchanged(counted)
    seq = counted.pod_seq
    new: list[NewPod] = []
    for ix in slots:
        seq += 1
        new.append(_new_pod(job, counted, ix, seq, unique))
    pods = dict(counted.pods)
    for p in new:
        pods[p.name] = PodRecord(
            name=p.name,
            index=p.index,
            failure_count=p.failure_count or 0,
            ignored_failure_count=p.ignored_failure_count,
            issued_at=now,
        )
    effect = batch_fx.CreatePods(job=job, pods=new)
    return Managed(pods=pods, pod_seq=seq, effects=(effect,))


def _new_pod(job: BatchJob, counted: Census, index: int | None, seq: int, unique: bool) -> NewPod:
    """With backoffLimitPerIndex a pod inherits the failure counts of the one it replaces."""
    if index is None:
        return NewPod(name=pod_name(job, None, seq, unique))
    failures: int | None = None
    ignored = 0
    if job.spec.backoff_limit_per_index is not None:
        replaced = counted.indexes.delayed.get(index)
        failures, ignored = indexed.next_failure_counts(job, replaced)
    return NewPod(
        name=pod_name(job, index, seq, unique),
        index=index,
        failure_count=failures,
        ignored_failure_count=ignored,
    )
