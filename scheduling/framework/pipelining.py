"""Whether a job placed in part keeps what it holds: Volcano's JobPipelined vote.

Allocate keeps a job that is not ready yet when the pipelining vote says yes, so its tasks
hold their nodes in the session and wait for the room being released; otherwise its trial is
discarded. The vote is walked tier by tier (`tiers.decide`): gang permits a job whose tasks,
counting pipelined ones, reach its minMember (else rejects), sla permits a job past its waiting
time. Volcano's allocate asks `SubJobPipelined` (gang alone) for a job placed anywhere and
`JobPipelined` (gang and sla) for a job within a network topology, and preempt and reclaim ask
`JobPipelined`; `point` says which.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduling.api import jobs
from scheduling.api.snapshot import JobInfo
from scheduling.api.votes import Vote
from scheduling.framework import tiers
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point
from scheduling.plugins import sla


def pipelined(state: SessionState, job: JobInfo, point: Point = Point.JOB_PIPELINED) -> bool:
    config = state.config

    def gang() -> Vote:
        return Vote.PERMIT if jobs.is_pipelined(job, state.tasks_of(job.key)) else Vote.REJECT

    votes: dict[str, Callable[[], Vote]] = {
        "gang": gang,
        "sla": lambda: sla.vote(job, config.sla_waiting, state.snapshot.now),
    }
    return tiers.decide(config.tiers, point, votes)[0]
