"""Whether the current copy's cluster answers: a miss arms the retry and, the first time, the
failover's lost timer; an answer after misses disarms both. Pure.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from controllers import effects as fx
from controllers.dispatch import effects as dfx
from controllers.dispatch import steps
from controllers.dispatch.state import DispatchState

Out = list[dfx.AnyEffect]


def unreachable(state: DispatchState, error: str, now: datetime) -> tuple[DispatchState, Out]:
    """The current copy's cluster did not answer: try again after a backoff; the first time,
    arm the lost timer (not for a job that ended: it never moves)."""
    current = state.current
    if current is None:
        return state, []
    out: Out = []
    misses = state.misses + 1
    update: dict[str, object] = {"misses": misses}
    if state.unreachable_since is None:
        update["unreachable_since"] = now
        message = f"cluster {current.cluster} does not answer: {error}"
        if not state.finished and state.lost_after:
            lost_at = now + timedelta(seconds=state.lost_after)
            update["lost_at"] = lost_at
            message += f"; the job moves to another cluster if it still does not at {lost_at}"
            out.append(steps.lost_timer(state, lost_at, f"in {state.lost_after}s"))
        out.insert(0, fx.RecordEvent(type="Warning", reason="ClusterUnreachable", message=message))
    state = state.model_copy(update=update)
    out.append(
        fx.StartTimer(
            key=steps.REACH,
            fires_at=now + steps.backoff(misses),
            summary=f"reach cluster {current.cluster} again",
        )
    )
    return state, out


def reached(state: DispatchState) -> tuple[DispatchState, Out]:
    """The current copy's cluster answered: whatever waited on its silence stands down."""
    if state.unreachable_since is None:
        return state.model_copy(update={"misses": 0}), []
    cluster = state.current.cluster if state.current else "?"
    since = state.unreachable_since
    state = state.model_copy(update={"unreachable_since": None, "lost_at": None, "misses": 0})
    note = fx.RecordEvent(
        reason="ClusterReachable", message=f"cluster {cluster} answers again (silent since {since})"
    )
    return state, [fx.CancelTimer(key=steps.LOST), fx.CancelTimer(key=steps.REACH), note]
