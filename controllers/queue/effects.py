"""What only a Queue's shell does on its core's behalf; with `controllers.effects` (Events,
the end of the workflow), the closed union of frozen records the shell executes in order."""

from __future__ import annotations

from typing import Literal

from controllers import effects as fx
from models.scheduling import QueueState


class WriteQueueStatus(fx.Effect):
    """status.state and the PodGroup counts by phase (merged: `allocated` is the scheduler's)."""

    kind: Literal["WriteQueueStatus"] = "WriteQueueStatus"
    name: str
    state: QueueState
    counts: dict[str, int]


class PatchQueue(fx.Effect):
    kind: Literal["PatchQueue"] = "PatchQueue"
    name: str
    closed_by_parent: bool | None = None  # None: leave the annotation alone
    parent: str | None = None  # None: leave spec.parent alone


class TellChildren(fx.Effect):
    """Signal the children's workflows this queue's state (they close or reopen themselves)."""

    kind: Literal["TellChildren"] = "TellChildren"
    children: list[str]
    state: QueueState


class StateChanged(fx.Effect):
    kind: Literal["StateChanged"] = "StateChanged"
    state: QueueState
    previous: QueueState | None  # None: first state of the queue
    parent: str | None  # None: the root queue
    reason: str


Own = WriteQueueStatus | PatchQueue | TellChildren | StateChanged
AnyEffect = Own | fx.RecordEvent | fx.Finish
