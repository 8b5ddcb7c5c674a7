"""Pod accounting as the built-in job controller does it: which pods are active, failed,
terminating, which indexes succeeded or failed, which pods to delete first. Pure.

Each function is named after the controller function it reproduces, so the two read side by
side; pods are `PodRecord`s (the workflow's table), never API objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from controllers.batchjob import backoff, indexes, policies
from controllers.batchjob.state import PodRecord
from models.batchv1 import BatchJob, FailurePolicyAction

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_failed(pod: PodRecord, job: BatchJob) -> bool:
    """isPodFailed: Failed phase; or, unless only failed pods are replaced, deleted while not
    Succeeded (a deleted pod may never reach a terminal phase)."""
    if pod.phase == "Failed":
        return True
    if job.spec.only_replace_failed:
        return False
    return pod.deleting and pod.phase != "Succeeded"


def valid_index(pod: PodRecord, job: BatchJob) -> bool:
    """An Indexed Job's pod with an index inside 0..completions-1 (any pod of a NonIndexed)."""
    if not job.spec.indexed:
        return True
    return pod.index is not None and pod.index < (job.spec.completions or 0)


def tracked(pods: Iterable[PodRecord], job: BatchJob, skip: set[str]) -> list[PodRecord]:
    """getValidPodsWithFilter: observed pods that still carry the finalizer, are not in `skip`
    (uncounted or finalizer removal issued) and, for Indexed Jobs, have a valid index."""
    return [
        p
        for p in pods
        if p.uid is not None and p.finalizer and p.uid not in skip and valid_index(p, job)
    ]


def policy_match(job: BatchJob, pod: PodRecord) -> policies.Match:
    return policies.match(job.spec.pod_failure_policy, pod, job.metadata.namespace or "")


def fail_job_message(job: BatchJob, pods: Iterable[PodRecord]) -> str | None:
    """getFailJobMessage: the first failed pod a FailJob rule matches; None: none does."""
    if job.spec.pod_failure_policy is None:
        return None
    for pod in pods:
        if pod.observed and is_failed(pod, job):
            found = policy_match(job, pod).fail_job
            if found is not None:
                return found
    return None


def past_backoff_limit_on_failure(job: BatchJob, pods: Iterable[PodRecord]) -> bool:
    """restartPolicy OnFailure: container restarts of pending and running pods count too."""
    template = job.spec.template.spec or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(p.restarts for p in pods if p.phase in ("Running", "Pending"))
    limit = job.spec.backoff_limit or 0
    return restarts > 0 if limit == 0 else restarts >= limit


def _deletion_order(pod: PodRecord) -> tuple[object, ...]:
    """controller.ActivePods: unassigned first, Pending < Unknown < Running, not ready first,
    ready for less time first, more restarts first, newer first; the name breaks ties."""
    ready_since = pod.ready_since if pod.ready else None
    created = pod.created_at
    return (
        pod.node is not None,
        _PHASE_ORDINAL.get(pod.phase, 0),
        pod.ready,
        # Later (or unknown) ready time first.
        ready_since is not None,
        -(ready_since or _EPOCH).timestamp(),
        -pod.max_restarts,
        -pod.sidecar_restarts,
        created is not None,
        -(created or _EPOCH).timestamp(),
        pod.name,
    )


def for_removal(job: BatchJob, active: Sequence[PodRecord], at_least: int) -> list[PodRecord]:
    """activePodsForRemoval: for Indexed Jobs first the pods without a valid index and all but
    one pod of each repeated index, then the first of the rest in deletion order."""
    remove: list[PodRecord] = []
    left = list(active)
    if job.spec.indexed:
        completions = job.spec.completions or 0
        left = []
        by_index: dict[int, list[PodRecord]] = {}
        for pod in active:
            if pod.index is None or pod.index >= completions:
                remove.append(pod)
            else:
                by_index.setdefault(pod.index, []).append(pod)
        for _, same in sorted(by_index.items()):
            ordered = sorted(same, key=_deletion_order)
            remove += ordered[:-1]
            left.append(ordered[-1])
    if len(remove) < at_least:
        remove += sorted(left, key=_deletion_order)[: at_least - len(remove)]
    return remove


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
    if not is_failed(pod, job):
        return False
    counted = True
    if job.spec.pod_failure_policy is not None:
        found = policy_match(job, pod)
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
    active = {p.index for p in pods if p.active and p.index is not None}
    out: dict[int, PodRecord] = {}
    for pod in tracked(pods, job, skip):
        ix = pod.index
        if ix is None or not is_failed(pod, job):
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
    if policy_match(job, replaced).counts:
        return failures + 1, ignored
    return failures, ignored + 1


def index_backoff_remaining(pod: PodRecord | None, now: datetime) -> timedelta:
    """getRemainingTimePerIndex: the back-off of the index whose last failed pod is `pod`
    (None: the index never failed, no wait)."""
    if pod is None:
        return timedelta(0)
    failures = _absolute_failures(pod) + 1
    return backoff.remaining(failures, backoff.finished_at(pod), now)


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
