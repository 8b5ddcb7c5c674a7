"""Whether a Job is finishing, and why: syncJob's terminal conditions, in its order. Pure.

The first that holds wins: a SuccessCriteriaMet or FailureTarget condition already in the
status (a finishing Job stays finishing), a FailJob rule, backoffLimit, activeDeadlineSeconds,
then for Indexed Jobs maxFailedIndexes or failed indexes, and successPolicy. Completions
reached is not decided here: it needs the pods left active once they are managed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from controllers.batchjob import conditions, indexes, policies
from controllers.batchjob.census import Census, IndexCount
from models.batchv1 import (
    BatchJob,
    BatchJobSpec,
    BatchJobStatus,
    ConditionType,
    JobCondition,
    Reason,
)


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    condition: JobCondition | None = None  # None: the Job keeps running
    deadline: datetime | None = None  # None: no activeDeadlineSeconds left to wait for


def decide(job: BatchJob, status: BatchJobStatus, counted: Census, now: datetime) -> Verdict:
    """The finishing condition (FailureTarget, SuccessCriteriaMet, or a Failed carried over
    from an earlier FailureTarget), and when activeDeadlineSeconds would fail a running Job."""
    found = _carried(status, now)
    if found is None:
        found = _failed(job, counted, now)
    if found is not None:
        return Verdict(condition=found)
    ends = _deadline(job.spec, status.start_time)
    if ends is not None and now >= ends:
        reason, text = Reason.DEADLINE_EXCEEDED, conditions.DEADLINE_MESSAGE
        return Verdict(condition=conditions.failure_target(reason, text, now))
    found = _indexed(job.spec, counted.indexes, now) if job.spec.indexed else None
    return Verdict(condition=found, deadline=ends)


def _carried(status: BatchJobStatus, now: datetime) -> JobCondition | None:
    """A Job that met its success criteria or became a failure target stays so."""
    found = status.condition(ConditionType.SUCCESS_CRITERIA_MET)
    if found is not None and found.status == "True":
        return found
    target = status.condition(ConditionType.FAILURE_TARGET)
    if target is not None and target.status == "True":
        reason, message = target.reason or "", target.message or ""
        return conditions.new(ConditionType.FAILED, reason, message, now)
    return None


def _failed(job: BatchJob, counted: Census, now: datetime) -> JobCondition | None:
    """A failed pod matched a FailJob rule, or failures went past backoffLimit."""
    message = fail_job_message(counted)
    if message is not None:
        return conditions.failure_target(Reason.POD_FAILURE_POLICY, message, now)
    if counted.failed > (job.spec.backoff_limit or 0) or past_backoff_limit_on_failure(
        job, counted
    ):
        reason, text = Reason.BACKOFF_LIMIT_EXCEEDED, conditions.BACKOFF_LIMIT_MESSAGE
        return conditions.failure_target(reason, text, now)
    return None


def fail_job_message(counted: Census) -> str | None:
    """getFailJobMessage: the first failed pod a FailJob rule matches; None: none does."""
    found = (j.policy.fail_job for j in counted.listed if j.failed)
    return next((message for message in found if message is not None), None)


def past_backoff_limit_on_failure(job: BatchJob, counted: Census) -> bool:
    """restartPolicy OnFailure: container restarts of pending and running pods count too."""
    template = job.spec.template.spec or {}
    if template.get("restartPolicy") != "OnFailure":
        return False
    pods = (j.pod for j in counted.listed)
    restarts = sum(p.restarts for p in pods if p.phase in ("Running", "Pending"))
    limit = job.spec.backoff_limit or 0
    return restarts > 0 if limit == 0 else restarts >= limit


def _deadline(spec: BatchJobSpec, start_time: datetime | None) -> datetime | None:
    """When activeDeadlineSeconds runs out; None: not set, not started, or suspended."""
    deadline = spec.active_deadline_seconds
    if deadline is None or start_time is None or spec.suspended:
        return None
    return start_time + timedelta(seconds=deadline)


def _indexed(spec: BatchJobSpec, counted: IndexCount, now: datetime) -> JobCondition | None:
    """Too many failed indexes, every index done with some failed, or successPolicy met."""
    completions = spec.completions or 0
    if counted.failed is not None:
        failed = indexes.total(counted.failed)
        if spec.max_failed_indexes is not None and failed > spec.max_failed_indexes:
            reason, text = Reason.MAX_FAILED_INDEXES_EXCEEDED, conditions.MAX_FAILED_INDEXES_MESSAGE
            return conditions.failure_target(reason, text, now)
        if failed > 0 and failed + indexes.total(counted.succeeded) >= completions:
            reason, text = Reason.FAILED_INDEXES, conditions.FAILED_INDEXES_MESSAGE
            return conditions.failure_target(reason, text, now)
    met = policies.success(spec.success_policy, completions, counted.succeeded)
    if met is None:
        return None
    return conditions.new(ConditionType.SUCCESS_CRITERIA_MET, Reason.SUCCESS_POLICY, met, now)
