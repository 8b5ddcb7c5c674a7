"""Effects every entity core (Volcano Job, batch/v1 Job, Queue) may hand its shell.

Each kind's own `effects` module adds what only it does; the shell carries these out the same
way whichever core asked, so every history shows them with the same activities and summaries.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from models.signals import job as job_signals
from models.signals import scheduler as scheduler_signals


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
    """The object is gone: the workflow ends once its handlers are done."""

    kind: Literal["Finish"] = "Finish"


class StartOver(Effect):
    """A new object under the same name: continue as new with a fresh state for it."""

    kind: Literal["StartOver"] = "StartOver"
    observed: job_signals.JobObserved


class StartTimer(Effect):
    """A durable timer; one with the same key is replaced. `timer` tells a stale firing from
    the current one where a key is armed again (0: the key alone is enough)."""

    kind: Literal["StartTimer"] = "StartTimer"
    key: str
    fires_at: datetime
    summary: str
    timer: int = 0


class CancelTimer(Effect):
    kind: Literal["CancelTimer"] = "CancelTimer"
    key: str


class PhaseChanged(Effect):
    """The phase the UI and search attributes show changed."""

    kind: Literal["PhaseChanged"] = "PhaseChanged"
    phase: str
    previous: str | None  # None: the first phase
    reason: str


class BindPlacements(Effect):
    """Bind pods the gang scheduler placed: volumes first, then nodes (one activity)."""

    kind: Literal["BindPlacements"] = "BindPlacements"
    session: int
    placements: list[scheduler_signals.PlacedPod]


class MarkUnschedulable(Effect):
    kind: Literal["MarkUnschedulable"] = "MarkUnschedulable"
    pods: dict[str, str]  # pod name → why


class TellScheduler(Effect):
    """Tell the job's SchedulerWorkflow: work arrived, or these binds failed."""

    kind: Literal["TellScheduler"] = "TellScheduler"
    scheduler: str  # its workflow id
    failed: dict[str, str] = {}  # "<ns>/<pod>" → why; empty: work arrived


class CheckPods(Effect):
    """Read pods the workflow created but never heard of, missing from a full list: the ones
    the apiserver no longer has come back as `PodsAbsent`."""

    kind: Literal["CheckPods"] = "CheckPods"
    names: list[str]


Shared = (
    RecordEvent
    | Finish
    | StartOver
    | StartTimer
    | CancelTimer
    | PhaseChanged
    | BindPlacements
    | MarkUnschedulable
    | TellScheduler
    | CheckPods
)
