"""Job status arithmetic: pod counters and Volcano's status functions.

Pure functions of the spec, the pod counts and the stored status; the controller decides
when to write, this module only says what the status becomes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from controllers.job.transitions import StatusFn
from models.vcjob import JobCondition, JobPhase, JobSpec, JobState, JobStatus, TaskState

_PHASES = ("Pending", "Running", "Succeeded", "Failed")


class Counts(BaseModel):
    """Pods by phase, as syncJob or killJob counted them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0
    terminating: int = 0
    by_task: dict[str, dict[str, int]] = {}

    @classmethod
    def of(cls, live: Iterable[tuple[str, str]], terminating: int) -> Counts:
        """Count (task, phase) pairs of pods that are neither terminating nor retained."""
        phases: Counter[str] = Counter()
        by_task: dict[str, Counter[str]] = {}
        for task, phase in live:
            counted = phase if phase in _PHASES else "Unknown"
            phases[counted] += 1
            by_task.setdefault(task, Counter())[phase or "Unknown"] += 1
        return cls(
            pending=phases["Pending"],
            running=phases["Running"],
            succeeded=phases["Succeeded"],
            failed=phases["Failed"],
            unknown=phases["Unknown"],
            terminating=terminating,
            by_task={t: dict(sorted(c.items())) for t, c in sorted(by_task.items())},
        )


def counts_of(status: JobStatus) -> Counts:
    """The counters a status already holds (for the enqueue gate, which does not recount)."""
    return Counts(
        pending=status.pending or 0,
        running=status.running or 0,
        succeeded=status.succeeded or 0,
        failed=status.failed or 0,
        unknown=status.unknown or 0,
        terminating=status.terminating or 0,
        by_task={
            t: dict(s.phase or {}) for t, s in sorted((status.task_status_count or {}).items())
        },
    )


def with_counts(status: JobStatus, counts: Counts, spec: JobSpec) -> JobStatus:
    """The recounted status syncJob builds: counters replaced, runningDuration dropped."""
    return status.model_copy(
        update={
            "pending": counts.pending,
            "running": counts.running,
            "succeeded": counts.succeeded,
            "failed": counts.failed,
            "unknown": counts.unknown,
            "terminating": counts.terminating,
            "task_status_count": {t: TaskState(phase=p) for t, p in counts.by_task.items()},
            "min_available": spec.min_available or 0,
            "running_duration": None,
        }
    )


def _f_pending(spec: JobSpec, c: Counts) -> JobPhase | None:
    if (spec.min_available or 0) <= c.running + c.succeeded + c.failed:
        return JobPhase.RUNNING
    return None


def _f_running(spec: JobSpec, c: Counts) -> JobPhase | None:
    total = spec.total_replicas
    if total == 0:
        return None  # scaled to zero keeps its phase
    min_available = spec.min_available or 0
    if spec.min_success is not None and c.succeeded >= spec.min_success:
        return JobPhase.COMPLETED
    if c.succeeded + c.failed == total:
        task_minimum = sum(
            t.replicas or 0 if t.min_available is None else t.min_available for t in spec.tasks
        )
        if min_available >= task_minimum:
            for task in spec.tasks:
                seen = c.by_task.get(task.name or "")
                short = (
                    seen is not None
                    and task.min_available is not None
                    and (seen.get("Succeeded", 0) < task.min_available)
                )
                if short:
                    return JobPhase.FAILED
        if spec.min_success is not None and c.succeeded < spec.min_success:
            return JobPhase.FAILED
        if c.succeeded >= min_available:
            return JobPhase.COMPLETED
        return JobPhase.FAILED
    if c.pending > total - min_available:
        return JobPhase.PENDING
    return None


def _f_restarting(spec: JobSpec, status: JobStatus, c: Counts) -> JobPhase | None:
    if (status.retry_count or 0) >= (spec.max_retry or 0):
        return JobPhase.FAILED
    if spec.total_replicas - c.terminating >= (status.min_available or 0):
        return JobPhase.PENDING
    return None


def next_phase(
    fn: StatusFn,
    target: JobPhase | None,
    spec: JobSpec,
    status: JobStatus,
    counts: Counts,
) -> JobPhase | None:
    """The phase a status function moves to; None means no change."""
    match fn:
        case StatusFn.TO:
            return target
        case StatusFn.PENDING:
            return _f_pending(spec, counts)
        case StatusFn.RUNNING:
            return _f_running(spec, counts)
        case StatusFn.RESTARTING:
            return _f_restarting(spec, status, counts)
        case StatusFn.DRAIN:
            alive = counts.terminating + counts.pending + counts.running
            return target if alive == 0 else None
        case StatusFn.KEEP:
            return None


def transition(
    status: JobStatus, phase: JobPhase, now: datetime, reason: str, message: str
) -> JobStatus:
    """Enter `phase`: new state with a reason users can read, one condition per phase."""
    conditions = [c for c in status.conditions or [] if c.status != phase]
    conditions.append(JobCondition(status=phase, last_transition_time=now))
    return status.model_copy(
        update={
            "state": JobState(
                phase=phase, reason=reason, message=message, last_transition_time=now
            ),
            "conditions": conditions,
        }
    )


def touch(status: JobStatus, now: datetime) -> JobStatus:
    """syncJob's rule: any change refreshes lastTransitionTime and re-appends the condition."""
    state = status.state or JobState(phase=JobPhase.PENDING)
    phase = state.phase or JobPhase.PENDING
    conditions = [c for c in status.conditions or [] if c.status != phase]
    conditions.append(JobCondition(status=phase, last_transition_time=now))
    return status.model_copy(
        update={
            "state": state.model_copy(update={"last_transition_time": now}),
            "conditions": conditions,
        }
    )


def reason(
    fn: StatusFn,
    after: JobPhase,
    spec: JobSpec,
    status: JobStatus,
    c: Counts,
    why: str,
) -> tuple[str, str]:
    """The reason and message of a phase change by `fn`; `why` tells the action's story."""
    if fn == StatusFn.TO:
        action, _, story = why.partition(": ")
        return action, story
    if fn == StatusFn.PENDING:
        return "MinAvailableReached", (
            f"{c.running + c.succeeded + c.failed} pods running or finished, "
            f"minAvailable {spec.min_available}"
        )
    if fn == StatusFn.RESTARTING and after == JobPhase.FAILED:
        return "MaxRetryExceeded", f"ran {status.retry_count} times, maxRetry {spec.max_retry}"
    if fn == StatusFn.RESTARTING:
        return "Restarted", f"retry {status.retry_count} of {spec.max_retry}"
    if fn == StatusFn.RUNNING and after == JobPhase.PENDING:
        return "GangLost", f"{c.pending} pods pending, minAvailable {spec.min_available}"
    if fn == StatusFn.RUNNING:
        return after.value, (
            f"succeeded {c.succeeded}, failed {c.failed} of {spec.total_replicas} pods "
            f"(minAvailable {spec.min_available}, minSuccess {spec.min_success})"
        )
    # DRAIN: the stop that began it (the Aborting, Terminating... state's own story), not the
    # pod event that happened to end it: "aborted after its dispatch lease expired" stays on
    # the Aborted Job, where a manager tells a fenced copy from a job that ended.
    began = status.state
    if began is not None and began.reason and began.message:
        why = f"{began.reason}: {began.message}"
    return after.value, f"no pod left running after {why}"
