"""What one session decided, as plain data for the scheduler shell to act on.

Placements are assumed by the SchedulerWorkflow and bound by the next session's activity (or
`bind_session`, for gangs with volumes to bind); evictions are pods the session activity
deletes so that a starving gang can run; phase updates and conditions are written to the
PodGroups, pod conditions to the pods, allocated totals to the queues. Everything is sorted
or in decision order, so two runs over the same snapshot give equal results.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from models.signals.scheduler import ClaimPlan
from scheduling.api.backlog import Backlog
from scheduling.api.queue_report import QueueFigures
from scheduling.api.snapshot import NodeName, PodKey
from scheduling.api.vectors import Resources

SCHEDULED_REASON: Final = "tasks in gang are ready to be scheduled"  # Volcano puts it in reason
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"


class ConditionType(StrEnum):
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"


class PodReason(StrEnum):
    """PodScheduled=False reasons the scheduler writes."""

    SCHEDULABLE = "Schedulable"
    UNSCHEDULABLE = "Unschedulable"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Placement(_Frozen):
    pod: PodKey
    node: NodeName
    job: JobKey
    claims: tuple[ClaimPlan, ...] = ()  # its ResourceClaims: allocate, reserve, then bind


class EvictReason(StrEnum):
    """Why the scheduler evicts a running pod (the reason Volcano passes to Evict)."""

    RECLAIM = "reclaim"  # another queue takes back its deserved share
    PREEMPT = "preempt"  # a higher-priority job of the same queue needs the room
    GANG_RECLAIM = "gangreclaim"  # reclaim, whole victim gangs for a whole starving gang
    GANG_PREEMPT = "gangpreempt"  # preempt, whole victim gangs for a whole starving gang


class Eviction(_Frozen):
    """A running pod to delete so a starving gang can run (reclaim, preempt)."""

    pod: PodKey
    uid: str  # the victim's UID: a pod recreated under the same name is not the victim
    job: JobKey
    node: NodeName
    reason: EvictReason
    preemptor: PodKey  # the pending pod the room is for
    message: str


class PhaseUpdate(_Frozen):
    job: JobKey
    old: PodGroupPhase
    new: PodGroupPhase


class JobCondition(_Frozen):
    """A PodGroup condition; the shell adds transitionID and lastTransitionTime."""

    job: JobKey
    type: ConditionType
    reason: str
    message: str


class PodCondition(_Frozen):
    pod: PodKey
    reason: PodReason
    message: str
    nominated_node: str = ""  # a pipelined pod's node, waiting there for room being released


class SessionResult(_Frozen):
    placements: tuple[Placement, ...] = ()  # in the order they were committed
    evictions: tuple[Eviction, ...] = ()  # in the order they were committed
    phase_updates: tuple[PhaseUpdate, ...] = ()  # by job key
    conditions: tuple[JobCondition, ...] = ()  # by job key
    pod_conditions: tuple[PodCondition, ...] = ()  # by pod key
    queue_allocated: dict[QueueName, Resources] = Field(default_factory=dict)  # rolled up
    # Each queue's waiting jobs in position order, with why they wait (`run_session` adds it).
    backlog: Backlog = Field(default_factory=Backlog)
    # Each queue's figures for Volcano's queue metrics (`run_session` adds them).
    queues: tuple[QueueFigures, ...] = ()  # by name

    @property
    def node_of(self) -> dict[PodKey, NodeName]:
        return {p.pod: p.node for p in self.placements}

    @property
    def why_not(self) -> dict[JobKey, str]:
        """The Unschedulable message of every job that got one."""
        return {c.job: c.message for c in self.conditions if c.type is ConditionType.UNSCHEDULABLE}
