"""Volcano's resourcequota plugin: a job its namespace's ResourceQuotas cannot hold waits.

As `pkg/scheduler/plugins/resourcequota/resourcequota.go` at HEAD decides it, at
JobEnqueueable: a PodGroup without minResources is permitted; otherwise, for every
ResourceQuota of its namespace, its minResources masked to the quota's hard names, added to
the quota's `status.used` and to what this session already admitted in the namespace, must
stay within `status.hard` name by name. Several quotas in one namespace all have to hold (the
first that does not, by name, gives the reason). The reason is Volcano's "resource quota
insufficient, requested: ..., used: ..., limited: ...", over the names that went past the
limit. What enqueue admits is counted against its namespace for the rest of the session
(Volcano's JobEnqueued, `pendingResources`); a job refused by another plugin is not.

Where Caldera goes further, and why:
- an Inqueue job none of whose pods exist yet already holds its minResources against its
  namespace when the session opens (less what its pods that do exist are charged). The
  apiserver charges a pod to the quota's `status.used` when it creates it; an admitted job
  whose pods are not created yet is counted nowhere, so Volcano's next session admits into
  the same room, and the apiserver then refuses the second job's pods. The apiserver charges
  a pod the moment it admits it, before the pod reaches the scheduler's cache: what a quota's
  `status.used` holds beyond the pods the session sees is such pods, so that much of the held
  room is already in `used` and not counted twice (else a job's reason flips between two
  `used` figures from one session to the next). Pods of the namespace the scheduler does not
  see at all (no PodGroup) count as such too, which errs towards admitting, as Volcano does;
- the reason names the quota (`, quota: <name>` after Volcano's text); its `used` counts
  what the session admitted too (Volcano prints `status.used` alone, which reads as if the
  job fitted); quantities print as text (`map[cpu:2]`), not as Go's Quantity structs.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from models.scheduling import PodGroupPhase
from scheduling.api import quotas
from scheduling.api.quotas import Amounts, ResourceQuota
from scheduling.api.snapshot import COMPLETED, JobInfo, Snapshot, TaskInfo

INSUFFICIENT = "resource quota insufficient"


def _namespace(job: JobInfo) -> str:
    return job.key.partition("/")[0]


def _charged(tasks: Iterable[TaskInfo]) -> Amounts:
    """What the apiserver charged the quotas for these pods: their requests, as pods live."""
    charged: Amounts = {}
    for task in tasks:
        if task.status not in COMPLETED:
            charged = quotas.add(charged, quotas.quota_usage(task.request.to_resource_list()))
    return charged


def _seen(snapshot: Snapshot) -> dict[str, Amounts]:
    """Per namespace, what the apiserver charged for the pods this session sees."""
    seen: dict[str, Amounts] = {}
    for job in snapshot.jobs:
        namespace = _namespace(job)
        seen[namespace] = quotas.add(seen.get(namespace, {}), _charged(snapshot.tasks_of(job.key)))
    return seen


def _held(snapshot: Snapshot) -> dict[str, Amounts]:
    """Per namespace, the minResources of Inqueue jobs beyond what their pods are charged."""
    held: dict[str, Amounts] = {}
    for job in snapshot.jobs:
        if job.quota_usage is None or job.phase is not PodGroupPhase.INQUEUE:
            continue
        charged = _charged(snapshot.tasks_of(job.key))
        rest = {n: v - charged.get(n, Fraction(0)) for n, v in job.quota_usage.items()}
        rest = {n: v for n, v in rest.items() if v > 0}
        if rest:
            namespace = _namespace(job)
            held[namespace] = quotas.add(held.get(namespace, {}), rest)
    return held


class QuotaBook:
    """One session's ResourceQuotas by namespace and what is admitted against them."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._quotas: dict[str, list[ResourceQuota]] = {}
        for quota in snapshot.quotas:  # sorted by key, so by name within a namespace
            self._quotas.setdefault(quota.namespace, []).append(quota)
        self._held = _held(snapshot)  # admitted before, pods not seen: see the docstring
        self._seen = _seen(snapshot)
        self._pending: dict[str, Amounts] = {}  # admitted by this session

    def refusal(self, job: JobInfo) -> str | None:
        """Why the namespace's quotas cannot hold the job; None: they can (or it sets no
        minResources, or its namespace has no quota)."""
        wanted = job.quota_usage
        if wanted is None:
            return None
        namespace = _namespace(job)
        pending, held = self._pending.get(namespace, {}), self._held.get(namespace, {})
        seen = self._seen.get(namespace, {})
        for quota in self._quotas.get(namespace, ()):
            # The part of `used` that is pods the session does not see yet: held room already in.
            unseen = {n: v - seen.get(n, Fraction(0)) for n, v in quota.used.items()}
            extra = {n: v - max(unseen.get(n, Fraction(0)), Fraction(0)) for n, v in held.items()}
            extra = {n: v for n, v in extra.items() if v > 0}
            used = quotas.add(quotas.add(quota.used, extra), pending)
            over = [
                name
                for name, value in wanted.items()
                if name in quota.hard and used.get(name, Fraction(0)) + value > quota.hard[name]
            ]
            if over:
                return (
                    f"{INSUFFICIENT}, requested: {quotas.show({n: wanted[n] for n in over})}, "
                    f"used: {quotas.show({n: used.get(n, Fraction(0)) for n in over})}, "
                    f"limited: {quotas.show({n: quota.hard[n] for n in over})}, "
                    f"quota: {quota.name}"
                )
        return None

    def admit(self, job: JobInfo) -> None:
        """Volcano's JobEnqueued: the job's minResources count against its namespace."""
        if job.quota_usage is None:
            return
        namespace = _namespace(job)
        self._pending[namespace] = quotas.add(self._pending.get(namespace, {}), job.quota_usage)
