"""When will a waiting job start: an estimate, and what it rests on (Issue 38).

Kueue users ask for it (kueue#13159) and no batch scheduler answers it. The scheduler holds
what an answer needs at the end of a session: each queue's line in order, what the queue may
still take now, the jobs running in it (what each holds, for how long so far) and how long the
queue's jobs have run (`RunRecord`, a rolling record the scheduler keeps).

The estimate replays the queue forward in time, as allocate would see it session after session:
a running job is expected to end when the record says jobs of the queue end (its median run;
past that, its 90th percentile; past that, any moment), or at its deadline if sooner; what it
held comes back; the line's jobs start in order, each as soon as its gang fits in what the queue
may take, a job that does not fit being passed over as allocate passes it (the ones behind may
go first). A started job holds its gang for the record's median. Node fragmentation, other
queues' reclaim and jobs arriving later are not modelled: the basis says so.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Final, NamedTuple

from pydantic import BaseModel, ConfigDict

from scheduling.api.vectors import Resources

KEPT: Final = 100  # runs a queue's record keeps, latest last
# Ends are replayed in steps of this many seconds: thousands of running one-pod jobs end in a few
# hundred steps, and the line is tried once per step, not once per job.
STEP: Final = 10.0
NEVER: Final = math.inf  # a gang that cannot start under the queue's current capacity


class RunRecord(BaseModel):
    """How long a queue's latest jobs ran, in seconds, latest last (at most KEPT)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seconds: tuple[float, ...] = ()

    def add(self, seconds: float) -> RunRecord:
        return RunRecord(seconds=(*self.seconds, max(0.0, seconds))[-KEPT:])

    def quantile(self, q: float) -> float | None:
        """The q-quantile of the runs (nearest rank); None: no run recorded."""
        if not self.seconds:
            return None
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    def remaining(self, ran: float) -> float | None:
        """How much longer a job that has run `ran` seconds is expected to run: to the median,
        past it to the 90th percentile, past that to the longest run, past all 0 (any moment).
        None: no run recorded, nothing to expect."""
        marks = [self.quantile(0.5), self.quantile(0.9), self.quantile(1.0)]
        for mark in marks:
            if mark is not None and mark > ran:
                return mark - ran
        return None if marks[0] is None else 0.0


class Running(NamedTuple):
    """A job of the queue that runs now."""

    holds: Resources  # what its pods request
    ran: float  # seconds since it started
    deadline: float | None = None  # seconds until a deadline ends it (activeDeadline); None


class Waiting(NamedTuple):
    """A job in the queue's line, first in line first."""

    key: str  # namespace/name
    wants: Resources  # what its gang needs to start (minResources, else its minimum tasks)
    # Admitted and left unplaced by this session although the room holds it: what the room
    # does not show (which nodes fit it, its predicates) holds it, so it is expected only
    # once something running ends, not now.
    held: bool = False


class Started(NamedTuple):
    """One waiting job's estimate."""

    key: str
    start_in: float  # seconds from now; 0: it fits now; NEVER: not under current capacity
    ends_awaited: int  # running or earlier-started jobs expected to end before it starts


def _end(job: Running, record: RunRecord, past: float) -> float:
    expected = record.remaining(job.ran)
    ends = [t for t in (expected, job.deadline) if t is not None]
    return _stepped(min(ends), past) if ends else NEVER


def _stepped(seconds: float, past: float) -> float:
    """`seconds` from now rounded up to the next whole STEP of the epoch (now is `past` seconds
    into one): the same moment read a session later falls on the same step."""
    return math.ceil((seconds + past) / STEP) * STEP - past


def forecast(
    room: Resources,
    running: Sequence[Running],
    line: Sequence[Waiting],
    record: RunRecord,
    past: float = 0.0,
) -> list[Started]:
    """When each job of `line` starts, given the `room` the queue may take now (the least of
    what its capability leaves and what the cluster has idle), its `running` jobs, and its
    `record`. Jobs are tried in line order at every step in which something ends; `past` is
    how far now is into the epoch's current STEP."""
    typical = record.quantile(0.5)
    ends: list[tuple[float, int, Resources]] = []  # (when, tiebreak, what comes back)
    for i, run in enumerate(running):
        heapq.heappush(ends, (_end(run, record, past), i, run.holds))
    free, now, ended = room, 0.0, 0
    waiting = list(line)
    started: dict[str, Started] = {}
    tiebreak = len(running)
    while waiting:
        still: list[Waiting] = []
        for job in waiting:
            if job.wants.less_equal(free) and not (job.held and now == 0.0):
                free = free.sub(job.wants)
                started[job.key] = Started(job.key, now, ended)
                until = NEVER if typical is None else _stepped(now + typical, past)
                heapq.heappush(ends, (until, tiebreak, job.wants))
                tiebreak += 1
            else:
                still.append(job)
        waiting = still
        if not waiting or not ends or ends[0][0] == NEVER:
            break
        now, _, back = heapq.heappop(ends)
        free, ended = free.add(back), ended + 1
        while ends and ends[0][0] == now:  # everything ending at the same moment comes back
            free, ended = free.add(heapq.heappop(ends)[2]), ended + 1
    return [started.get(job.key) or Started(job.key, NEVER, 0) for job in line]
