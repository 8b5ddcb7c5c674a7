"""The flow's status as Volcano's getAllJobStatus computes it, from the Jobs labelled with the
flow. Pure: `now` is the workflow's clock.

Each Job is listed under its phase (Completing and Terminating under none, any phase Volcano's
list does not know, an empty one too, under unKnowJobs), with a condition by name; the status
list keeps every Job ever listed (also after it is gone), its running history gaining an entry
whenever the phase it last recorded differs. Lists are in name order (Volcano's follow its
cache, in no order).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

from models import vcjob
from models.duration import parse_duration
from models.jobflow import Condition, FlowPhase, FlowState, JobFlowStatus, JobRunningHistory
from models.jobflow import JobStatus as FlowJobStatus
from models.signals import jobflow as jobflow_signals

P = vcjob.JobPhase
_LISTED: Final = frozenset(
    {P.PENDING, P.RUNNING, P.COMPLETING, P.COMPLETED, P.TERMINATING, P.TERMINATED, P.FAILED}
)


def _names(jobs: Mapping[str, jobflow_signals.FlowJob], phase: vcjob.JobPhase) -> list[str] | None:
    return sorted(n for n, j in jobs.items() if j.phase == phase) or None


def _histories(
    before: list[FlowJobStatus], job: jobflow_signals.FlowJob, now: datetime
) -> list[JobRunningHistory] | None:
    """getRunningHistories: the recorded histories of the Job, one entry more when its phase
    moved; a first entry once it has a phase."""
    recorded = next(
        (s.running_histories for s in before if s.name == job.name and s.running_histories),
        None,
    )
    if recorded is None:
        if not job.phase:
            return None
        return [JobRunningHistory(start_timestamp=now, state=job.phase)]
    last = recorded[-1]
    if last.state == job.phase:
        return recorded
    closed = last.model_copy(update={"end_timestamp": now})
    return [*recorded[:-1], closed, JobRunningHistory(start_timestamp=now, state=job.phase)]


def _end(job: jobflow_signals.FlowJob) -> datetime | None:
    if job.running_duration is None or job.created_at is None:
        return None
    return job.created_at + parse_duration(job.running_duration)


def _entry(
    before: list[FlowJobStatus], job: jobflow_signals.FlowJob, now: datetime
) -> FlowJobStatus:
    return FlowJobStatus(
        name=job.name,
        state=job.phase or None,
        start_timestamp=job.created_at,
        end_timestamp=_end(job),
        restart_count=job.retry_count or None,
        running_histories=_histories(before, job, now),
    )


def _condition(job: jobflow_signals.FlowJob) -> Condition:
    return Condition(
        phase=job.phase or None,
        create_time=job.created_at,
        running_duration=job.running_duration,
        task_status_count=job.task_status_count or None,
    )


def compute(
    before: JobFlowStatus, jobs: Mapping[str, jobflow_signals.FlowJob], now: datetime
) -> JobFlowStatus:
    """The status from the live Jobs; the phase is carried over (the state machine moves it)."""
    ordered = [jobs[n] for n in sorted(jobs)]
    listed = list(before.job_status_list or ())
    for job in ordered:
        entry = _entry(before.job_status_list or [], job, now)
        at = [i for i, s in enumerate(listed) if s.name == job.name]
        for i in at:
            listed[i] = entry
        if not at:
            listed.append(entry)
    unknown = sorted(j.name for j in ordered if j.phase not in _LISTED) or None
    return JobFlowStatus(
        pending_jobs=_names(jobs, P.PENDING),
        running_jobs=_names(jobs, P.RUNNING),
        failed_jobs=_names(jobs, P.FAILED),
        completed_jobs=_names(jobs, P.COMPLETED),
        terminated_jobs=_names(jobs, P.TERMINATED),
        un_know_jobs=unknown,
        job_status_list=listed or None,
        conditions={j.name: _condition(j) for j in ordered} or None,
        state=before.state,
    )


def with_phase(status: JobFlowStatus, phase: FlowPhase) -> JobFlowStatus:
    return status.model_copy(update={"state": FlowState(phase=phase)})
