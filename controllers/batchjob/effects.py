"""What the BatchJobWorkflow shell does on the core's behalf: a closed union of frozen records.

Effects run in order, one `match` in the shell. Outcomes a later decision needs (which pods
were created, which finalizers were removed, an action that gave up) come back as inputs.
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


class NewPod(Effect):
    """One pod to create from the Job's template."""

    name: str
    index: int | None = None  # None: a NonIndexed Job's pod
    failure_count: int | None = None  # None: backoffLimitPerIndex is not used
    ignored_failure_count: int = 0


class CreatePods(Effect):
    kind: Literal["CreatePods"] = "CreatePods"
    job: dict[str, Any]
    pods: list[NewPod]


class DeletePods(Effect):
    """Delete pods; `keep_finalizers`: they are counted as failed first (the Job is failing),
    otherwise their finalizer goes first so they never count (surplus, suspend)."""

    kind: Literal["DeletePods"] = "DeletePods"
    names: list[str]
    keep_finalizers: bool
    why: str


class RemoveFinalizers(Effect):
    kind: Literal["RemoveFinalizers"] = "RemoveFinalizers"
    pods: dict[str, str]  # name → uid
    why: str


class WriteStatus(Effect):
    kind: Literal["WriteStatus"] = "WriteStatus"
    status: dict[str, Any]  # the whole status, as the apiserver takes it
    summary: str


class StartTimer(Effect):
    kind: Literal["StartTimer"] = "StartTimer"
    key: str
    fires_at: datetime
    summary: str


class CancelTimer(Effect):
    kind: Literal["CancelTimer"] = "CancelTimer"
    key: str


class PhaseChanged(Effect):
    """The phase-like summary of the conditions changed (search attribute, UI details)."""

    kind: Literal["PhaseChanged"] = "PhaseChanged"
    phase: str
    previous: str
    reason: str


class EnsurePodGroup(Effect):
    """The PodGroup Caldera's gang scheduler places the Job's pods through."""

    kind: Literal["EnsurePodGroup"] = "EnsurePodGroup"
    job: dict[str, Any]


class StartOver(Effect):
    """A new Job under the same name: continue as new with a fresh state for it."""

    kind: Literal["StartOver"] = "StartOver"
    job: dict[str, Any]


AnyEffect = (
    CreatePods
    | DeletePods
    | RemoveFinalizers
    | WriteStatus
    | RecordEvent
    | StartTimer
    | CancelTimer
    | PhaseChanged
    | DeleteJob
    | Finish
    | StartOver
    | EnsurePodGroup
    | BindPlacements
    | MarkUnschedulable
    | TellScheduler
)
