"""The preempt action (Volcano's preempt.go): within a queue, a starving gang of
higher priority takes room from lower-priority jobs, and a job's higher-priority pending task
from its own lower-priority tasks.

Queues with starving jobs are served in queue order. First, between jobs: each starving gang,
in job order and through one statement, tries its pending tasks one by one on the nodes that
pass the non-resource predicates, best score first; on a node, running or bound preemptable
tasks of other jobs of the same queue are the candidates, `victims.choose` picks the victims
by the configured rule (Caldera's: lower-priority jobs, each victim gang kept whole or taken
all; Volcano's: the plugins' Preemptable answers tier by tier), and they are evicted until the
task fits there and its queue may take it (within deserved, so a queue never preempts its way
past its share); the task is then pipelined. The statement commits once the gang is pipelined and is
discarded otherwise. Then, within jobs: a starving job's pending task may displace its own
lower-priority tasks (a trade that keeps the job's count), each success committed on its own.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from models.keys import JobKey
from scheduling.actions import eviction, victims
from scheduling.actions.reclaim import preemptors, starving_jobs
from scheduling.api import jobs
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import NodeName, PodKey, TaskInfo
from scheduling.framework import ordering
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.statement import Statement
from scheduling.plugins import extender, predicates, scoring


def _fits(state: SessionState, task: TaskInfo, node: NodeName) -> bool:
    """preemptorFitsOnNode: the queue may take it, the node's future idle room holds it, and
    its claims get devices there once the victims' own claims are gone."""
    queue = state.jobs[task.job].queue
    if not state.queue_allocatable(queue, task.request):
        return False
    current = state.nodes[node]
    if predicates.check(task, current, pods=state.pods):
        return False
    return state.devices.refusal(task, current, future=True) is None


def _preempt_for(
    state: SessionState,
    statement: Statement,
    task: TaskInfo,
    config: SessionConfig,
    on_nodes: dict[NodeName, list[PodKey]],
    own: bool,
) -> bool:
    """Try the feasible nodes, best score first; `own`: victims from the task's own job."""
    nodes = [
        state.nodes[name]
        for name in on_nodes
        if not predicates.check(task, state.nodes[name], fit_resources=False)
    ]
    nodes = extender.passing(state.extender, task, nodes)
    extra = extender.with_scores(state.extender, task, nodes, None)
    if isinstance(extra, extender.Failure):
        return False  # Volcano's PrioritizeNodes then ranks no node
    for node in scoring.ranked(task, nodes, config.scoring, extra, state.pods):
        keys = on_nodes[node.name]
        reason = EvictReason.PREEMPT
        units = victims.choose(state, config, task, keys, reason, same_job=own) or []
        if eviction.try_node(
            state, statement, task, node.name, units, reason, _fits, eviction.anyone
        ):
            return True
    return False


def _between_jobs(
    state: SessionState, config: SessionConfig, key: JobKey, on_nodes: dict[NodeName, list[PodKey]]
) -> None:
    job, statement, pending = state.jobs[key], Statement(state), preemptors(state, key)
    while pending and jobs.is_starving(job, state.tasks_of(key)):
        task = state.tasks[pending.popleft()]
        _preempt_for(state, statement, task, config, on_nodes, own=False)
    if jobs.is_pipelined(job, state.tasks_of(key)):
        statement.commit()
    else:
        statement.discard()


def _within_job(
    state: SessionState, config: SessionConfig, key: JobKey, on_nodes: dict[NodeName, list[PodKey]]
) -> None:
    for pod in preemptors(state, key):
        statement = Statement(state)
        if not _preempt_for(state, statement, state.tasks[pod], config, on_nodes, own=True):
            statement.discard()
            return
        statement.commit()


def preempt(state: SessionState, config: SessionConfig) -> None:
    """Volcano's preempt loop: per queue in queue order, between jobs, then within jobs."""
    by_queue, on_nodes = starving_jobs(state), victims.on_nodes(state)
    for queue in sorted(by_queue, key=lambda name: ordering.queue_order(state, name)):
        starving = by_queue[queue]
        for key in sorted(starving, key=lambda k: ordering.job_order(state, k)):
            _between_jobs(state, config, key, on_nodes)
        for key in starving:
            _within_job(state, config, key, on_nodes)
