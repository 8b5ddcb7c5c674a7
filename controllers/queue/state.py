"""QueueWorkflow state: one pydantic model, built in `@workflow.init`, carried whole through
continue-as-new. Pure: no Temporal or Kubernetes import.
"""

from __future__ import annotations

from collections import Counter

from pydantic import Field

from controllers.record import Record
from models.scheduling import ROOT_QUEUE, Queue, QueueState

_COUNTED = ("Pending", "Running", "Unknown", "Inqueue", "Completed")


class Child(Record):
    state: QueueState = QueueState.OPEN
    closed_by_parent: bool = False


class QueueRecord(Record):
    """All a QueueWorkflow remembers; carried whole through continue-as-new."""

    name: str = ""
    uid: str = ""  # the object's, as last observed ("": not observed yet)
    queue: Queue | None = None  # None: not observed yet
    state: QueueState | None = None  # None: never written (Open)
    closed_by_parent: bool = False
    parent_state: QueueState | None = None  # None: not told yet (taken as Open)
    children: dict[str, Child] = Field(default_factory=dict)
    pod_groups: dict[str, str] = Field(default_factory=dict)  # "<ns>/<name>" → phase
    counts_written: dict[str, int] = Field(default_factory=dict)
    open_waiting: bool = False  # an OpenQueue that waits for the parent to open
    deleted: bool = False

    @property
    def parent(self) -> str | None:
        """None: this is the root queue."""
        if self.name == ROOT_QUEUE:
            return None
        spec = self.queue.spec if self.queue else None
        return (spec.parent if spec else None) or ROOT_QUEUE

    @property
    def current(self) -> QueueState:
        return self.state or QueueState.OPEN

    def holding(self) -> int:
        """What keeps a closing queue Closing: its own PodGroups and, beyond Volcano (which
        looks at a queue's own PodGroups only), every child not Closed yet, so a parent closes
        only once its whole subtree has drained."""
        children = sum(1 for c in self.children.values() if c.state != QueueState.CLOSED)
        return len(self.pod_groups) + children

    def counts(self) -> dict[str, int]:
        phases = Counter(p if p in _COUNTED else "Pending" for p in self.pod_groups.values())
        return {phase.lower(): phases[phase] for phase in _COUNTED}
