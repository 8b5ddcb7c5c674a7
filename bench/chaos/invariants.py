"""The invariants checked once the faults stopped, each a pure function of what was recorded
(the audit, the jobs' ends, the histories); a violation names what broke and where."""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.chaos.audit import Audit, PodLife
from bench.chaos.histories import Run
from bench.chaos.workload import GONE, Planned

SLACK = 1.0  # seconds: creation and transition times are kept to the second


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


def duplicate_pods(audit: Audit) -> list[Violation]:
    """Never two live pods for the same job/task/index/version (or completion index)."""
    out: list[Violation] = []
    by_key: dict[str, list[PodLife]] = collections.defaultdict(list)
    for pod in audit.pods.values():
        if pod.job and "/#" not in pod.key:
            by_key[pod.key].append(pod)
    for key, lives in by_key.items():
        lives.sort(key=lambda p: p.created)
        for a, b in itertools.pairwise(lives):
            a_end = a.ended if a.ended is not None else float("inf")
            if b.created + SLACK < a_end:
                out.append(Violation("duplicate pod", f"{key}: {a.name} and {b.name} both live"))
    return out


def parallelism_kept(audit: Audit, parallelism: dict[str, int]) -> list[Violation]:
    """A non-indexed batch/v1 Job never has more live pods than its parallelism."""
    out: list[Violation] = []
    for job, limit in parallelism.items():
        lives = [p for p in audit.pods.values() if p.job == job]
        points = sorted(
            [(p.created, 1) for p in lives] + [(p.ended, -1) for p in lives if p.ended is not None],
            key=lambda x: (x[0], x[1]),
        )
        live = worst = 0
        for _, step in points:
            live += step
            worst = max(worst, live)
        if worst > limit:
            out.append(Violation("duplicate pod", f"{job}: {worst} live pods, parallelism {limit}"))
    return out


def no_pod_after_finish(audit: Audit) -> list[Violation]:
    """No pod is created for a job after it entered Completed, Failed or Terminated."""
    out: list[Violation] = []
    for pod in audit.pods.values():
        job = audit.jobs.get(pod.job)
        if job is None or job.finished_at is None or pod.job_uid != job.uid:
            continue
        if pod.created > job.finished_at + SLACK:
            out.append(
                Violation("pod for a finished job", f"{pod.name} created after {job.name} ended")
            )
    return out


def ends(audit: Audit, planned: list[Planned]) -> list[Violation]:
    """Every job reached the end its kind's rules give it."""
    out: list[Violation] = []
    for job in planned:
        seen = audit.jobs.get(job.name)
        if job.kind.end == GONE:
            ok = seen is not None and seen.deleted
            got = "deleted" if ok else (seen.phase if seen else "never seen")
        else:
            got = seen.phase if seen else "never seen"
            ok = got == job.kind.end
        if not ok:
            out.append(
                Violation("stuck job", f"{job.name}: {got or 'no phase'}, not {job.kind.end}")
            )
    return out


def gangs_whole(audit: Audit, min_available: dict[str, int]) -> list[Violation]:
    """A gang that is not finished has none or at least minAvailable of its pods bound."""
    out: list[Violation] = []
    for job, need in min_available.items():
        bound = [p for p in audit.live() if p.job == job and p.node]
        if 0 < len(bound) < need:
            out.append(Violation("gang partly bound", f"{job}: {len(bound)} of {need} bound"))
    return out


def queue_agrees(queue: dict[str, Any], live_cpu: float, groups: int) -> list[Violation]:
    """A queue's `status.allocated` and PodGroup counts match the pods and PodGroups there."""
    out: list[Violation] = []
    status = queue.get("status") or {}
    name = queue["metadata"]["name"]
    allocated = _cpu((status.get("allocated") or {}).get("cpu", "0"))
    if abs(allocated - live_cpu) > 0.001:
        out.append(Violation("queue allocated", f"{name}: {allocated} CPU, pods hold {live_cpu}"))
    phases = ("pending", "inqueue", "running", "unknown", "completed")
    counted = sum(int(status.get(k) or 0) for k in phases)
    if counted != groups:
        out.append(Violation("queue counts", f"{name}: counts {counted}, PodGroups {groups}"))
    return out


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def tasks_clean(runs: list[Run]) -> list[Violation]:
    """No workflow task failed (non-determinism included) in any history."""
    return [
        Violation("failed workflow task", f"{r.workflow_id}: {failure}")
        for r in runs
        for failure in r.task_failures
    ]


def activities_settled(runs: list[Run]) -> list[Violation]:
    """Once every job ended, no activity is still retrying (a retry loop never ends a job)."""
    return [
        Violation("activity retrying", f"{r.workflow_id}: {retrying}")
        for r in runs
        for retrying in r.retrying
    ]


def timers_kept(runs: list[Run], now: datetime | None = None) -> list[Violation]:
    """Every durable timer fired or was cancelled; one still pending is not overdue."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    out: list[Violation] = []
    for r in runs:
        for t in r.timers:
            if t.fired or t.cancelled:
                continue
            overdue = t.fires_at < now - timedelta(seconds=30)
            if not r.open or overdue:
                state = "overdue" if r.open else "lost in a closed run"
                out.append(
                    Violation("lost delayed action", f"{r.workflow_id}: {t.summary} {state}")
                )
    return out
