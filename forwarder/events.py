"""What flows between the forwarder's stages: watch events in, addressed signals out.

Watch threads produce `Observed` and `Relisted`; the router turns them into `PodUpdate`,
`Signal` and `ConsumeCommand`; the coalescer batches pod updates into `Signal`s; the
signaller sends `Signal`s. Plain frozen data, no I/O, so every stage between the watch and
the Temporal client is testable without a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from models import keys, signals

Obj = Mapping[str, Any]  # a Kubernetes object exactly as the apiserver sent it (camelCase JSON)
WatchType = Literal["ADDED", "MODIFIED", "DELETED"]


class Kind(StrEnum):
    """The resources the forwarder lists and watches."""

    JOB = "jobs"
    POD = "pods"
    POD_GROUP = "podgroups"
    COMMAND = "commands"


@dataclass(frozen=True)
class Observed:
    """One watch event for one object."""

    kind: Kind
    type: WatchType
    obj: Obj


@dataclass(frozen=True)
class Relisted:
    """A full list: the complete current set of objects of `kind` (initial list or after 410)."""

    kind: Kind
    objects: Sequence[Obj]


Inbound = Observed | Relisted


@dataclass(frozen=True)
class JobRef:
    """The Volcano Job a message is addressed to; its workflow id comes from models.keys."""

    namespace: str
    name: str

    @property
    def key(self) -> keys.JobKey:
        return keys.job_key(self.namespace, self.name)

    @property
    def workflow_id(self) -> str:
        return keys.job_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class Signal:
    """One signal to one JobWorkflow; `start`: signal-with-start rather than a plain signal."""

    job: JobRef
    name: str  # one of models.signals.SIGNAL_*
    payload: signals.Payload
    start: bool = False


@dataclass(frozen=True)
class PodUpdate:
    """The latest snapshot of one pod, waiting to be coalesced into a PodsChanged batch."""

    job: JobRef
    pod: signals.PodSnapshot


@dataclass(frozen=True)
class ConsumeCommand:
    """Delete the Command (namespace/name, exactly this uid), then, and only then, send `signal`."""

    namespace: str
    name: str
    uid: str
    signal: Signal


Outbound = Signal | PodUpdate | ConsumeCommand
