"""manageJob: how many pods a running Job wants, which to delete, which to create. Pure.

The built-in controller's rules: suspended → delete every active pod; completions nil →
parallelism until the first success, then leave what runs; else min(parallelism, completions -
succeeded). Surplus pods go first, in the controller's deletion order, and deletion wins over
creation in one sync. New pods wait out the pod-failure back-off (per index with
backoffLimitPerIndex). At most 500 pods are created or deleted per sync.

Pod names are `<job>-<5 chars>` (Indexed: `<job>-<index>-<5 chars>`) like the apiserver's
generateName, but derived from the Job uid and a sequence number so a retried activity finds
the pod an earlier attempt created instead of creating another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from controllers.batchjob import accounting, backoff, indexes
from controllers.batchjob import effects as fx
from controllers.batchjob.state import Backoff, PodRecord
from models.batchv1 import BatchJob

MAX_PER_SYNC: Final = 500  # MaxPodCreateDeletePerSync
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet
_MAX_GENERATED_PREFIX: Final = 58  # 63 - 5 random characters


class Context(BaseModel):
    """What syncJob computed before calling manageJob."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job: BatchJob
    pods: dict[str, PodRecord]
    succeeded: int
    succeeded_indexes: indexes.Intervals = ()
    failed_indexes: indexes.Intervals | None = None  # None: backoffLimitPerIndex not used
    delayed: dict[int, PodRecord] = Field(default_factory=dict)  # index → pod held back
    terminating: int
    ready: int
    backoff: Backoff
    pod_seq: int
    now: datetime
    hold: bool = False  # an API back-off runs: create nothing until it is over


class Managed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    active: int
    ready: int
    terminating: int
    pods: dict[str, PodRecord]
    pod_seq: int
    effects: tuple[fx.AnyEffect, ...] = ()
    wait_until: datetime | None = None  # None: no back-off holds pod creation back


def pod_name(job: BatchJob, index: int | None, seq: int) -> str:
    name = job.metadata.name or ""
    prefix = f"{name}-" if index is None else f"{name}-{index}-"
    if len(prefix) > _MAX_GENERATED_PREFIX:
        tail = "-" if index is None else f"-{index}-"
        prefix = prefix[: _MAX_GENERATED_PREFIX - len(tail)] + tail
    digest = hashlib.sha256(f"{job.metadata.uid}/{seq}".encode()).digest()
    return prefix + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def want_active(job: BatchJob, active: int, succeeded: int) -> int:
    parallelism = job.spec.parallelism or 0
    if job.spec.completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(job.spec.completions - succeeded, parallelism))


def _delete(ctx: Context, doomed: Sequence[PodRecord], active: int, why: str) -> Managed:
    pods = dict(ctx.pods)
    for pod in doomed:
        # The finalizer goes before the delete, so a removed pod never counts as failed.
        pods[pod.name] = pod.model_copy(update={"deleting": True, "finalizer": False})
    ready = sum(1 for p in doomed if p.ready)
    return Managed(
        active=active - len(doomed),
        ready=ctx.ready - ready,
        terminating=ctx.terminating + len(doomed),
        pods=pods,
        pod_seq=ctx.pod_seq,
        effects=(fx.DeletePods(names=[p.name for p in doomed], keep_finalizers=False, why=why),),
    )


def manage(ctx: Context) -> Managed:
    job, now = ctx.job, ctx.now
    active_pods = [p for p in ctx.pods.values() if p.active]
    active = len(active_pods)
    same = Managed(
        active=active,
        ready=ctx.ready,
        terminating=ctx.terminating,
        pods=ctx.pods,
        pod_seq=ctx.pod_seq,
    )
    if job.spec.suspended:
        doomed = accounting.for_removal(job, active_pods, active)
        return _delete(ctx, doomed, active, "job suspended") if doomed else same
    want = want_active(job, active, ctx.succeeded)
    doomed = accounting.for_removal(job, active_pods, max(0, active - want))[:MAX_PER_SYNC]
    if doomed:
        return _delete(ctx, doomed, active, f"too many pods running, want {want}")
    held = ctx.terminating if job.spec.only_replace_failed else 0
    diff = min(want - held - active, MAX_PER_SYNC)
    if diff <= 0 or ctx.hold:
        return same
    per_index = job.spec.backoff_limit_per_index is not None
    if not per_index:
        wait = backoff.remaining(ctx.backoff.failures, ctx.backoff.last_failure, now)
        if wait > timedelta(0):
            return same.model_copy(update={"wait_until": now + wait})
    new: list[fx.NewPod] = []
    seq = ctx.pod_seq
    if job.spec.indexed:
        wanted = accounting.first_pending_indexes(
            job, active_pods, diff, ctx.succeeded_indexes, ctx.failed_indexes
        )
        if per_index:
            wanted, wait = _ready_indexes(wanted, ctx.delayed, now)
            if wait > timedelta(0):
                return same.model_copy(update={"wait_until": now + wait})
        for ix in wanted:
            seq += 1
            failures: int | None = None
            ignored = 0
            if per_index:
                failures, ignored = accounting.next_failure_counts(job, ctx.delayed.get(ix))
            new.append(
                fx.NewPod(
                    name=pod_name(job, ix, seq),
                    index=ix,
                    failure_count=failures,
                    ignored_failure_count=ignored,
                )
            )
    else:
        for _ in range(diff):
            seq += 1
            new.append(fx.NewPod(name=pod_name(job, None, seq)))
    if not new:
        return same
    pods = dict(ctx.pods)
    for p in new:
        pods[p.name] = PodRecord(
            name=p.name,
            index=p.index,
            failure_count=p.failure_count or 0,
            ignored_failure_count=p.ignored_failure_count,
            issued_at=now,
        )
    return Managed(
        active=active + len(new),
        ready=ctx.ready,
        terminating=ctx.terminating,
        pods=pods,
        pod_seq=seq,
        effects=(fx.CreatePods(job=job.dump(), pods=new),),
    )


def _ready_indexes(
    wanted: list[int], delayed: dict[int, PodRecord], now: datetime
) -> tuple[list[int], timedelta]:
    """getPodCreationInfoForIndependentIndexes: the indexes whose back-off is over, or, when
    none is, the shortest wait."""
    ready: list[int] = []
    shortest: timedelta | None = None
    for ix in wanted:
        wait = accounting.index_backoff_remaining(delayed.get(ix), now)
        if wait <= timedelta(0):
            ready.append(ix)
        elif shortest is None or wait < shortest:
            shortest = wait
    if ready:
        return ready, timedelta(0)
    return ready, shortest or timedelta(0)
