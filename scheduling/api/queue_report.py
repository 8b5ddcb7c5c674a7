"""What a session reports about its queues and PodGroups for monitoring (the shapes).

Volcano's dashboards read per-queue series (`volcano_queue_*`: allocated, requested,
deserved, capacity, share, overused, PodGroups by phase) and scheduling latencies. The session
already holds every one of those numbers in its books, so it hands them over as plain data
(`QueueFigures`, built by `scheduling.framework.queue_report`) and the worker exports them; the
shell keeps no queue arithmetic of its own. `Milestone`s are the moments a PodGroup reaches a
stage of its way from creation to running, for the latency histograms.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api.vectors import EMPTY, Resources


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class QueueFigures(_Frozen):
    """One queue at the session's close, as Volcano's proportion and capacity plugins report
    it: resources are cpu (milli-cores), memory (bytes) and scalars (milli-units), no pods."""

    name: QueueName
    weight: int = 1
    allocated: Resources = EMPTY  # what its (subtree's) tasks hold, this session's included
    request: Resources = EMPTY  # allocated plus pending requests, at session open
    inqueue: Resources = EMPTY  # reservations of admitted jobs not running yet, at close
    deserved: Resources = EMPTY
    capability: Resources | None = None  # spec.capability; None: the queue sets none
    real_capability: Resources = EMPTY  # what it could ever reach
    share: float = 0.0  # its dominant share of deserved (the queue order's key)
    overused: bool = False
    pod_groups: dict[PodGroupPhase, int] = Field(default_factory=dict)  # after the session


class Stage(StrEnum):
    """A step of a PodGroup's way to running, each timed from its creation once."""

    INQUEUE = "Inqueue"  # admitted by enqueue (Pending -> Inqueue)
    PLACED = "Placed"  # its first tasks placed (Volcano's "assumed": e2e job latency)
    BOUND = "Bound"  # written Running: minMember pods bound to their nodes


class Milestone(_Frozen):
    """A PodGroup reached `stage` in this session; `created` is its creationTimestamp."""

    uid: str  # the PodGroup's uid, else its key: what "once per PodGroup" is counted by
    job: JobKey
    queue: QueueName
    stage: Stage
    created: datetime
