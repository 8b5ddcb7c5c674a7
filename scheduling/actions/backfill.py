"""The backfill action: best-effort pods, which request nothing.

They are left out of the gang statement because they need no room, only a node that passes
the non-resource predicates (pod slots, cordon, affinity, taints). Each is placed on its own,
and the job's placements are dispatched as soon as the gang counts as ready, which for a job of
best-effort pods is at once.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from scheduling.api import jobs
from scheduling.api.snapshot import TaskInfo, TaskStatus
from scheduling.framework import ordering
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.plugins import extender, predicates, scoring


def _best_effort(task: TaskInfo) -> bool:
    """A task backfill places: pending, asking for nothing, not gated."""
    return task.status is TaskStatus.PENDING and task.best_effort and not task.gated


def backfill(state: SessionState, config: SessionConfig) -> None:
    """Place pending best-effort tasks of admitted, valid jobs, in queue/job/task order."""
    nodes = sorted(state.nodes)
    waiting = {
        k: tasks
        for k, j in state.jobs.items()
        if not j.is_pending
        and k not in state.invalid
        and j.queue not in state.refused  # a NamespaceQueue that may not place (job_errors says)
        and (tasks := [t for t in state.tasks_of(k) if _best_effort(t)])
    }
    keys = sorted(
        waiting,
        key=lambda k: (
            ordering.queue_order(state, state.jobs[k].queue),
            ordering.job_order(state, k),
        ),
    )
    for key in keys:
        job = state.jobs[key]
        for task in sorted(waiting[key], key=ordering.task_order):
            reasons = {
                n: predicates.check(
                    task,
                    state.nodes[n],
                    fit_resources=False,
                    pods=state.pods,
                    devices=state.devices,
                )
                for n in nodes
            }
            extender.refuse(state.extender, task, state.nodes, reasons)
            feasible = [state.nodes[n] for n in nodes if not reasons[n]]
            if not feasible:
                state.record_fit_error(
                    key, task.key, predicates.fit_error(len(nodes), reasons.values())
                )
                continue
            extra = extender.with_scores(state.extender, task, feasible, None)
            if isinstance(extra, extender.Failure):
                state.record_fit_error(key, task.key, extra.message)
                continue
            best = scoring.best_node(task, feasible, config.scoring, extra, state.pods)
            state.allocate(task.key, best.name)
            current = state.tasks_of(key)
            if jobs.is_ready(job, current):
                for ready in sorted(current, key=ordering.task_order):
                    if ready.status is TaskStatus.ALLOCATED:
                        state.dispatch(ready.key)
