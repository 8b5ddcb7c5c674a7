"""Pod accounting as the built-in job controller does it: which pods are failed, which count,
which to delete first. Pure.

Each function is named after the controller function it reproduces, so the two read side by
side; pods are `PodRecord`s (the workflow's table), never API objects. The Job comes first,
then the pod. Indexed Jobs' index accounting is in `indexed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from controllers.batchjob import policies
from controllers.batchjob.state import PodRecord
from models.batchv1 import BatchJob

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_failed(job: BatchJob, pod: PodRecord) -> bool:
    """isPodFailed: Failed phase; or, unless only failed pods are replaced, deleted while not
    Succeeded (a deleted pod may never reach a terminal phase)."""
    if pod.phase == "Failed":
        return True
    if job.spec.only_replace_failed:
        return False
    return pod.deleting and pod.phase != "Succeeded"


def valid_index(job: BatchJob, pod: PodRecord) -> bool:
    """An Indexed Job's pod with an index inside 0..completions-1 (any pod of a NonIndexed)."""
    if not job.spec.indexed:
        return True
    return pod.index is not None and pod.index < (job.spec.completions or 0)


def tracked(job: BatchJob, pods: Iterable[PodRecord], skip: set[str]) -> list[PodRecord]:
    """getValidPodsWithFilter: observed pods that still carry the finalizer, are not in `skip`
    (uncounted or finalizer removal issued) and, for Indexed Jobs, have a valid index."""
    return [
        p
        for p in pods
        if p.uid is not None and p.finalizer and p.uid not in skip and valid_index(job, p)
    ]


def policy_match(job: BatchJob, pod: PodRecord) -> policies.Match:
    """What the Job's podFailurePolicy says about this pod's failure."""
    return policies.match(job.spec.pod_failure_policy, pod, job.metadata.namespace or "")


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
