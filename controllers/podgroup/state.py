"""What a PodGroupWorkflow remembers between inputs, carried whole through continue-as-new."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from models.scheduling import PodGroup
from models.signals.podgroup import CoreGroup, WorkloadPod


class PodGroupRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str = ""
    name: str = ""  # the PodGroup's; "": no pod seen yet
    basis: WorkloadPod | None = None  # the newest pod, which the PodGroup is built from
    waiting: dict[str, WorkloadPod] = Field(default_factory=dict)  # uid → not annotated yet
    upper: dict[str, str] | None = None  # the owners' annotations; None: not read this run
    read_at: datetime | None = None  # when `upper` was read; None: never
    applied: PodGroup | None = None  # as last created or updated; None: not this run
    annotated: int = 0  # pods annotated by this run and the runs it continued
    timer: int = 0  # the idle timer's number: a firing of an older one is stale
    idle_until: datetime | None = None  # None: the idle timer is not armed
    retry_at: datetime | None = None  # None: no failed write waits to be tried again
    # The Kubernetes PodGroup the gang's pods name, as last seen; None: they name none, or it
    # has not been seen yet.
    core: CoreGroup | None = None
