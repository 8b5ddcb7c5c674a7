"""syncJob of the built-in job controller, pure, as a pipeline of named steps.

One call looks at the Job and the pod table and returns the next state, the effects and the
timers wanted. Each step reads what earlier ones produced: the pods are counted once, into a
`census.Census`, and everything after reads that record instead of counting again.

Finished pods are counted through `status.uncountedTerminatedPods` and the job-tracking
finalizer (`tracking`):

1. finished pods that still carry the finalizer are added to uncountedTerminatedPods and the
   status is written (with the interim FailureTarget / SuccessCriteriaMet condition);
2. their finalizers are removed (an activity; its result comes back as an input);
3. the next sync moves them from uncountedTerminatedPods to the counters, and once nothing is
   uncounted and no pod is terminating, writes Failed or Complete.

The controller does 1-3 in one sync with two status writes; here step 3 is the next sync, so
every decision is made before the I/O it depends on, and the same writes reach the apiserver.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from controllers import effects as fx
from controllers.batchjob import backoff, census, conditions, finishing, manage, tracking
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.census import Census
from controllers.batchjob.state import Backoff, BatchJobRecord, PodRecord
from models.batchv1 import BatchJobStatus, JobCondition

DEADLINE_TIMER: Final = "deadline"
BACKOFF_TIMER: Final = "backoff"
EXPECTATIONS_TIMER: Final = "expectations"
RETRY_TIMER: Final = "retry"  # the API back-off after a failed action


class Timer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fires_at: datetime
    summary: str


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: BatchJobRecord
    effects: tuple[batch_fx.AnyEffect, ...] = ()
    timers: dict[str, Timer] = Field(default_factory=dict)  # the sync timers wanted now


def sync(state: BatchJobRecord, now: datetime) -> Plan:
    """One syncJob; nothing to do once the Job is gone or finished."""
    job = state.job
    if job is None or state.deleted or state.status.finished:
        return Plan(state=state)
    now = conditions.seconds(now)
    # 1. Count the pods once, as found.
    counted = census.count(job, state, now)
    # 2. Start the clock unless suspended; the newly finished pods move the back-off.
    status = _started(state.status, job.spec.suspended, now)
    record = backoff.record(state.backoff, counted.new_succeeded, counted.new_failed)
    # 3. Decide whether the Job is finishing, and when activeDeadlineSeconds would end it.
    verdict = finishing.decide(job, status, counted, now)
    # 4. A finishing Job's pods are stopped; a running Job's are managed (manageJob).
    managing = verdict.condition is None and _manageable(counted, job.metadata.deletion_timestamp)
    if verdict.condition is not None:
        acted = manage.stop(counted, verdict.condition)
    elif managing:
        acted = manage.manage(
            job, counted, record, now, hold=RETRY_TIMER in state.timers, unique=state.unique_names
        )
    else:
        acted = manage.unchanged(counted)
    # 5. The status counts the pods as they are now.
    status = census.pod_counts(status, acted.pods)
    # 6. The Job finishes once no pod is active; if it runs on, it says whether it is suspended.
    ending = _ending(verdict.condition, job.spec.completions, counted, status.active or 0, now)
    suspension: tuple[fx.RecordEvent, ...] = ()
    if managing and ending is None:
        status, suspension = conditions.suspension(status, job.spec.suspended, now)
    # 7. Count finished pods through uncountedTerminatedPods, then Complete or Failed.
    tracked = tracking.track(job, status, ending, counted, now)
    # 8. The timers wanted, and the next state.
    timers = _wanted(
        {
            DEADLINE_TIMER: _deadline_timer(
                job.spec.active_deadline_seconds, verdict.deadline, now
            ),
            BACKOFF_TIMER: _backoff_timer(acted.wait_until, record.failures, now),
            EXPECTATIONS_TIMER: _expectations_timer(state.pods),
        }
    )
    effects = (*acted.effects, *tracking.effects(state.written, tracked), *suspension)
    return Plan(state=_next_state(state, acted, record, tracked), effects=effects, timers=timers)


def _next_state(
    state: BatchJobRecord, acted: manage.Managed, record: Backoff, tracked: tracking.Tracked
) -> BatchJobRecord:
    """The pod table as acted on, the back-off record, and the status as tracked (written
    now, or already as written)."""
    update = {
        "pods": acted.pods,
        "pod_seq": acted.pod_seq,
        "backoff": record,
        "status": tracked.status,
        "written": tracked.status,
        "removing": tracked.removing,
    }
    return state.model_copy(update=update)


def _started(status: BatchJobStatus, suspended: bool, now: datetime) -> BatchJobStatus:
    """startTime is set by the first sync of a Job that is not suspended."""
    if status.start_time is None and not suspended:
        return status.model_copy(update={"start_time": now})
    return status


def _manageable(counted: Census, deletion: datetime | None) -> bool:
    """manageJob runs once every pod created was observed, and never for a Job being deleted."""
    return counted.satisfied and deletion is None


def _ending(
    decided: JobCondition | None,
    completions: int | None,
    counted: Census,
    active: int,
    now: datetime,
) -> JobCondition | None:
    """The finishing condition tracking is to carry out, with `active` pods left: the one
    decided, once every pod is stopped and observed (pods not observed yet may still turn up),
    or, for a Job still running, completions reached (nil completions: the first success)."""
    if decided is not None:
        return decided if active == 0 and counted.satisfied else None
    done = counted.succeeded > 0 if completions is None else counted.succeeded >= completions
    return conditions.completions_reached(now) if done and active == 0 else None


def _wanted(timers: dict[str, Timer | None]) -> dict[str, Timer]:
    return {key: timer for key, timer in timers.items() if timer is not None}


def _fmt(delta: timedelta) -> str:
    return f"{max(0, round(delta.total_seconds()))}s"


def _deadline_timer(seconds: int | None, ends: datetime | None, now: datetime) -> Timer | None:
    """Sync again when activeDeadlineSeconds runs out."""
    if ends is None:
        return None
    summary = f"activeDeadlineSeconds {seconds}: fail the job in {_fmt(ends - now)}"
    return Timer(fires_at=ends, summary=summary)


def _backoff_timer(until: datetime | None, failures: int, now: datetime) -> Timer | None:
    """Sync again when the pod-failure back-off lets pods be created."""
    if until is None:
        return None
    summary = f"re-create pods in {_fmt(until - now)}: back-off after {failures} failures"
    return Timer(fires_at=until, summary=summary)


def _expectations_timer(pods: Mapping[str, PodRecord]) -> Timer | None:
    """Sync again when the oldest creation not yet observed is to be forgotten."""
    unobserved = [p.issued_at for p in pods.values() if not p.observed and p.issued_at]
    if not unobserved:
        return None
    return Timer(
        fires_at=min(unobserved) + census.EXPECTATIONS_TIMEOUT,
        summary="stop waiting for pods created but never observed",
    )
