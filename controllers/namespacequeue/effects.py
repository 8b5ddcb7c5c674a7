"""What only a NamespaceQueue's shell does on its core's behalf; with `controllers.effects`
(Events, the end of the workflow), the closed union of frozen records the shell executes."""

from __future__ import annotations

from typing import Any, Literal

from controllers import effects as fx
from models.scheduling import QueueState


class ReadSurroundings(fx.Effect):
    """Read its namespace's NamespaceQueues and the cluster Queues it hangs under; the result
    comes back as `SurroundingsRead`."""

    kind: Literal["ReadSurroundings"] = "ReadSurroundings"
    namespace: str
    name: str


class WriteNamespaceQueueStatus(fx.Effect):
    """state, conditions and counters, merged into the status subresource (`allocated` and
    `reservation` are the scheduler's, left alone)."""

    kind: Literal["WriteNamespaceQueueStatus"] = "WriteNamespaceQueueStatus"
    namespace: str
    name: str
    status: dict[str, Any]


class StateChanged(fx.Effect):
    kind: Literal["StateChanged"] = "StateChanged"
    state: QueueState
    previous: QueueState | None  # None: first state of the queue
    reason: str


Own = ReadSurroundings | WriteNamespaceQueueStatus | StateChanged
AnyEffect = Own | fx.RecordEvent | fx.Finish
