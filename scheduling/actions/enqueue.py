"""The enqueue action (with the overcommit, proportion or capacity, sla and resourcequota votes).

Admits Pending PodGroups (Pending -> Inqueue) while the cluster, overcommitted by the factor, and
the job's queue both have room for its minResources; a PodGroup without minResources is always
admitted, and one past its sla waiting time is admitted when sla's tier comes first. Admission is
what lets the job controller create the pods, so this gate is what keeps a queue from flooding the
cluster with pods that can never run. Queues are served lowest share first and jobs in job order; a
refused job waits for the next session.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api.vectors import EMPTY, Resources, total
from scheduling.api.votes import Vote
from scheduling.framework import ordering, tiers
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point
from scheduling.plugins import sla

CLUSTER_OVERUSED: Final = "resource in cluster is overused"
QUOTA_INSUFFICIENT: Final = "queue resource quota insufficient"


def _refusal(
    state: SessionState, config: SessionConfig, key: JobKey, room: Resources, reserved: Resources
) -> str | None:
    """Why the job may not be admitted now (the rejecting plugin's reason); None: admit it.

    The JobEnqueueable votes walked tier by tier (`tiers.decide`): overcommit (the cluster's
    `room`, times the factor, minus what Inqueue jobs reserve), proportion or capacity (the
    queue's share), sla (Permit once the job has waited its limit), resourcequota (its
    namespace's ResourceQuotas). A job without minResources is permitted by all but sla."""
    job = state.jobs[key]
    if (blocked := state.queue_blocked(job.queue)) is not None:
        return blocked  # an unusable queue tree admits nothing, minResources or not
    wanted = job.min_resources

    def overcommit() -> Vote:
        fits = wanted is None or reserved.add(wanted).less_equal_with_dimension(room, wanted)
        return Vote.PERMIT if fits else Vote.REJECT

    def queue_share() -> Vote:
        fits = wanted is None or state.queue_enqueueable(job.queue, wanted)
        return Vote.PERMIT if fits else Vote.REJECT

    quota = state.quotas.refusal(job) if state.quotas is not None else None
    votes: dict[str, Callable[[], Vote]] = {
        "overcommit": overcommit,
        "proportion": queue_share,
        "capacity": queue_share,
        "sla": lambda: sla.vote(job, config.sla_waiting, state.snapshot.now),
        "resourcequota": lambda: Vote.PERMIT if quota is None else Vote.REJECT,
    }
    if (asked := state.extender) is not None:  # jobEnqueueable over HTTP (`plugins.extender`)
        votes["extender"] = lambda: asked.enqueueable(job, state.tasks_of(key))
    admitted, by = tiers.decide(config.tiers, Point.JOB_ENQUEUEABLE, votes)
    if admitted:
        return None
    if by == "resourcequota" and quota is not None:
        return quota
    if by == "extender":
        return "extender rejected the job at enqueue (jobEnqueueable)"
    return CLUSTER_OVERUSED if by == "overcommit" else f"{QUOTA_INSUFFICIENT}: queue {job.queue}"


def _held_back(state: SessionState, queue: QueueName) -> Resources:
    """A queue's reservations (its Inqueue jobs' minResources) as other queues' jobs see them:
    none while, under proportion, the queue holds its deserved share in some dimension.

    Such a queue's Inqueue jobs cannot be allocated until it falls below its deserved share,
    which only other queues' jobs can bring about (by reclaim, once admitted). Counted, its
    reservations kept those jobs out for good: the queue that filled the cluster first had its
    evicted jobs re-admitted on a share tie, and the starving queue could neither be admitted
    nor reclaim (issue 37). Its own jobs still see them whole, so it never floods the cluster;
    Volcano counts every reservation for everyone."""
    if state.capacity is None and state.queue_share(queue) >= 1:
        return EMPTY
    return state.queue_inqueue.get(queue, EMPTY)


def enqueue(state: SessionState, config: SessionConfig) -> None:
    """Pending -> Inqueue for every PodGroup the votes permit, recording why for the rest."""
    cluster_used = total(node.used for node in state.snapshot.nodes)
    room = state.cluster.multiply(config.overcommit_factor).sub(cluster_used)
    held_back = {queue: _held_back(state, queue) for queue in state.queue_inqueue}
    others = total(held_back.values())
    pending: dict[QueueName, list[JobKey]] = {}
    for key, job in sorted(state.jobs.items()):
        if job.is_pending:
            pending.setdefault(job.queue, []).append(key)
    waiting = ordering.job_queues(state, pending)
    while waiting:
        queue = min(waiting, key=lambda name: ordering.queue_order(state, name))
        key = waiting[queue].pop()
        if not waiting[queue]:
            del waiting[queue]
        own = state.queue_inqueue.get(queue, EMPTY)
        reserved = others.sub(held_back.get(queue, EMPTY)).add(own)
        refusal = _refusal(state, config, key, room, reserved)
        if refusal is not None:
            state.job_errors[key] = refusal
            continue
        wanted = state.jobs[key].min_resources
        if wanted is not None:
            state.queue_inqueue[queue] = own.add(wanted)
            others = others.sub(held_back.get(queue, EMPTY))
            held_back[queue] = _held_back(state, queue)
            others = others.add(held_back[queue])
        state.set_phase(key, PodGroupPhase.INQUEUE)
        if state.quotas is not None:  # Volcano's JobEnqueued: later jobs see it charged
            state.quotas.admit(state.jobs[key])
