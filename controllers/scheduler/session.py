"""SchedulerWorkflow bookkeeping: assumed placements with their expiry (kube-scheduler's
assume cache), kept durable so a worker crash between decision and bind double-books
nothing. Pure: the shell runs sessions; what one session places, the next session's activity
binds (patch `caldera-session-folds-binding`; a gang with volumes to bind goes to
`bind_session`), and a run from before that patch hands the placements to the JobWorkflows,
which bind them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from models.signals import scheduler as scheduler_signals

ASSUME_TTL: Final = timedelta(seconds=30)
MAX_IDLE_FACTOR: Final = 8  # an idle scheduler looks at most every 8 periods


class Assumption(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    job: str  # the id of the job workflow the pod belongs to
    expires_at: datetime
    session: int
    # The devices its ResourceClaims were given, until the claims' status shows them.
    claims: list[scheduler_signals.ClaimPlan] = Field(default_factory=list)


class SchedulerState(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "volcano"
    session: int = 0
    assumed: dict[str, Assumption] = Field(default_factory=dict)  # "<ns>/<pod>" → placement
    idle: int = 0  # sessions in a row that had nothing to place


class Handoff(BaseModel):
    """Placements to send to one JobWorkflow."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job: str
    namespace: str
    placed: scheduler_signals.PodsPlaced


def live(state: SchedulerState, now: datetime) -> dict[str, str]:
    """The assumptions a session must respect: not bound yet and not expired."""
    return {pod: a.node for pod, a in sorted(state.assumed.items()) if a.expires_at > now}


def claims_in_flight(
    state: SchedulerState, now: datetime
) -> dict[str, list[scheduler_signals.ClaimPlan]]:
    """The device allocations of live assumptions, by pod: a session counts their devices
    taken until it sees them in the claims' status, whichever worker runs it."""
    return {
        pod: [c for c in a.claims if c.allocates]
        for pod, a in sorted(state.assumed.items())
        if a.expires_at > now and any(c.allocates for c in a.claims)
    }


def after_session(
    state: SchedulerState,
    placements: list[
        tuple[str, str, list[scheduler_signals.PlacedPod]]
    ],  # (job workflow id, ns, pods)
    bound: list[str],
    pending: int,
    now: datetime,
) -> tuple[SchedulerState, list[Handoff]]:
    """Confirm what got bound, forget what expired, assume what was just placed."""
    assumed = {
        pod: a for pod, a in state.assumed.items() if pod not in bound and a.expires_at > now
    }
    handoffs = []
    for job, namespace, pods in placements:
        for placed in pods:
            assumed[f"{namespace}/{placed.pod}"] = Assumption(
                node=placed.node,
                job=job,
                expires_at=now + ASSUME_TTL,
                session=state.session,
                claims=placed.claims,
            )
        gang = scheduler_signals.PodsPlaced(session=state.session, placements=pods)
        handoffs.append(Handoff(job=job, namespace=namespace, placed=gang))
    busy = bool(placements) or pending > 0
    state = state.model_copy(
        update={
            "assumed": assumed,
            "session": state.session + 1,
            "idle": 0 if busy else state.idle + 1,
        }
    )
    return state, handoffs


def dropped(state: SchedulerState, failed: scheduler_signals.BindFailed) -> SchedulerState:
    """A JobWorkflow could not bind: forget those assumptions so the pods are placed again."""
    assumed = {pod: a for pod, a in state.assumed.items() if pod not in failed.pods}
    return state.model_copy(update={"assumed": assumed, "idle": 0})


def period(state: SchedulerState, base: timedelta) -> timedelta:
    """Every `base` while there is work; backing off to 8 x `base` while idle."""
    factor: int = min(2 ** min(state.idle, 3), MAX_IDLE_FACTOR)
    return base * factor
