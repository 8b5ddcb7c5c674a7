"""What a session reads of each job when it opens, kept from one session to the next.

A session opens with every job's books (what it holds, what its pending pods ask, what
enqueue reserved, whether the gang is valid and ready) and closes by asking readiness again.
Those are functions of the job and its tasks alone, and the snapshot's parse memo
(`scheduling.cache.tasks.ParseMemo`) hands back the very same objects for a PodGroup and pods
that did not change; so a `FactMemo` the scheduler keeps makes them again only for jobs whose
objects changed, and a session's cost follows what changed rather than the cluster's size.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.keys import JobKey
from scheduling.api import jobs
from scheduling.api.snapshot import JobInfo, TaskInfo, TaskStatus
from scheduling.api.vectors import Resources, total


@dataclass(frozen=True, slots=True)
class JobFacts:
    """One job's books over `tasks` as they were read (not as a session changes them)."""

    job: JobInfo
    tasks: tuple[TaskInfo, ...]
    allocated: Resources  # Allocated-class requests: what the job holds on nodes
    pending: Resources  # what its Pending tasks ask
    inqueue: Resources  # what enqueue reserved beyond what it holds (`jobs.inqueue`)
    elastic: Resources  # what it holds beyond minResources (`jobs.elastic`)
    invalid: tuple[str, str] | None  # the gang's JobValid verdict; None: valid
    ready: bool  # the gang's JobReady

    def holds(self, job: JobInfo, tasks: Sequence[TaskInfo]) -> bool:
        """Whether these are the very objects the facts were made from."""
        return (
            job is self.job
            and len(tasks) == len(self.tasks)
            and all(a is b for a, b in zip(tasks, self.tasks, strict=True))
        )


def job_facts(job: JobInfo, tasks: Sequence[TaskInfo]) -> JobFacts:
    return JobFacts(
        job=job,
        tasks=tuple(tasks),
        allocated=jobs.allocated(tasks),
        pending=total(t.request for t in tasks if t.status is TaskStatus.PENDING),
        inqueue=jobs.inqueue(job, tasks),
        elastic=jobs.elastic(job, tasks),
        invalid=jobs.validity(job, tasks),
        ready=jobs.is_ready(job, tasks),
    )


class FactMemo:
    """The facts the previous session made, by job; a session keeps only the ones it used, so
    it holds one cluster's worth. A job whose PodGroup or any pod changed gets new objects from
    the parse memo, hence new facts."""

    def __init__(self) -> None:
        self._last: dict[JobKey, JobFacts] = {}
        self._used: dict[JobKey, JobFacts] = {}

    def begin(self) -> None:
        """A session opens: what the last one used is kept."""
        self._last, self._used = self._used, {}

    def get(self, job: JobInfo, tasks: Sequence[TaskInfo]) -> JobFacts:
        found = self._last.get(job.key)
        if found is None or not found.holds(job, tasks):
            found = job_facts(job, tasks)
        self._used[job.key] = found
        return found
