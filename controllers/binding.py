"""The gang scheduler's placements, as a job's core takes them: bind the pods that still
wait, hand the rest back, and report binds that failed. One core for every job kind, so a
Volcano Job and a batch/v1 Job bind and retry the same way."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from models.signals import scheduler as scheduler_signals

GONE = "job is being deleted"
STALE = "pod no longer waits for a node"
EVENT_LIMIT = 1000  # characters of an Event message


class Gang(BaseModel):
    """What placement needs to know of a job: where it lives, who schedules it, which of its
    pods still wait for a node (alive, Pending, unbound)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    scheduler: str  # the SchedulerWorkflow's id
    gone: bool  # the job is deleted or being deleted
    waiting: frozenset[str]


def placed(gang: Gang, placed: scheduler_signals.PodsPlaced) -> list[fx.Shared]:
    """Bind the placements that still fit the job; hand the others back to the scheduler."""
    ok: list[scheduler_signals.PlacedPod] = []
    stale: dict[str, str] = {}
    for p in placed.placements:
        if gang.gone:
            stale[f"{gang.namespace}/{p.pod}"] = GONE
        elif p.pod not in gang.waiting:
            stale[f"{gang.namespace}/{p.pod}"] = STALE
        else:
            ok.append(p)
    out: list[fx.Shared] = []
    if ok:
        out.append(fx.BindPlacements(session=placed.session, placements=ok))
    if stale:
        out.append(fx.TellScheduler(scheduler=gang.scheduler, failed=stale))
    return out


def bound(gang: Gang, failed: dict[str, str]) -> list[fx.Shared]:
    """Failed binds: PodScheduled=False on the pods, an Event, and the scheduler retries."""
    if not failed:
        return []
    ordered = dict(sorted(failed.items()))
    detail = "; ".join(f"{pod}: {why}" for pod, why in ordered.items())
    return [
        fx.MarkUnschedulable(pods=ordered),
        fx.RecordEvent(type="Warning", reason="FailedScheduling", message=detail[:EVENT_LIMIT]),
        fx.TellScheduler(
            scheduler=gang.scheduler,
            failed={f"{gang.namespace}/{pod}": why for pod, why in ordered.items()},
        ),
    ]
