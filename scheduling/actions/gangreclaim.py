"""The gangreclaim action (Volcano master's actions/gangreclaim): a queue below its deserved
share takes room back from other queues, whole bundles at a time.

A queue that is overused is skipped; a starving gang whose queue may not grow by all of its
pending tasks (Preemptive) evicts nobody. Candidates are the running, preemptable tasks of
jobs of other queues that let themselves be reclaimed; they are bundled per victim job (safe
tasks, then the rest of the gang as one whole bundle, `bundles`), ordered safe first, then
the victim queue that would be served last first, then by return, and evicted as the shared
driver decides (`gang_eviction`).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from models.keys import JobKey
from scheduling.actions import gang_eviction, victims
from scheduling.actions.bundles import Bundle
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import TaskInfo, TaskStatus
from scheduling.api.vectors import Resources
from scheduling.framework import ordering
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.state import SessionState

KIND = EvictReason.GANG_RECLAIM


def candidates(state: SessionState, key: JobKey) -> list[TaskInfo]:
    """selectDomainBundles' filter: running, preemptable tasks of other, reclaimable queues."""
    mine = state.jobs[key].queue
    found = []
    for keys in victims.on_nodes(state).values():
        for task in (state.tasks[k] for k in keys):
            theirs = state.jobs[task.job].queue
            if task.status is not TaskStatus.RUNNING or not task.preemptable:
                continue
            if theirs != mine and state.queues[theirs].reclaimable:
                found.append(task)
    return found


def select(
    state: SessionState, config: SessionConfig, key: JobKey, need: Resources
) -> list[Bundle]:
    def served_last(bundle: Bundle) -> ordering.QueueOrder:
        return ordering.queue_order(state, state.jobs[bundle.job].queue)

    whole = Action.GANG_RECLAIM not in config.no_whole_bundles
    found = candidates(state, key)
    return gang_eviction.choose(state, config, KIND, key, found, need, served_last, whole)


def gangreclaim(state: SessionState, config: SessionConfig) -> None:
    gang_eviction.run(state, config, KIND, select)
