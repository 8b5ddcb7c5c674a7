"""Indexed Jobs' pod accounting: which indexes succeeded, which failed (backoffLimitPerIndex),
which are pending, and each index's own back-off. Pure.

Named after the controller's functions, like `accounting`; the interval arithmetic is in
`indexes`. With backoffLimitPerIndex an index's latest failed pod keeps its finalizer until
its replacement is created, because the replacement inherits its failure count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from controllers.batchjob import accounting, backoff, indexes
from controllers.batchjob.state import PodRecord
from models.batchv1 import BatchJob, FailurePolicyAction


def succeeded_indexes(
    job: BatchJob, pods: Iterable[PodRecord], recorded: str | None
) -> tuple[indexes.Intervals, indexes.Intervals]:
    """calculateSucceededIndexes: (what status records, that plus succeeded tracked pods)."""
    completions = job.spec.completions or 0
    before = indexes.parse(recorded, completions)
    new = {
        p.index
        for p in pods
        if p.phase == "Succeeded"
        and p.finalizer
        and p.observed
        and p.index is not None
        and p.index < completions
    }
    return before, indexes.with_indexes(before, new)


def index_failed(job: BatchJob, pod: PodRecord) -> bool:
    """isIndexFailed: FailIndex matched, or a counted failure that used up the index budget."""
    if not accounting.is_failed(job, pod):
        return False
    counted = True
    if job.spec.pod_failure_policy is not None:
        found = accounting.policy_match(job, pod)
        if found.action == FailurePolicyAction.FAIL_INDEX:
            return True
        counted = found.counts
    return counted and pod.failure_count >= (job.spec.backoff_limit_per_index or 0)


def failed_indexes(
    job: BatchJob, pods: Iterable[PodRecord], recorded: str | None
) -> indexes.Intervals:
    """calculateFailedIndexes: what status records plus indexes failed by tracked pods."""
    completions = job.spec.completions or 0
    new = {
        p.index
        for p in pods
        if p.observed
        and p.finalizer
        and p.index is not None
        and p.index < completions
        and index_failed(job, p)
    }
    return indexes.with_indexes(indexes.parse(recorded, completions), new)


def delayed_deletion_per_index(
    job: BatchJob,
    pods: Iterable[PodRecord],
    skip: set[str],
    succeeded: indexes.Intervals,
    failed: indexes.Intervals,
) -> dict[int, PodRecord]:
    """getPodsWithDelayedDeletionPerIndex: per index still to run, its latest failed pod,
    kept (finalizer and all) until the replacement inherits its failure count."""
    pods = list(pods)
    active = {p.index for p in pods if p.active and p.index is not None}
    out: dict[int, PodRecord] = {}
    for pod in accounting.tracked(job, pods, skip):
        ix = pod.index
        if ix is None or not accounting.is_failed(job, pod):
            continue
        if indexes.has(succeeded, ix) or indexes.has(failed, ix) or ix in active:
            continue
        last = out.get(ix)
        if last is None or (
            _absolute_failures(last) <= _absolute_failures(pod)
            and backoff.finished_at(pod) >= backoff.finished_at(last)
        ):
            out[ix] = pod
    return out


def _absolute_failures(pod: PodRecord) -> int:
    return pod.failure_count + pod.ignored_failure_count


def next_failure_counts(job: BatchJob, replaced: PodRecord | None) -> tuple[int, int]:
    """getNewIndexFailureCounts: the (failure, ignored failure) annotations of a pod that
    replaces `replaced` in its index (0, 0 for a first pod)."""
    if replaced is None:
        return 0, 0
    failures, ignored = replaced.failure_count, replaced.ignored_failure_count
    if accounting.policy_match(job, replaced).counts:
        return failures + 1, ignored
    return failures, ignored + 1


def index_backoff_remaining(pod: PodRecord | None, now: datetime) -> timedelta:
    """getRemainingTimePerIndex: the back-off of the index whose last failed pod is `pod`
    (None: the index never failed, no wait)."""
    if pod is None:
        return timedelta(0)
    failures = _absolute_failures(pod) + 1
    return backoff.remaining(failures, backoff.finished_at(pod), now)


def ready_indexes(
    wanted: Sequence[int], delayed: dict[int, PodRecord], now: datetime
) -> tuple[list[int], timedelta]:
    """getPodCreationInfoForIndependentIndexes: the indexes whose back-off is over, or, when
    none is, the shortest wait."""
    ready: list[int] = []
    shortest: timedelta | None = None
    for ix in wanted:
        wait = index_backoff_remaining(delayed.get(ix), now)
        if wait <= timedelta(0):
            ready.append(ix)
        elif shortest is None or wait < shortest:
            shortest = wait
    if ready:
        return ready, timedelta(0)
    return ready, shortest or timedelta(0)


def first_pending_indexes(
    job: BatchJob,
    pods: Sequence[PodRecord],
    count: int,
    succeeded: indexes.Intervals,
    failed: indexes.Intervals | None,
) -> list[int]:
    """firstPendingIndexes: the lowest indexes that are neither succeeded, active, failed nor
    (when only failed pods are replaced) held by a terminating pod."""
    if count <= 0:
        return []
    taken = indexes.with_indexes(
        succeeded, (p.index for p in pods if p.active and p.index is not None)
    )
    if job.spec.only_replace_failed:
        terminating = (p.index for p in pods if p.terminating and p.index is not None)
        taken = indexes.with_indexes(taken, terminating)
    if failed is not None:
        taken = indexes.merge(taken, failed)
    out: list[int] = []
    candidate = 0
    completions = job.spec.completions or 0
    while candidate < completions and len(out) < count:
        if not indexes.has(taken, candidate):
            out.append(candidate)
        candidate += 1
    return out
