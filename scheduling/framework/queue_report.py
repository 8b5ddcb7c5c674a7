"""A session's queue report: each queue's figures from the closed books, and the PodGroups
that reached a stage on their way to running (`scheduling.api.queue_report` holds the shapes).

The figures are what Volcano's proportion and capacity plugins put in their queue metrics,
read from the same books the session decided with, so a dashboard shows the numbers the
scheduler acted on: allocated as the session leaves it (placements and evictions included),
request as the session opened (as Volcano records it), inqueue as enqueue leaves it,
deserved and real capability from the queue plugin in use, the share the queue order uses.
Every queue of the snapshot is reported, with jobs or not, so its series exist while the queue
does; queues without jobs report what they hold (nothing) and what their spec says. Under the
capacity plugin with the hierarchy on, a parent queue reports its subtree, as Volcano's does.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api.queue_report import Milestone, QueueFigures, Stage
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import EPOCH, JobInfo, QueueInfo, Snapshot
from scheduling.api.vectors import EMPTY, Resources, total
from scheduling.framework.state import SessionState
from scheduling.plugins import proportion, queuerank
from scheduling.plugins.proportion import QueueDemand


def _quota(resources: Resources | None) -> Resources:
    """Pod slots are no queue figure (Volcano's queue metrics have none)."""
    r = resources or EMPTY
    return Resources.of(r.milli_cpu, r.memory, 0, r.scalars)


def phases_after(snapshot: Snapshot, result: SessionResult) -> dict[JobKey, PodGroupPhase]:
    """Each PodGroup's phase as the session leaves it: the snapshot's, then its updates."""
    phases = {job.key: job.phase for job in snapshot.jobs}
    return phases | {u.job: u.new for u in result.phase_updates}


def _subtree(state: SessionState, name: QueueName) -> tuple[QueueName, ...]:
    attr = state.capacity.attrs.get(name) if state.capacity is not None else None
    return attr.subtree if attr is not None else (name,)


def _deserved(state: SessionState, queue: QueueInfo) -> Resources:
    """The plugin's deserved; a queue it did not consider: capacity takes the spec's (as
    Volcano's capacity plugin reports it), proportion gives it nothing."""
    if queue.name in state.deserved:
        return _quota(state.deserved[queue.name])
    return _quota(queue.deserved) if state.capacity is not None else EMPTY


def _real_capability(state: SessionState, queue: QueueInfo, guaranteed: Resources) -> Resources:
    """The plugin's real capability; a queue without jobs: the unguaranteed cluster plus its
    own guarantee, within its capability (the same rule, over an empty demand)."""
    if queue.name in state.real_capability:
        return _quota(state.real_capability[queue.name])
    empty = QueueDemand(
        name=queue.name,
        weight=queue.weight,
        capability=queue.capability,
        guarantee=_quota(queue.guarantee),
    )
    return _quota(proportion.real_capability(state.cluster, guaranteed, empty))


def _share(
    state: SessionState, name: QueueName, allocated: Resources, deserved: Resources
) -> float:
    """The plugin's share; a queue it did not consider: the same rule over what is reported."""
    if name in state.deserved:
        return float(state.queue_share(name))
    if state.capacity is not None:
        return float(queuerank.queue_share(allocated, deserved))
    return float(proportion.queue_share(allocated, deserved))


def _overused(state: SessionState, name: QueueName, share: float) -> bool:
    """Proportion's overused vote for a queue with jobs; capacity's share > 1 at close (its
    OnSessionClose); a queue without jobs holds nothing, so it overuses nothing."""
    if state.capacity is not None:
        return share > 1
    return name in state.demands and state.queue_overused(name)


def figures(state: SessionState, result: SessionResult) -> tuple[QueueFigures, ...]:
    """Every queue of the session's snapshot, by name, as the session closes (a stand-in for
    a queue that does not exist is no queue: it has no figures)."""
    counts: dict[QueueName, Counter[PodGroupPhase]] = {}
    for key, phase in phases_after(state.snapshot, result).items():
        counts.setdefault(state.jobs[key].queue, Counter())[phase] += 1
    guaranteed = proportion.total_guarantee(state.snapshot.queues)
    report = []
    for queue in sorted(state.snapshot.queues, key=lambda q: q.name):
        if not queue.listed:
            continue
        members = _subtree(state, queue.name)
        allocated = _quota(total(state.allocated_of(q) for q in members))
        deserved = _deserved(state, queue)
        share = _share(state, queue.name, allocated, deserved)
        by_phase = counts.get(queue.name, Counter())
        report.append(
            QueueFigures(
                name=queue.name,
                weight=queue.weight,
                allocated=allocated,
                request=_quota(
                    total(state.demands[q].request for q in members if q in state.demands)
                ),
                inqueue=_quota(total(state.queue_inqueue.get(q, EMPTY) for q in members)),
                deserved=deserved,
                capability=_quota(queue.capability) if queue.capability is not None else None,
                real_capability=_real_capability(state, queue, guaranteed),
                share=share,
                overused=_overused(state, queue.name, share),
                pod_groups={phase: by_phase[phase] for phase in PodGroupPhase},
            )
        )
    return tuple(report)


def _milestone(job: JobInfo, stage: Stage) -> Milestone | None:
    """None for a PodGroup with no creation time: there is nothing to time it from."""
    if job.creation == EPOCH:
        return None
    return Milestone(
        uid=job.uid or job.key, job=job.key, queue=job.queue, stage=stage, created=job.creation
    )


def milestones(
    snapshot: Snapshot, result: SessionResult, written: Collection[JobKey]
) -> tuple[Milestone, ...]:
    """The PodGroups that reached a stage in this session, by stage then key.

    Inqueue and Placed count when the session decides them (a PodGroup placed now has its
    status write held until its pods are bound); Bound only when the session wrote Running,
    `written` being the PodGroups whose status it wrote.
    """
    jobs = {job.key: job for job in snapshot.jobs}
    reached: list[tuple[JobKey, Stage]] = []
    for update in result.phase_updates:
        if update.new is PodGroupPhase.INQUEUE:
            reached.append((update.job, Stage.INQUEUE))
        elif update.new is PodGroupPhase.RUNNING and update.job in written:
            reached.append((update.job, Stage.BOUND))
    reached.extend((key, Stage.PLACED) for key in _placed(result))
    found = (_milestone(jobs[key], stage) for key, stage in reached if key in jobs)
    return tuple(sorted((m for m in found if m is not None), key=lambda m: (m.stage, m.job)))


def _placed(result: SessionResult) -> Iterable[JobKey]:
    return dict.fromkeys(p.job for p in result.placements)
