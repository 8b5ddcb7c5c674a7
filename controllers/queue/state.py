"""QueueWorkflow state: one pydantic model, built in `@workflow.init`, carried whole through
continue-as-new. Pure: no Temporal or Kubernetes import.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import Field

from controllers.record import Record
from models.scheduling import ROOT_QUEUE, Queue, QueueState
from models.signals import queue as queue_signals

_COUNTED = ("Pending", "Running", "Unknown", "Inqueue", "Completed")


def count_phases(pod_groups: Mapping[str, str]) -> dict[str, int]:
    """A queue's status counters (a cluster Queue's or a NamespaceQueue's): PodGroups by phase,
    an unknown phase counted as Pending."""
    phases = Counter(p if p in _COUNTED else "Pending" for p in pod_groups.values())
    return {phase.lower(): phases[phase] for phase in _COUNTED}


def with_refs(
    pod_groups: Mapping[str, str], refs: Iterable[queue_signals.PodGroupRef]
) -> dict[str, str]:
    """A queue's PodGroups ("<ns>/<name>" → phase) after the forwarder's refs."""
    groups = dict(pod_groups)
    for ref in refs:
        if ref.deleted:
            groups.pop(ref.key, None)
        else:
            groups[ref.key] = ref.phase or "Pending"
    return groups


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
        return count_phases(self.pod_groups)
