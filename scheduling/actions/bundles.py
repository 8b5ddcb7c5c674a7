"""Victim bundles of the gang-level actions (Volcano master's actions/utils/bundle.go).

gangpreempt and gangreclaim do not pick victims task by task: they group one victim job's
candidate tasks into at most two bundles. The safe bundle holds the tasks the job can lose
without its gang breaking (ready tasks beyond minAvailable, each role kept at its
minTaskMember); the whole bundle holds the rest, which may only go together, taking the gang
down entirely. A job already below minAvailable has nothing left to protect: all its tasks are
safe. Bundles are ordered safe first, then by the victim job (preempt) or victim queue
(reclaim) served last, then by return on investment (how much of the starving gang's need a
bundle frees, per resource the victim job holds in all), then by job and first task key.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from models.keys import JobKey
from scheduling.api import jobs
from scheduling.api.snapshot import PodKey, TaskInfo
from scheduling.api.vectors import EMPTY, Resources, total
from scheduling.framework.state import SessionState

# Pod count is a node limit, not a resource a victim frees for the need (Volcano's Resreq
# carries no pod count).
_NOT_SCORED: Final = frozenset({"pods"})


class Kind(IntEnum):
    """Safe bundles sort before whole ones (Volcano's BundleSafe < BundleWhole)."""

    SAFE = 0
    WHOLE = 1


class Bundle(BaseModel):
    """Tasks of one victim job evicted together for one starving gang."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    job: JobKey
    tasks: tuple[PodKey, ...]
    local: Resources  # what evicting the bundle frees
    whole_job: Resources = EMPTY  # whole bundles: what the victim job asks in all


def _requests(state: SessionState, keys: Iterable[PodKey]) -> Resources:
    return total(state.tasks[k].request for k in keys)


def create(state: SessionState, key: JobKey, local: Sequence[TaskInfo]) -> list[Bundle]:
    """CreateJobBundles: split one job's candidates into its safe and whole bundles, the
    candidates taken lowest task priority first, then by key."""
    if not local:
        return []
    ordered = sorted(local, key=lambda t: (t.priority, t.uid or t.key))
    job, tasks = state.jobs[key], state.tasks_of(key)
    surplus = jobs.ready_task_num(tasks) - job.min_member
    if surplus < 0:  # already below its gang: no further eviction breaks it
        keys = tuple(t.key for t in ordered)
        return [Bundle(kind=Kind.SAFE, job=key, tasks=keys, local=_requests(state, keys))]
    roles: dict[str, int] = {}
    if job.min_member >= job.min_task_member_total:  # CheckTaskReady's own bypass
        ready = jobs.roles_ready(tasks)
        roles = {role: ready[role] - need for role, need in job.min_task_member.items()}
    safe: list[PodKey] = []
    whole: list[PodKey] = []
    for task in ordered:
        if surplus > 0 and roles.get(task.role, 1) > 0:
            safe.append(task.key)
            surplus -= 1
            if task.role in roles:
                roles[task.role] -= 1
        else:
            whole.append(task.key)
    out = []
    if safe:
        out.append(Bundle(kind=Kind.SAFE, job=key, tasks=tuple(safe), local=_requests(state, safe)))
    if whole:
        everything = total(t.request for t in tasks)
        out.append(
            Bundle(
                kind=Kind.WHOLE,
                job=key,
                tasks=tuple(whole),
                local=_requests(state, whole),
                whole_job=everything,
            )
        )
    return out


def flatten(bundles: Iterable[Bundle]) -> list[PodKey]:
    return [k for b in bundles for k in b.tasks]


def apply_allowed(
    state: SessionState, bundles: Iterable[Bundle], allowed: set[PodKey]
) -> list[Bundle]:
    """ApplyAllowedTasks: a whole bundle stays only if every task of it may go; a safe one
    shrinks to the tasks that may."""
    out = []
    for bundle in bundles:
        kept = tuple(k for k in bundle.tasks if k in allowed)
        if bundle.kind is Kind.WHOLE:
            if kept == bundle.tasks:
                out.append(bundle)
        elif kept:
            out.append(bundle.model_copy(update={"tasks": kept, "local": _requests(state, kept)}))
    return out


def _score(resources: Resources, need: Resources, cap: bool) -> float:
    """scoreAgainstNeed: per dimension the need asks, the share of it `resources` cover."""
    score = 0.0
    for name, wanted in need.dimensions():
        if wanted <= 0 or name in _NOT_SCORED:
            continue
        have = resources.get(name)
        score += float(min(have, wanted) if cap else have) / float(wanted)
    return score


def roi(bundle: Bundle, need: Resources) -> float:
    """bundleROI: the need it covers per resource of the job it breaks; a safe bundle breaks
    nothing, so its return is infinite."""
    whole = _score(bundle.whole_job, need, cap=False)
    return math.inf if whole == 0 else _score(bundle.local, need, cap=True) / whole


def ordered(
    bundles: Sequence[Bundle], need: Resources, victim_order: Callable[[Bundle], Any]
) -> list[Bundle]:
    """SortBundlesForPreempt / SortBundlesForReclaim: safe first, then by `victim_order`
    (the victim job's, or its queue's, serving order) served last first, then highest return,
    then job and first task key (stable sorts, finest key first)."""
    out = sorted(bundles, key=lambda b: (b.job, b.tasks[0] if b.tasks else "", len(b.tasks)))
    out.sort(key=lambda b: -roi(b, need))
    out.sort(key=victim_order, reverse=True)  # stable: equals keep the order above
    out.sort(key=lambda b: b.kind)
    return out
