"""Effects both job controllers (Volcano's and batch/v1) hand their shells: frozen records.

Each controller's own `effects` module adds what only it does and re-exports these, so a shell
reads `fx.BindPlacements` whichever core it runs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from models import signals


class Effect(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecordEvent(Effect):
    kind: Literal["RecordEvent"] = "RecordEvent"
    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str


class DeleteJob(Effect):
    kind: Literal["DeleteJob"] = "DeleteJob"
    namespace: str
    name: str
    uid: str


class Finish(Effect):
    """The Job is gone: the workflow ends once its handlers are done."""

    kind: Literal["Finish"] = "Finish"


class BindPlacements(Effect):
    """Bind pods the gang scheduler placed: volumes first, then nodes (one activity)."""

    kind: Literal["BindPlacements"] = "BindPlacements"
    session: int
    placements: list[signals.PlacedPod]


class MarkUnschedulable(Effect):
    kind: Literal["MarkUnschedulable"] = "MarkUnschedulable"
    pods: dict[str, str]  # pod name → why


class TellScheduler(Effect):
    """Tell the job's SchedulerWorkflow: work arrived, or these binds failed."""

    kind: Literal["TellScheduler"] = "TellScheduler"
    scheduler: str  # its workflow id
    failed: dict[str, str] = {}  # "<ns>/<pod>" → why; empty: work arrived


def handle_placements(
    session: int, ok: list[signals.PlacedPod], stale: dict[str, str], scheduler: str
) -> list[BindPlacements | TellScheduler]:
    """Bind the placements that still fit the job; hand the others back to the scheduler."""
    out: list[BindPlacements | TellScheduler] = []
    if ok:
        out.append(BindPlacements(session=session, placements=ok))
    if stale:
        out.append(TellScheduler(scheduler=scheduler, failed=stale))
    return out
