"""What the QueueWorkflow shell does on the core's behalf: a closed union of frozen records."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from models.scheduling import QueueState


class Effect(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WriteQueueStatus(Effect):
    """status.state and the PodGroup counts by phase (merged: `allocated` is the scheduler's)."""

    kind: Literal["WriteQueueStatus"] = "WriteQueueStatus"
    name: str
    state: QueueState
    counts: dict[str, int]


class PatchQueue(Effect):
    kind: Literal["PatchQueue"] = "PatchQueue"
    name: str
    closed_by_parent: bool | None = None  # None: leave the annotation alone
    parent: str | None = None  # None: leave spec.parent alone


class TellChildren(Effect):
    """Signal the children's workflows this queue's state (they close or reopen themselves)."""

    kind: Literal["TellChildren"] = "TellChildren"
    children: list[str]
    state: QueueState


class StateChanged(Effect):
    kind: Literal["StateChanged"] = "StateChanged"
    state: QueueState
    previous: QueueState | None  # None: first state of the queue
    parent: str | None  # None: the root queue
    reason: str


class RecordEvent(Effect):
    kind: Literal["RecordEvent"] = "RecordEvent"
    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str


class Finish(Effect):
    kind: Literal["Finish"] = "Finish"


AnyEffect = WriteQueueStatus | PatchQueue | TellChildren | StateChanged | RecordEvent | Finish
