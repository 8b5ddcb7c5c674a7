"""How the Volcano Job core handles a run of Volcano requests: each goes through delayed-action
cleanup and applyPolicies, then either arms a durable timer (a delayed action) or runs the
state table's rule now, planned by `reconcile`. Runs of plain syncs within one batch are merged
into one sync, which Volcano's level-triggered sync makes safe. `controller` turns each input
into requests; this module decides what they do. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from controllers import effects as fx
from controllers.job import clock, delays, reconcile
from controllers.job import effects as job_fx
from controllers.job.policies import SYNC, Request, Resolution, apply_policies
from controllers.job.state import JobRecord
from controllers.job.transitions import JOB_ACTIONS, Operation, rule_for
from models.bus import Action

_TARGETS = {
    Action.RESTART_TASK: reconcile.Target.TASK,
    Action.RESTART_POD: reconcile.Target.POD,
    Action.RESTART_PARTITION: reconcile.Target.PARTITION,
}


def _fmt(delay: timedelta) -> str:
    return reconcile.go_duration(delay)


def _story(request: Request, resolution: Resolution) -> str:
    """'RestartJob: PodEvicted on pod j-w-1 (task worker), job policy PodEvicted → RestartJob'."""
    subject = f" on pod {request.pod} (task {request.task})" if request.pod else ""
    source = request.reason or resolution.policy
    tail = f", {source}" if source else ""
    return f"{resolution.action}: {request.event}{subject}{tail}"


def _execute(
    state: JobRecord, action: Action, request: Request, now: datetime, why: str
) -> reconcile.Plan:
    rule = rule_for(state.phase, action)
    if rule.operation == Operation.SYNC:
        return reconcile.sync_job(state, rule, now, why)
    target = _TARGETS.get(action) if rule.operation == Operation.KILL_TARGET else None
    return reconcile.kill(state, rule, request, now, why, target)


def _cancel(state: JobRecord, keys: Sequence[str]) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    if not keys:
        return state, []
    delayed = {k: v for k, v in state.delayed.items() if k not in keys}
    return state.model_copy(update={"delayed": delayed}), [fx.CancelTimer(key=k) for k in keys]


def act(
    state: JobRecord, request: Request, resolution: Resolution, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """Run one resolved action now, then clean up delayed actions of its type."""
    out: list[job_fx.AnyEffect] = []
    why = _story(request, resolution)
    if resolution.action != Action.SYNC_JOB:
        out.append(
            fx.RecordEvent(
                reason="ExecuteAction",
                message=f"Start to execute action {why}",
            )
        )
    plan = _execute(state, resolution.action, request, now, why)
    state = plan.state
    out += plan.effects
    state, cancelled = _cancel(state, delays.cleanup(state.delayed, resolution.action, request))
    return state, out + cancelled


def handle(
    state: JobRecord, requests: Sequence[Request], now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    out: list[job_fx.AnyEffect] = []
    sync_due: Request | None = None
    for request in requests:
        state, cancelled = _cancel(state, delays.recovered(state.delayed, request))
        out += cancelled
        if state.job is None:
            continue
        resolution = apply_policies(state.job, state.status.version or 0, request)
        if resolution.action not in JOB_ACTIONS:
            out.append(
                fx.RecordEvent(
                    type="Warning",
                    reason="InvalidAction",
                    message=f"action {resolution.action} does not apply to a Job; ignored",
                )
            )
            continue
        if resolution == SYNC:
            sync_due = sync_due or request
            continue
        if sync_due is not None:
            state, done = act(state, sync_due, SYNC, now)
            out += done
            sync_due = None
        if resolution.delay:
            state, armed = _arm(state, request, resolution, resolution.delay, now)
            out += armed
        else:
            state, done = act(state, request, resolution, now)
            out += done
    if sync_due is not None:
        state, done = act(state, sync_due, SYNC, now)
        out += done
    return state, out


def _arm(
    state: JobRecord, request: Request, resolution: Resolution, delay: timedelta, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    entry, replaced = delays.register(
        state.delayed, request, resolution.action, delay, now, state.timer_seq + 1
    )
    if entry is None:
        return state, []
    out: list[job_fx.AnyEffect] = []
    if replaced is not None:
        out.append(fx.CancelTimer(key=replaced))
    delayed = {**state.delayed, entry.key: entry}
    state = state.model_copy(update={"delayed": delayed, "timer_seq": entry.timer})
    story = _story(request, resolution).partition(": ")[2]
    out += [
        fx.RecordEvent(
            reason="ExecuteAction",
            message=f"Execute action {resolution.action} after {_fmt(delay)}: {story}",
        ),
        clock.delayed_timer(entry, f"in {_fmt(delay)}"),
    ]
    return state, out
