"""Delayed actions (a policy `timeout`): Volcano's delayActionMap as pure rules.

Register, cancel when the pod recovers, clean up after an action of the same type ran.
In Volcano these are goroutines lost on restart; here each entry is a durable timer the
workflow starts and cancels as these rules say.

One deliberate difference: Volcano overwrites a same-pod entry with a different action
without stopping the old timer, so both fire; Caldera cancels the replaced timer.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum

from controllers.job.policies import Request
from controllers.job.state import DelayedAction
from models.bus import Action, Event


class ActionType(StrEnum):
    JOB = "Job"
    TASK = "Task"
    POD = "Pod"
    PARTITION = "Partition"


_TYPES = {
    Action.RESTART_TASK: ActionType.TASK,
    Action.RESTART_POD: ActionType.POD,
    Action.RESTART_PARTITION: ActionType.PARTITION,
}
INTERNAL_ACTIONS = frozenset(
    {Action.SYNC_JOB, Action.ENQUEUE_JOB, Action.SYNC_QUEUE, Action.OPEN_QUEUE, Action.CLOSE_QUEUE}
)
_POD_EVENTS = frozenset({Event.POD_RUNNING, Event.POD_FAILED, Event.POD_EVICTED})


def action_type(action: Action) -> ActionType:
    return _TYPES.get(action, ActionType.JOB)


def recovered(delayed: Mapping[str, DelayedAction], request: Request) -> list[str]:
    """Keys to cancel because the pod this request is about left the state that armed them:
    it left Pending (same UID), or it runs again after a failure or eviction."""
    if request.event not in _POD_EVENTS:
        return []
    entry = delayed.get(request.pod)
    if entry is None:
        return []
    left_pending = entry.event == Event.POD_PENDING and entry.pod_uid == request.pod_uid
    came_back = entry.event in (Event.POD_FAILED, Event.POD_EVICTED) and (
        request.event == Event.POD_RUNNING
    )
    return [entry.key] if left_pending or came_back else []


def register(
    delayed: Mapping[str, DelayedAction],
    request: Request,
    action: Action,
    delay: timedelta,
    now: datetime,
    timer: int,
) -> tuple[DelayedAction | None, str | None]:
    """The entry to add (None: an entry for this pod with the same action already runs, and
    its timer is not reset) and the key of a replaced entry whose timer must be cancelled."""
    existing = delayed.get(request.pod)
    if existing is not None and existing.action == action:
        return None, None
    entry = DelayedAction(
        key=request.pod,
        action=action,
        event=request.event,
        task=request.task,
        pod=request.pod,
        pod_uid=request.pod_uid,
        partition=request.partition,
        fires_at=now + delay,
        timer=timer,
    )
    return entry, (existing.key if existing is not None else None)


def cleanup(delayed: Mapping[str, DelayedAction], action: Action, request: Request) -> list[str]:
    """Keys to cancel after `action` ran: entries of the same action type and scope."""
    if action in INTERNAL_ACTIONS:
        return []
    kind = action_type(action)
    out = []
    for key, entry in sorted(delayed.items()):
        if action_type(entry.action) != kind:
            continue
        same_scope = (
            kind == ActionType.JOB
            or (kind == ActionType.TASK and entry.task == request.task)
            or (kind == ActionType.POD and entry.pod == request.pod)
            or (
                kind == ActionType.PARTITION
                and entry.task == request.task
                and entry.partition == request.partition
            )
        )
        if same_scope:
            out.append(key)
    return out
