"""What the JobWorkflow shell does on the core's behalf: a closed union of frozen records.

Each effect is executed in order by one `match` in the shell; an outcome that matters to a
later decision comes back as an input (`ActionFailed`), never decided inside the shell.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from controllers.effects import BindPlacements as BindPlacements
from controllers.effects import DeleteJob as DeleteJob
from controllers.effects import Effect as Effect
from controllers.effects import Finish as Finish
from controllers.effects import MarkUnschedulable as MarkUnschedulable
from controllers.effects import RecordEvent as RecordEvent
from controllers.effects import TellScheduler as TellScheduler
from controllers.effects import handle_placements as handle_placements
from models.vcjob import JobPhase, JobStatus


class WriteStatus(Effect):
    kind: Literal["WriteStatus"] = "WriteStatus"
    status: JobStatus


class EnsurePodGroup(Effect):
    kind: Literal["EnsurePodGroup"] = "EnsurePodGroup"
    job: dict[str, Any]


class DeletePodGroup(Effect):
    kind: Literal["DeletePodGroup"] = "DeletePodGroup"
    name: str


class EnsurePlugins(Effect):
    kind: Literal["EnsurePlugins"] = "EnsurePlugins"
    job: dict[str, Any]


class RemovePlugins(Effect):
    kind: Literal["RemovePlugins"] = "RemovePlugins"
    job: dict[str, Any]


class EnsureVolumes(Effect):
    kind: Literal["EnsureVolumes"] = "EnsureVolumes"
    job: dict[str, Any]


class CreatePods(Effect):
    kind: Literal["CreatePods"] = "CreatePods"
    job: dict[str, Any]
    version: int
    retry_count: int
    pods: list[tuple[str, int]]  # (task, index), in creation order
    scheduler_override: str | None = None  # None: the job's or template's scheduler


class DeletePods(Effect):
    kind: Literal["DeletePods"] = "DeletePods"
    names: list[str]
    why: str


class StartTimer(Effect):
    kind: Literal["StartTimer"] = "StartTimer"
    key: str
    timer: int
    fires_at: datetime
    summary: str


class CancelTimer(Effect):
    kind: Literal["CancelTimer"] = "CancelTimer"
    key: str


class PhaseChanged(Effect):
    kind: Literal["PhaseChanged"] = "PhaseChanged"
    phase: JobPhase
    previous: JobPhase | None  # None: first phase of the job
    reason: str


class StartOver(Effect):
    """A new Job under the same name: continue as new with a fresh state for it."""

    kind: Literal["StartOver"] = "StartOver"
    job: dict[str, Any]


AnyEffect = (
    WriteStatus
    | EnsurePodGroup
    | DeletePodGroup
    | EnsurePlugins
    | RemovePlugins
    | EnsureVolumes
    | CreatePods
    | DeletePods
    | RecordEvent
    | StartTimer
    | CancelTimer
    | PhaseChanged
    | DeleteJob
    | Finish
    | StartOver
    | BindPlacements
    | MarkUnschedulable
    | TellScheduler
)
