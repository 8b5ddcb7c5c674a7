"""Where each waiting job stands in its queue: the digest a session leaves, and the answers
read from it ("which jobs wait in queue q, in what order, why", "where is job ns/j").

Users ask why their job is pending and where it is in the queue (Kueue answers with its
visibility API). The session already knows: the jobs (PodGroups) not fully placed, the order it
tries them in and why each waits. It hands that over as a `Backlog`; the SchedulerWorkflow keeps
the last one and answers its queries from it, so no one lists the apiserver to find out.

The digest is compact because it travels in every session report that changes it and through
continue-as-new: a queue lists its first jobs only (with the count of all), each job is a row
(a JSON array, no field names), and a reason many jobs share is written once per queue.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Final, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from models.keys import JobKey, QueueName, job_key
from models.scheduling import PodGroupPhase

DEFAULT_LISTED: Final = 100  # jobs each queue lists; the rest are only counted
GRAIN: Final = 10  # seconds: expected starts are whole multiples of it (a digest that moves less)
NO_START: Final = -1  # in `QueueBacklog.starts`: no expected start


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Waiting(NamedTuple):
    """One job in a queue's line: a row, so the digest repeats no field names."""

    namespace: str
    name: str  # its Job's (the PodGroup's owner's) name, else the PodGroup's own
    phase: PodGroupPhase  # Pending: not admitted yet; Inqueue: admitted, pods wait for nodes
    reason: int  # index into the queue's `reasons`


class QueueBacklog(_Frozen):
    """One queue's waiting jobs: the first ones in position order, and how many in all."""

    total: int  # jobs waiting in the queue, listed or not
    reasons: tuple[str, ...] = ()  # each distinct reason once, in order of first use
    jobs: tuple[Waiting, ...] = ()  # first in line first
    # When each listed job is expected to start (`framework.estimates`), beside `jobs`: GRAIN
    # seconds after `since` (epoch seconds), NO_START for none (not under the queue's current
    # capacity, or no run recorded to expect one from); () when no job of the line has one.
    since: int = 0
    starts: tuple[int, ...] = ()
    runs: int = 0  # the queue's runs the estimates rest on
    median_s: float | None = None  # their median, seconds; None: no run recorded

    @classmethod
    def of(
        cls,
        rows: Iterable[tuple[JobKey, PodGroupPhase, str]],
        total: int,
        starts: Sequence[datetime | None] = (),
        runs: int = 0,
        median_s: float | None = None,
    ) -> QueueBacklog:
        """The queue's line from (PodGroup key, phase, reason) in position order, with each
        one's expected start (none given: none known) and the record they rest on."""
        reasons: dict[str, int] = {}
        jobs = []
        for key, phase, reason in rows:
            namespace, _, name = key.partition("/")
            index = reasons.setdefault(reason, len(reasons))
            jobs.append(Waiting(namespace, name, phase, index))
        grains = [None if s is None else math.ceil(s.timestamp() / GRAIN) for s in starts]
        grains += [None] * (len(jobs) - len(grains))
        since = min((g for g in grains if g is not None), default=None)
        return cls(
            total=total,
            reasons=tuple(reasons),
            jobs=tuple(jobs),
            since=0 if since is None else since * GRAIN,
            starts=()
            if since is None
            else tuple(NO_START if g is None else g - since for g in grains),
            runs=runs,
            median_s=median_s,
        )

    def start(self, index: int) -> datetime | None:
        """The `index`-th listed job's expected start; None: none."""
        if not 0 <= index < len(self.starts) or self.starts[index] == NO_START:
            return None
        return datetime.fromtimestamp(self.since + self.starts[index] * GRAIN, UTC)


class Backlog(_Frozen):
    """Every queue's line after one session; a queue nobody waits in is absent."""

    queues: dict[QueueName, QueueBacklog] = Field(default_factory=dict)  # by queue name


class PendingJob(_Frozen):
    position: int  # 1: the first the scheduler tries
    namespace: str
    name: str
    phase: PodGroupPhase
    reason: str  # why it waits: the PodGroup's Unschedulable message ("": none given)
    estimated_start: datetime | None = None  # None: no estimate (`Waiting.start`)


class PendingJobs(_Frozen):
    """The SchedulerWorkflow's `pending_jobs` query: one queue's line."""

    queue: str
    total: int  # jobs waiting in the queue; more than `jobs` when the list is capped
    jobs: tuple[PendingJob, ...] = ()
    runs: int = 0  # the queue's runs the estimates rest on
    median_s: float | None = None  # their median, seconds


class JobStanding(_Frozen):
    """The SchedulerWorkflow's `job_standing` query: where one waiting job stands."""

    namespace: str
    name: str
    queue: str
    position: int  # 1: the first the scheduler tries
    total: int  # jobs waiting in the queue
    phase: PodGroupPhase
    reason: str
    estimated_start: datetime | None = None  # None: no estimate (`Waiting.start`)
    runs: int = 0  # the queue's runs the estimate rests on
    median_s: float | None = None  # their median, seconds


def _pending(line: QueueBacklog, position: int, row: Waiting) -> PendingJob:
    """`row`, the `position`-th (from 1) of `line`, as the queries answer it."""
    return PendingJob(
        position=position,
        namespace=row.namespace,
        name=row.name,
        phase=row.phase,
        reason=line.reasons[row.reason] if 0 <= row.reason < len(line.reasons) else "",
        estimated_start=line.start(position - 1),
    )


def pending_jobs(backlog: Backlog, queue: str) -> PendingJobs:
    """The queue's listed jobs in position order; an unknown queue has none."""
    line = backlog.queues.get(QueueName(queue))
    if line is None:
        return PendingJobs(queue=queue, total=0)
    jobs = tuple(_pending(line, i, row) for i, row in enumerate(line.jobs, start=1))
    return PendingJobs(
        queue=queue, total=line.total, jobs=jobs, runs=line.runs, median_s=line.median_s
    )


def job_standing(backlog: Backlog, namespace: str, name: str) -> JobStanding | None:
    """Where job `namespace/name` waits; None: it waits nowhere, or beyond the listed jobs."""
    for queue, line in sorted(backlog.queues.items()):
        for position, row in enumerate(line.jobs, start=1):
            if row.namespace == namespace and row.name == name:
                found = _pending(line, position, row)
                return JobStanding(
                    namespace=namespace,
                    name=name,
                    queue=queue,
                    position=position,
                    total=line.total,
                    phase=found.phase,
                    reason=found.reason,
                    estimated_start=found.estimated_start,
                    runs=line.runs,
                    median_s=line.median_s,
                )
    return None


def named(backlog: Backlog, names: Mapping[JobKey, str]) -> Backlog:
    """The digest with each PodGroup named as users know it (`names`: PodGroup key → its Job's
    name); a PodGroup without an entry keeps its own name."""
    queues = {
        queue: line.model_copy(
            update={
                "jobs": tuple(
                    row._replace(name=names.get(job_key(row.namespace, row.name), row.name))
                    for row in line.jobs
                )
            }
        )
        for queue, line in backlog.queues.items()
    }
    return Backlog(queues=queues)
