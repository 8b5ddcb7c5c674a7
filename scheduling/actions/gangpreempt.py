"""The gangpreempt action (Volcano master's actions/gangpreempt): within a queue, a starving
gang of higher priority takes room from lower-priority jobs, whole bundles at a time.

Candidates are the bound or running, preemptable tasks of other jobs of the same queue whose
job has a lower priority than the starving gang's; they are bundled per victim job (safe
tasks the job can spare, then the rest of its gang as one whole bundle, `bundles`), ordered
safe first, then the job that would be served last first, then by return, and evicted as the
shared driver decides (`gang_eviction`). Unlike preempt, no task of the gang's own job is
displaced, and a best-effort gang is not limited to best-effort victims (Volcano leaves that
to the UnifiedEvictable plugins).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from models.keys import JobKey
from scheduling.actions import gang_eviction, victims
from scheduling.actions.bundles import Bundle
from scheduling.api.result import EvictReason
from scheduling.api.snapshot import PREEMPTABLE, TaskInfo
from scheduling.api.vectors import Resources
from scheduling.framework import ordering
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.state import SessionState

KIND = EvictReason.GANG_PREEMPT


def candidates(state: SessionState, key: JobKey) -> list[TaskInfo]:
    """selectDomainBundles' filter: lower-priority jobs of the same queue, their tasks that
    hold a node and may be preempted."""
    mine = state.jobs[key]
    found = []
    for keys in victims.on_nodes(state).values():
        for task in (state.tasks[k] for k in keys):
            theirs = state.jobs[task.job]
            if task.status not in PREEMPTABLE or not task.preemptable or task.job == key:
                continue
            if theirs.queue == mine.queue and theirs.priority < mine.priority:
                found.append(task)
    return found


def select(
    state: SessionState, config: SessionConfig, key: JobKey, need: Resources
) -> list[Bundle]:
    def served_last(bundle: Bundle) -> ordering.JobOrder:
        return ordering.job_order(state, bundle.job)

    whole = Action.GANG_PREEMPT not in config.no_whole_bundles
    found = candidates(state, key)
    return gang_eviction.choose(state, config, KIND, key, found, need, served_last, whole)


def gangpreempt(state: SessionState, config: SessionConfig) -> None:
    gang_eviction.run(state, config, KIND, select)
