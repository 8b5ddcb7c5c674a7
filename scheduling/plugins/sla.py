"""Volcano's sla plugin: a job waits at most its `sla-waiting-time`, then goes first.

As `pkg/scheduler/plugins/sla/sla.go` at HEAD decides it. A job's waiting time is its own
(`JobInfo.sla_waiting`, from its PodGroup's annotations), else the plugin's `sla-waiting-time`
argument; a job with neither has no limit. The job order puts jobs with a limit first, earliest
deadline (creation plus waiting time) first. At enqueue and pipelining, a job past its deadline is
Permitted (a Permit in a tier decides that tier, so with sla in an earlier tier than overcommit and
proportion the job is enqueued whatever they say, and its minResources are then reserved against the
jobs behind it); a job within it, or without a limit, abstains. That is what keeps a large gang from
being starved forever by a stream of small jobs.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from scheduling.api.snapshot import EPOCH, JobInfo
from scheduling.api.votes import Vote

SlaOrder = tuple[int, datetime]


def _limit(job: JobInfo, default: timedelta | None) -> timedelta | None:
    return job.sla_waiting or default


def order(job: JobInfo, default: timedelta | None) -> SlaOrder:
    """jobOrderFn: jobs with a limit first, by deadline; the rest tie."""
    limit = _limit(job, default)
    return (0, job.creation + limit) if limit is not None else (1, EPOCH)


def vote(job: JobInfo, default: timedelta | None, now: datetime | None) -> Vote:
    """permitableFn: Permit once the job has waited its limit; else Abstain. `now` None (a
    session without a clock): nobody has waited."""
    limit = _limit(job, default)
    if limit is None or now is None or now - job.creation < limit:
        return Vote.ABSTAIN
    return Vote.PERMIT
