"""What a QueueWorkflow hears and answers: the Queue, its PodGroups, its parent and children,
the open/close updates and its view.

Signal and workflow type names are stored in histories and used by the forwarder: they never
change. Pure: pydantic only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from models.signals import common


class QueueStart(common.Payload):
    """What the forwarder starts a QueueWorkflow with (signal-with-start)."""


class QueueObserved(common.Payload):
    """The Queue as the apiserver holds it now (added, spec or annotations changed, relisted)."""

    queue: dict[str, Any]


class QueueDeleted(common.Payload):
    uid: str


class PodGroupRef(common.Payload):
    """A PodGroup counted in a queue (by its `spec.queue`)."""

    key: str  # "<namespace>/<name>"
    phase: str | None = None  # None: no phase yet (counted as Pending)
    deleted: bool = False


class PodGroupsChanged(common.Payload):
    groups: list[PodGroupRef]


class PodGroupsListed(common.Payload):
    """Every PodGroup aimed at one queue in a full list: one the queue counts and this list
    lacks went while no forwarder watched."""

    keys: list[str] = Field(default_factory=list)  # "<namespace>/<name>"


class ChildQueueObserved(common.Payload):
    """Sent to a parent queue's workflow when one of its children is observed or deleted."""

    name: str
    state: str | None = None  # None: the child has no status.state yet (read as Open)
    closed_by_parent: bool = False
    deleted: bool = False


class ParentStateChanged(common.Payload):
    """Sent by a QueueWorkflow to its children's workflows when its state changes."""

    parent: str
    state: str


class QueueCommand(common.Payload):
    """Input of the open/close updates."""

    reason: str = ""


class QueueCommandResult(common.Payload):
    action: str
    state_before: str
    state_after: str


class QueueView(common.Payload):
    """The `status` query of a QueueWorkflow."""

    name: str
    state: str
    parent: str | None  # None: root
    closed_by_parent: bool
    pod_groups: dict[str, int]  # phase → count
    children: dict[str, str]  # child name → state
    open_waiting_for_parent: bool = False
    backlog: int = 0
    kind: Literal["QueueView"] = "QueueView"


# Workflow type and message names: histories and the forwarder use these strings.
QUEUE_WORKFLOW = "QueueWorkflow"
SIGNAL_QUEUE_OBSERVED = "queue_observed"
SIGNAL_QUEUE_DELETED = "queue_deleted"
SIGNAL_POD_GROUPS_CHANGED = "pod_groups_changed"
SIGNAL_POD_GROUPS_LISTED = "pod_groups_listed"
SIGNAL_CHILD_QUEUE_OBSERVED = "child_queue_observed"
SIGNAL_PARENT_STATE_CHANGED = "parent_state_changed"
