"""The enqueue action (with overcommit and the proportion plugin's votes).

Admits Pending PodGroups (Pending -> Inqueue) while the cluster, overcommitted by the factor,
and the job's queue both have room for its minResources; a PodGroup without minResources is
always admitted. Admission is what lets the job controller create the pods, so this gate is
what keeps a queue from flooding the cluster with pods that can never run. Queues are served
lowest share first and jobs in job order; a refused job waits for the next session.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from typing import Final

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api import jobs
from scheduling.api.vectors import Resources, total
from scheduling.framework import ordering
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState

CLUSTER_OVERUSED: Final = "resource in cluster is overused"
QUOTA_INSUFFICIENT: Final = "queue resource quota insufficient"


def _refusal(
    state: SessionState, key: JobKey, idle: Resources | None, reserved: Resources
) -> str | None:
    """Why the job may not be admitted now (first rejecting vote); None: admit it. `idle`
    None: the overcommit plugin is off and the cluster's room does not vote."""
    job = state.jobs[key]
    if (blocked := state.queue_blocked(job.queue)) is not None:
        return blocked  # an unusable queue tree admits nothing, minResources or not
    wanted = job.min_resources
    if wanted is None:
        return None
    if idle is not None and not reserved.add(wanted).less_equal_with_dimension(idle, wanted):
        return CLUSTER_OVERUSED
    queue = job.queue
    if state.queue_enqueueable(queue, wanted):
        return None
    return f"{QUOTA_INSUFFICIENT}: queue {queue}"


def enqueue(state: SessionState, config: SessionConfig) -> None:
    """Pending -> Inqueue for every PodGroup the votes permit, recording why for the rest."""
    cluster_used = total(node.used for node in state.snapshot.nodes)
    room = state.cluster.multiply(config.overcommit_factor).sub(cluster_used)
    idle = room if config.overcommit else None
    reserved = total(jobs.inqueue(job, state.tasks_of(key)) for key, job in state.jobs.items())
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
        refusal = _refusal(state, key, idle, reserved)
        if refusal is not None:
            state.job_errors[key] = refusal
            continue
        wanted = state.jobs[key].min_resources
        if wanted is not None:
            reserved = reserved.add(wanted)
            state.queue_inqueue[queue] = state.queue_inqueue[queue].add(wanted)
        state.set_phase(key, PodGroupPhase.INQUEUE)
