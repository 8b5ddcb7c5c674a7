"""The reclaim action (Volcano's reclaim.go): a queue below its deserved share takes
room back from queues above theirs.

Allocate never hands a queue more than its deserved share, but it cannot take back what a
queue got while it was alone: whichever queue's jobs arrived first keeps the cluster. Reclaim
does. Queues are served in queue order, skipping a queue that already holds its deserved
share; in each, starving gangs (fewer tasks hold or wait for a node than minMember) are served
in job order, each through one statement. For each pending task, while the queue may still
grow by it (Preemptive: within deserved), the nodes that pass the non-resource predicates are
tried in name order: running, preemptable tasks of other, reclaimable queues are the
candidates, `victims.choose` picks the victims among them by the configured rule (Caldera's:
gang units whose queue is still over its deserved share as each is evicted; Volcano's: the
plugins' Reclaimable answers tier by tier), and they are evicted in victim order until the task
fits that node's future idle room; the task is then pipelined there. Once the
gang is pipelined (minMember tasks hold or wait for a node) the statement commits and its
evictions become results; otherwise it is discarded and nobody is evicted for a gang that
would still not run.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import deque

from models.keys import JobKey, QueueName
from scheduling.actions import eviction, victims
from scheduling.api import jobs
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import NodeName, PodKey, TaskInfo, TaskStatus
from scheduling.api.vectors import Missing
from scheduling.framework import ordering
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.plugins import extender, predicates


def starving_jobs(state: SessionState) -> dict[QueueName, list[JobKey]]:
    """Admitted, valid jobs that need more tasks placed to make their gang, by queue."""
    by_queue: dict[QueueName, list[JobKey]] = {}
    for key, job in sorted(state.jobs.items()):
        if job.is_pending or key in state.invalid:
            continue
        if jobs.is_starving(job, state.tasks_of(key)):
            by_queue.setdefault(job.queue, []).append(key)
    return by_queue


def preemptors(state: SessionState, key: JobKey) -> deque[PodKey]:
    """The job's pending tasks that may displace others, in task order."""
    tasks = [
        t
        for t in state.tasks_of(key)
        if t.status is TaskStatus.PENDING and not t.gated and t.preempts
    ]
    return deque(t.key for t in sorted(tasks, key=ordering.task_order))


def _preemptive(state: SessionState, task: TaskInfo) -> bool:
    """The queue may grow by the task (proportion: within deserved; capacity: within real
    capability and still within deserved on one of the task's dimensions)."""
    return state.queue_preemptive(state.jobs[task.job].queue, task.request)


def _reclaim_for(
    state: SessionState,
    config: SessionConfig,
    statement: Statement,
    task: TaskInfo,
    on_nodes: dict[NodeName, list[PodKey]],
) -> bool:
    """A node where evicting victims of other queues makes room (reclaimForTask)."""
    # Caldera's rule checks each unit's queue against the live books as it goes; Volcano's
    # proportion or capacity counted the queue down already, when it named the victims.
    allowed: eviction.Allowed = (
        (lambda s, unit: victims.over_deserved(s, unit, task))
        if config.whole_gang_victims
        else eviction.anyone
    )
    asked = extender.passing(state.extender, task, [state.nodes[n] for n in sorted(on_nodes)])
    allowed_nodes = {n.name for n in asked}
    for name in sorted(on_nodes):
        if name not in allowed_nodes:
            continue
        if predicates.check(task, state.nodes[name], fit_resources=False):
            continue
        units = victims.choose(state, config, task, on_nodes[name], EvictReason.RECLAIM)
        if units is None:
            continue
        placed = eviction.try_node(
            state,
            statement,
            task,
            name,
            units,
            EvictReason.RECLAIM,
            eviction.fits_future_idle,
            allowed,
        )
        if placed:
            return True
    return False


def _donors(state: SessionState) -> bool:
    """Some reclaimable queue holds more than its deserved share: someone could give."""
    return any(
        queue.reclaimable
        and not state.allocated_of(name).less_equal(state.deserved_of(name), Missing.ZERO)
        for name, queue in state.queues.items()
    )


def reclaim(state: SessionState, config: SessionConfig) -> None:
    """Volcano's reclaim loop: queue by queue, starving gang by gang, all or nothing."""
    if not _donors(state):
        return  # nothing to take from: skip the search (an idle or fair cluster)
    # Each queue's starving jobs in a heap taken at the start, as Volcano's priority queue is.
    by_queue = ordering.job_queues(state, starving_jobs(state))
    on_nodes = victims.on_nodes(state)
    while by_queue:
        queue = min(by_queue, key=lambda name: ordering.queue_order(state, name))
        waiting = by_queue[queue]
        if not waiting or state.queue_overused(queue):
            del by_queue[queue]
            continue
        key = waiting.pop()
        job, statement, pending = state.jobs[key], Statement(state), preemptors(state, key)
        while pending and jobs.is_starving(job, state.tasks_of(key)):
            task = state.tasks[pending.popleft()]
            if _preemptive(state, task):
                _reclaim_for(state, config, statement, task, on_nodes)
        if jobs.is_pipelined(job, state.tasks_of(key)):
            statement.commit()
        else:
            statement.discard()
