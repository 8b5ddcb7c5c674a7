"""When each listed waiting job is expected to start, read from a session's closed books
(`scheduling.api.estimate` replays its queue forward; `framework.backlog` carries the answer).

Per queue: the room it may take now is the least of what its capability leaves and what the
cluster has idle; its running jobs hold what their placed pods request, since their first pod
started, and end at the latest when their pods' activeDeadlineSeconds run out; its record is
how long its completed pods ran (those the cluster still has, their PodGroup gone or not,
latest KEPT), so a queue whose finished jobs were deleted has no record until more finish. A
line job wants its minResources, else what its first minMember pods request.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence, Set
from datetime import datetime, timedelta

from models.keys import JobKey, QueueName
from scheduling.api.backlog import GRAIN
from scheduling.api.estimate import KEPT, NEVER, STEP, Running, RunRecord, Waiting, forecast
from scheduling.api.snapshot import ALLOCATED_CLASS, Finished, TaskInfo
from scheduling.api.vectors import EMPTY, Missing, Resources, total
from scheduling.framework.state import SessionState


def records(finished: Iterable[Finished]) -> dict[QueueName, RunRecord]:
    """Each queue's record: how long its completed pods ran, latest finished last (at most
    KEPT)."""
    runs: dict[QueueName, list[Finished]] = {}
    for f in finished:
        runs.setdefault(f.queue, []).append(f)
    return {
        queue: RunRecord(seconds=tuple(f.seconds for f in sorted(done, key=lambda f: f.at)[-KEPT:]))
        for queue, done in runs.items()
    }


def _idle(state: SessionState) -> Resources:
    return total(n.idle.max_dimension(EMPTY) for n in state.nodes.values())


def _room(state: SessionState, queue: QueueName, idle: Resources) -> Resources:
    capability = state.real_capability.get(queue)
    if capability is None:
        return idle
    left = capability.sub(state.allocated_of(queue)).max_dimension(EMPTY)
    return left.min_dimension(idle, Missing.INFINITY)


def _wants(state: SessionState, key: JobKey) -> Resources:
    job = state.jobs[key]
    if job.min_resources is not None:
        return job.min_resources
    tasks = sorted(state.tasks_of(key), key=lambda t: (-t.priority, t.key))
    return total(t.request for t in tasks[: max(job.min_member, 1)])


def _deadline(placed: Sequence[TaskInfo], now: datetime) -> float | None:
    """Seconds until every placed pod is past its activeDeadlineSeconds (the kubelet ends it
    then); None: a pod without one, or not started."""
    ends = [
        t.started + t.active_deadline
        for t in placed
        if t.started is not None and t.active_deadline is not None
    ]
    if not ends or len(ends) < len(placed):
        return None
    return max(0.0, (max(ends) - now).total_seconds())


def _running(state: SessionState, keys: Iterable[JobKey], now: datetime) -> list[Running]:
    """The jobs of `keys` with placed pods: what they hold, since their first pod started, and
    the deadline their pods' activeDeadlineSeconds set."""
    out = []
    for key in keys:
        placed = [t for t in state.tasks_of(key) if t.status in ALLOCATED_CLASS]
        if placed:
            since = min((t.started for t in placed if t.started is not None), default=now)
            ran = max(0.0, (now - since).total_seconds())
            out.append(Running(state.job_allocated[key], ran, _deadline(placed, now)))
    return out


def _grained(now: datetime, start_in: float) -> datetime:
    """`now + start_in` rounded up to a whole GRAIN of the epoch: the same expected end read
    one session later gives the same time, so the digest does not change with the clock."""
    at = (now + timedelta(seconds=start_in)).timestamp()
    return datetime.fromtimestamp(math.ceil(at / GRAIN) * GRAIN, tz=now.tzinfo)


def starts(
    state: SessionState,
    lines: Mapping[QueueName, Sequence[JobKey]],
    admitted: Set[JobKey],
    now: datetime,
) -> tuple[dict[JobKey, datetime | None], dict[QueueName, RunRecord]]:
    """Each listed job's expected start (None: not under its queue's current capacity, or no
    run recorded to expect one from), and each queue's record, for the basis. `admitted`: the
    listed jobs this session left Inqueue (allocate tried them and could not place them)."""
    idle = _idle(state)
    jobs_of: dict[QueueName, list[JobKey]] = {}
    for key, job in sorted(state.jobs.items()):
        if job.queue in lines:
            jobs_of.setdefault(job.queue, []).append(key)
    past = now.timestamp() % STEP
    when: dict[JobKey, datetime | None] = {}
    kept = records(f for f in state.snapshot.finished if f.queue in lines)
    for queue, keys in lines.items():
        mine = jobs_of.get(queue, [])
        runs = kept.setdefault(queue, RunRecord())
        line = [Waiting(key, _wants(state, key), key in admitted) for key in keys]
        room = _room(state, queue, idle)
        for started in forecast(room, _running(state, mine, now), line, runs, past):
            when[JobKey(started.key)] = (
                None if started.start_in == NEVER else _grained(now, started.start_in)
            )
    return when, kept
