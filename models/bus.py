"""bus.volcano.sh/v1alpha1: the Action and Event vocabularies and the Command object.

Spelled exactly as Volcano spells them, because users write these strings in their policies
and Command CRs, and histories store them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal, get_args

from pydantic import Field

from models.base import ApiModel
from models.meta import ObjectMeta, OwnerReference

GROUP: Final = "bus.volcano.sh"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"


class Action(StrEnum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"
    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


# What a user may write in a policy or a Command aimed at a Job; the rest are internal.
UserJobAction = Literal[
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
]


class Event(StrEnum):
    ANY = "*"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"


# Events a user may name in a policy; PodRunning, OutOfSync and CommandIssued are internal.
UserEvent = Literal[
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
]
USER_EVENTS: Final = tuple(Event(e) for e in get_args(UserEvent))


class Command(ApiModel):
    """A one-shot instruction to a Job or Queue; consumed (deleted) before it is executed."""

    api_version: Literal["bus.volcano.sh/v1alpha1"] = "bus.volcano.sh/v1alpha1"
    kind: Literal["Command"] = "Command"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    action: str | None = Field(default=None, max_length=63)  # None: malformed, never executed
    target: OwnerReference | None = None  # None: nothing to act on; the command is dropped
    reason: str | None = None  # None: no reason given
    message: str | None = None  # None: no message given
