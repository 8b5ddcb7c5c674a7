"""What a Volcano Job waits for: delayed policy actions and ttlSecondsAfterFinished, as the
durable timers the shell arms, each with the label the UI timeline shows. Pure."""

from __future__ import annotations

from datetime import datetime, timedelta

from controllers import effects as fx
from controllers import lifetime
from controllers.job.state import DelayedAction, JobRecord
from controllers.job.transitions import FINISHED

TTL_KEY = "ttl"


def delayed_timer(entry: DelayedAction, when: str) -> fx.StartTimer:
    """'RestartJob in 5m0s: PodEvicted on task worker', the label the UI timeline shows."""
    task = f" on task {entry.task}" if entry.task else ""
    return fx.StartTimer(
        key=entry.key,
        timer=entry.timer,
        fires_at=entry.fires_at,
        summary=f"{entry.action} {when}: {entry.event}{task}",
    )


def ttl_timer(state: JobRecord, fires_at: datetime, when: str) -> fx.StartTimer:
    ttl = state.job.spec.ttl_seconds_after_finished if state.job else None
    summary = f"delete job {when}: ttlSecondsAfterFinished {ttl}s after {state.phase}"
    return fx.StartTimer(key=TTL_KEY, timer=0, fires_at=fires_at, summary=summary)


def restored_timers(state: JobRecord) -> list[fx.StartTimer]:
    """The timers a run that continued as new re-arms, for the time they have left."""
    out = [delayed_timer(d, "(continued)") for _, d in sorted(state.delayed.items())]
    if state.ttl_fires_at is not None and not state.ttl_expired:
        out.append(ttl_timer(state, state.ttl_fires_at, "(continued)"))
    return out


def arm_ttl(state: JobRecord, now: datetime) -> tuple[JobRecord, list[fx.StartTimer]]:
    """Arm ttlSecondsAfterFinished once the job is finished (Aborted is not, as in Volcano)."""
    job = state.job
    if job is None or state.deleted or state.ttl_fires_at is not None:
        return state, []
    ttl = job.spec.ttl_seconds_after_finished
    finished_at = state.status.state.last_transition_time if state.status.state else None
    if ttl is None or state.phase not in FINISHED or finished_at is None:
        return state, []
    fires_at = lifetime.ttl_deadline(finished_at, ttl, now)
    state = state.model_copy(update={"ttl_fires_at": fires_at})
    return state, [ttl_timer(state, fires_at, f"in {go_duration(fires_at - now)}")]


def ttl_fired(state: JobRecord) -> tuple[JobRecord, list[fx.RecordEvent | fx.DeleteJob]]:
    """The TTL fires once; the Job's deletion then ends the workflow."""
    if state.job is None or state.ttl_fires_at is None or state.ttl_expired or state.deleted:
        return state, []
    return state.model_copy(update={"ttl_expired": True}), lifetime.expired(state.identity)


def go_duration(delta: timedelta) -> str:
    """metav1.Duration's text form ("1h2m3.5s") for status.runningDuration."""
    total = delta.total_seconds()
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{int(hours)}h" if hours else ""
    out += f"{int(minutes)}m" if hours or minutes else ""
    return out + f"{seconds:g}s"
