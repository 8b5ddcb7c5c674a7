"""A session's backlog digest: per queue, the jobs not fully placed, in the order the scheduler
tries them, with why each waits (`scheduling.api.backlog` holds the shapes and the answers).

A job waits when its PodGroup ends the session Pending (not admitted by enqueue), or Inqueue
with tasks still without a node (pending or pipelined). Admitted jobs come first, as allocate
tries only them and enqueue admits the others later; within each group the job order decides
(priority, not-ready first, lowest dominant share, age: `ordering.job_order`), as read at
close, which is what the next session starts from. The reason is the PodGroup's Unschedulable
message, else why enqueue or allocate passed the job over.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import heapq

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api.backlog import Backlog, QueueBacklog
from scheduling.api.estimate import RunRecord
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import TaskStatus
from scheduling.framework import estimates, ordering
from scheduling.framework.state import SessionState

_UNPLACED = (TaskStatus.PENDING, TaskStatus.PIPELINED)


def _waits(state: SessionState, key: JobKey, phase: PodGroupPhase) -> bool:
    if phase is PodGroupPhase.PENDING:
        return True
    return phase is PodGroupPhase.INQUEUE and any(
        t.status in _UNPLACED for t in state.tasks_of(key)
    )


def digest(state: SessionState, result: SessionResult, listed: int) -> Backlog:
    """Each queue's first `listed` waiting jobs and the count of all, after the session."""
    phases = {job.key: job.phase for job in state.snapshot.jobs}
    phases |= {u.job: u.new for u in result.phase_updates}
    waiting: dict[QueueName, list[JobKey]] = {}
    for key in sorted(state.jobs):
        if _waits(state, key, phases[key]):
            waiting.setdefault(state.jobs[key].queue, []).append(key)
    why = result.why_not

    def position(key: JobKey) -> tuple[bool, ordering.JobOrder]:
        return phases[key] is PodGroupPhase.PENDING, ordering.job_order(state, key)

    def reason(key: JobKey) -> str:
        return why.get(key) or state.job_errors.get(key, "")

    lines = {
        queue: heapq.nsmallest(max(listed, 0), keys, key=position)
        for queue, keys in sorted(waiting.items())
    }
    now = state.snapshot.now
    admitted = {k for keys in lines.values() for k in keys if phases[k] is PodGroupPhase.INQUEUE}
    starts, records = estimates.starts(state, lines, admitted, now) if now is not None else ({}, {})
    queues = {}
    for queue, first in lines.items():
        rows = [(key, phases[key], reason(key)) for key in first]
        runs = records.get(queue) or RunRecord()
        queues[queue] = QueueBacklog.of(
            rows,
            len(waiting[queue]),
            [starts.get(key) for key in first],
            len(runs.seconds),
            runs.quantile(0.5),
        )
    return Backlog(queues=queues)
