"""syncJob of the built-in job controller, pure (its counting half is `tracking`).

One call looks at the Job and the pod table and returns the next state and effects: decide a
terminal condition (podFailurePolicy FailJob → backoffLimit → activeDeadlineSeconds → failed
indexes → successPolicy), otherwise manage the pods and check completions, then count
finished pods through `status.uncountedTerminatedPods` and the job-tracking finalizer:

1. finished pods that still carry the finalizer are added to uncountedTerminatedPods and the
   status is written (with the interim FailureTarget / SuccessCriteriaMet condition);
2. their finalizers are removed (an activity; its result comes back as an input);
3. the next sync moves them from uncountedTerminatedPods to the counters, and once nothing is
   uncounted and no pod is terminating, writes Failed or Complete.

The controller does 1-3 in one sync with two status writes; here step 3 is the next sync, so
every decision is made before the I/O it depends on, and the same writes reach the apiserver.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from controllers.batchjob import (
    accounting,
    backoff,
    conditions,
    indexes,
    manage,
    policies,
    tracking,
)
from controllers.batchjob import effects as fx
from controllers.batchjob.state import BatchJobRecord, PodRecord
from models.batchv1 import BatchJob, BatchJobStatus, ConditionType, JobCondition, Reason
from models.batchv1 import UncountedTerminatedPods as Uncounted

EXPECTATIONS_TIMEOUT: Final = timedelta(minutes=5)
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
    effects: tuple[fx.AnyEffect, ...] = ()
    timers: dict[str, Timer] = Field(default_factory=dict)  # the sync timers wanted now


def _fmt(delta: timedelta) -> str:
    return f"{max(0, round(delta.total_seconds()))}s"


def _expired(pods: dict[str, PodRecord], now: datetime) -> dict[str, PodRecord]:
    """Drop creations never observed within the expectations timeout (ExpectationsTimeout)."""
    return {
        n: p
        for n, p in pods.items()
        if p.observed or p.issued_at is None or now - p.issued_at < EXPECTATIONS_TIMEOUT
    }


def _terminal(
    job: BatchJob,
    status: BatchJobStatus,
    pods: Sequence[PodRecord],
    failed: int,
    now: datetime,
) -> tuple[JobCondition | None, Timer | None]:
    """The pre-existing or newly decided finishing condition, and the deadline re-check."""
    found = status.condition(ConditionType.SUCCESS_CRITERIA_MET)
    if found is not None and found.status == "True":
        return found, None
    target = status.condition(ConditionType.FAILURE_TARGET)
    if target is not None and target.status == "True":
        failed_cond = conditions.new(
            ConditionType.FAILED, target.reason or "", target.message or "", now
        )
        return failed_cond, None
    message = accounting.fail_job_message(job, pods)
    if message is not None:
        return conditions.failure_target(Reason.POD_FAILURE_POLICY, message, now), None
    spec = job.spec
    if failed > (spec.backoff_limit or 0) or accounting.past_backoff_limit_on_failure(job, pods):
        reason, text = Reason.BACKOFF_LIMIT_EXCEEDED, conditions.BACKOFF_LIMIT_MESSAGE
        return conditions.failure_target(reason, text, now), None
    deadline = spec.active_deadline_seconds
    if deadline is None or status.start_time is None or spec.suspended:
        return None, None
    ends = status.start_time + timedelta(seconds=deadline)
    if now >= ends:
        text = conditions.DEADLINE_MESSAGE
        return conditions.failure_target(Reason.DEADLINE_EXCEEDED, text, now), None
    summary = f"activeDeadlineSeconds {deadline}: fail the job in {_fmt(ends - now)}"
    return None, Timer(fires_at=ends, summary=summary)


def sync(state: BatchJobRecord, now: datetime) -> Plan:
    job = state.job
    if job is None or state.deleted or state.status.finished:
        return Plan(state=state)
    now = conditions.seconds(now)
    spec = job.spec
    pods = _expired(state.pods, now)
    satisfied = all(p.observed for p in pods.values())
    status = state.status
    uncounted = status.uncounted_terminated_pods or Uncounted()
    unc_succeeded = list(uncounted.succeeded or [])
    unc_failed = list(uncounted.failed or [])
    skip = {*unc_succeeded, *unc_failed, *state.removing}
    listed = [p for p in pods.values() if p.observed]
    active_pods = [p for p in pods.values() if p.active]
    active = len(active_pods)
    ready = sum(1 for p in active_pods if p.ready)
    terminating = sum(1 for p in listed if p.terminating)
    new_succeeded = [p for p in accounting.tracked(listed, job, skip) if p.phase == "Succeeded"]
    new_failed = [p for p in accounting.tracked(listed, job, skip) if accounting.is_failed(p, job)]
    counted_failures = [p for p in new_failed if accounting.policy_match(job, p).counts]
    succeeded = (status.succeeded or 0) + len(new_succeeded) + len(unc_succeeded)
    failed = (status.failed or 0) + len(counted_failures) + len(unc_failed)
    if status.start_time is None and not spec.suspended:
        status = status.model_copy(update={"start_time": now})
    record = backoff.record(state.backoff, new_succeeded, new_failed)
    timers: dict[str, Timer] = {}
    finishing, deadline = _terminal(job, status, listed, failed, now)
    if deadline is not None:
        timers[DEADLINE_TIMER] = deadline
    prev_indexes: indexes.Intervals = ()
    succeeded_ix: indexes.Intervals = ()
    failed_ix: indexes.Intervals | None = None
    delayed: dict[int, PodRecord] = {}
    if spec.indexed:
        completions = spec.completions or 0
        prev_indexes, succeeded_ix = accounting.succeeded_indexes(
            job, listed, status.completed_indexes
        )
        succeeded = indexes.total(succeeded_ix)
        if spec.backoff_limit_per_index is not None:
            failed_ix = accounting.failed_indexes(job, listed, status.failed_indexes)
            if finishing is None:
                total_failed = indexes.total(failed_ix)
                if spec.max_failed_indexes is not None and total_failed > spec.max_failed_indexes:
                    finishing = conditions.failure_target(
                        Reason.MAX_FAILED_INDEXES_EXCEEDED,
                        conditions.MAX_FAILED_INDEXES_MESSAGE,
                        now,
                    )
                elif total_failed > 0 and total_failed + indexes.total(succeeded_ix) >= completions:
                    finishing = conditions.failure_target(
                        Reason.FAILED_INDEXES, conditions.FAILED_INDEXES_MESSAGE, now
                    )
            delayed = accounting.delayed_deletion_per_index(
                job, listed, skip, succeeded_ix, failed_ix
            )
        if finishing is None:
            met = policies.success(spec.success_policy, completions, succeeded_ix)
            if met is not None:
                finishing = conditions.new(
                    ConditionType.SUCCESS_CRITERIA_MET, Reason.SUCCESS_POLICY, met, now
                )
    out: list[fx.AnyEffect] = []
    events: list[fx.RecordEvent] = []
    pod_seq = state.pod_seq
    if finishing is not None:
        doomed = [p for p in active_pods if p.observed]
        if doomed:
            for p in doomed:
                pods[p.name] = p.model_copy(update={"deleting": True})
            out.append(
                fx.DeletePods(
                    names=[p.name for p in doomed],
                    keep_finalizers=True,
                    why=f"job finishing: {finishing.reason}",
                )
            )
        if len(doomed) != active or not satisfied:
            finishing = None  # pods not observed yet may still turn up
        active -= len(doomed)
        terminating += len(doomed)
        ready -= sum(1 for p in doomed if p.ready)
    else:
        managed: manage.Managed | None = None
        if satisfied and job.metadata.deletion_timestamp is None:
            managed = manage.manage(
                manage.Context(
                    job=job,
                    pods=pods,
                    succeeded=succeeded,
                    succeeded_indexes=succeeded_ix,
                    failed_indexes=failed_ix,
                    delayed=delayed,
                    terminating=terminating,
                    ready=ready,
                    backoff=record,
                    pod_seq=pod_seq,
                    now=now,
                    hold=RETRY_TIMER in state.timers,
                )
            )
            active, ready, terminating = managed.active, managed.ready, managed.terminating
            pods, pod_seq = managed.pods, managed.pod_seq
            out += managed.effects
            if managed.wait_until is not None:
                wait = managed.wait_until - now
                timers[BACKOFF_TIMER] = Timer(
                    fires_at=managed.wait_until,
                    summary=f"re-create pods in {_fmt(wait)}: back-off after "
                    f"{record.failures} failures",
                )
        if spec.completions is None:
            complete = succeeded > 0 and active == 0
        else:
            complete = succeeded >= spec.completions and active == 0
        if complete:
            finishing = conditions.completions_reached(now)
        elif managed is not None:
            status, changed = _suspension(status, spec.suspended, now)
            if changed is not None:
                events.append(changed)
    unobserved = [p.issued_at for p in state.pods.values() if not p.observed and p.issued_at]
    if unobserved:
        timers[EXPECTATIONS_TIMER] = Timer(
            fires_at=min(unobserved) + EXPECTATIONS_TIMEOUT,
            summary="stop waiting for pods created but never observed",
        )
    status = status.model_copy(
        update={"active": active, "ready": ready, "terminating": terminating}
    )
    tracked = tracking.track(
        state.model_copy(update={"pods": pods}),
        listed,
        job,
        status,
        finishing,
        prev_indexes,
        succeeded_ix,
        failed_ix,
        delayed,
        now,
    )
    state = tracked.state.model_copy(update={"backoff": record, "pod_seq": pod_seq})
    return Plan(state=state, effects=(*out, *tracked.effects, *events), timers=timers)


def _suspension(
    status: BatchJobStatus, suspended: bool, now: datetime
) -> tuple[BatchJobStatus, fx.RecordEvent | None]:
    """Suspended=True ("JobSuspended", startTime cleared) or, on resume, Suspended=False
    ("JobResumed", startTime reset to now: activeDeadlineSeconds counts from the resume)."""
    current = list(status.conditions or [])
    if suspended:
        found, changed = conditions.ensure(
            current, ConditionType.SUSPENDED, "True", Reason.JOB_SUSPENDED, "Job suspended", now
        )
        if not changed:
            return status, None
        update = {"conditions": found, "start_time": None}
        return status.model_copy(update=update), fx.RecordEvent(
            reason="Suspended", message="Job suspended"
        )
    found, changed = conditions.ensure(
        current, ConditionType.SUSPENDED, "False", Reason.JOB_RESUMED, "Job resumed", now
    )
    if not changed:
        return status, None
    return status.model_copy(update={"conditions": found, "start_time": now}), fx.RecordEvent(
        reason="Resumed", message="Job resumed"
    )
