"""Volcano's queue state machine as data: (state, action) → Rule.

The rule says which controller function runs (sync, open, close) and what the state becomes;
`BY_POD_GROUPS` is Volcano's "Closed when no PodGroup is left, else Closing". Every cell of
QueueState x {OpenQueue, CloseQueue, SyncQueue} is filled; a test walks the product.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

from models.bus import Action
from models.scheduling import QueueState


class Operation(StrEnum):
    SYNC = "SyncQueue"
    OPEN = "OpenQueue"  # re-opens the children the queue closed, refused under a closed parent
    CLOSE = "CloseQueue"  # closes the open children first (marked closed-by-parent)


class Target(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    BY_POD_GROUPS = "ByPodGroups"  # Closed when no PodGroup is left, else Closing
    KEEP = "Keep"


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    operation: Operation
    target: Target


QUEUE_ACTIONS: Final = (Action.OPEN_QUEUE, Action.CLOSE_QUEUE, Action.SYNC_QUEUE)
_O, _C, _S = QUEUE_ACTIONS

TRANSITIONS: Final[Mapping[tuple[QueueState, Action], Rule]] = {
    (QueueState.OPEN, _O): Rule(operation=Operation.SYNC, target=Target.OPEN),
    (QueueState.OPEN, _C): Rule(operation=Operation.CLOSE, target=Target.BY_POD_GROUPS),
    (QueueState.OPEN, _S): Rule(operation=Operation.SYNC, target=Target.OPEN),
    (QueueState.CLOSED, _O): Rule(operation=Operation.OPEN, target=Target.OPEN),
    (QueueState.CLOSED, _C): Rule(operation=Operation.SYNC, target=Target.CLOSED),
    (QueueState.CLOSED, _S): Rule(operation=Operation.SYNC, target=Target.CLOSED),
    (QueueState.CLOSING, _O): Rule(operation=Operation.OPEN, target=Target.OPEN),
    (QueueState.CLOSING, _C): Rule(operation=Operation.SYNC, target=Target.BY_POD_GROUPS),
    (QueueState.CLOSING, _S): Rule(operation=Operation.SYNC, target=Target.BY_POD_GROUPS),
    (QueueState.UNKNOWN, _O): Rule(operation=Operation.OPEN, target=Target.OPEN),
    (QueueState.UNKNOWN, _C): Rule(operation=Operation.CLOSE, target=Target.BY_POD_GROUPS),
    (QueueState.UNKNOWN, _S): Rule(operation=Operation.SYNC, target=Target.KEEP),
}
CLOSED_OR_CLOSING: Final = frozenset({QueueState.CLOSED, QueueState.CLOSING})


def next_state(current: QueueState, target: Target, pod_groups: int) -> QueueState:
    match target:
        case Target.OPEN:
            return QueueState.OPEN
        case Target.CLOSED:
            return QueueState.CLOSED
        case Target.BY_POD_GROUPS:
            return QueueState.CLOSED if pod_groups == 0 else QueueState.CLOSING
        case Target.KEEP:
            return current


def rule_for(state: QueueState | None, action: Action) -> Rule:
    """The cell for this state and action; a queue without state is Open, as in Volcano."""
    return TRANSITIONS[(state or QueueState.OPEN, action)]
