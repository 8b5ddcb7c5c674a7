"""NamespaceQueueWorkflow state: one pydantic model, carried whole through continue-as-new.
Pure: no Temporal or Kubernetes import."""

from __future__ import annotations

from pydantic import Field

from controllers.namespacequeue.hierarchy import Surroundings
from controllers.queue.state import count_phases
from controllers.record import Record
from models import queue_refs
from models.meta import Condition
from models.namespacequeue import NamespaceQueue
from models.scheduling import QueueState

# PodGroups that keep a closing queue Closing: their pods hold resources (the running ones,
# the admitted ones, and those with some pods running). Pending ones wait, never to start.
HOLDING = frozenset({"Running", "Inqueue", "Unknown"})


class Written(Record):
    """The status fields the controller owns, as last written (or found on the object)."""

    state: QueueState | None = None  # None: none yet
    conditions: tuple[Condition, ...] = ()
    counts: dict[str, int] = Field(default_factory=dict)


class NamespaceQueueRecord(Record):
    """All a NamespaceQueueWorkflow remembers."""

    namespace: str = ""
    name: str = ""
    uid: str = ""  # the object's, as last observed ("": not observed yet)
    queue: NamespaceQueue | None = None  # None: not observed yet
    surroundings: Surroundings | None = None  # None: not read yet
    state: QueueState | None = None  # None: never written (Open)
    pod_groups: dict[str, str] = Field(default_factory=dict)  # "<ns>/<name>" → phase
    written: Written | None = None  # None: nothing written or observed yet
    deleted: bool = False

    @property
    def current(self) -> QueueState:
        return self.state or QueueState.OPEN

    @property
    def parent(self) -> str:
        """The effective `spec.parent` (cluster/default when unset)."""
        spec = self.queue.spec if self.queue else None
        return (spec.parent if spec else None) or queue_refs.DEFAULT_PARENT

    @property
    def id(self) -> str:
        return queue_refs.namespace_queue_id(self.namespace, self.name)

    def holding(self) -> int:
        return sum(1 for phase in self.pod_groups.values() if phase in HOLDING)

    def counts(self) -> dict[str, int]:
        return count_phases(self.pod_groups)
