"""What the DispatchWorkflow's activities report back to its core: a probe of the clusters,
a copy made, followed, deleted, a Command sent. Each is handed in as an input (as
`controllers.outcomes` are), so the core decides what follows and the history holds every
answer. A cluster that cannot be reached is an answer here (`reachable=False`), not an error:
it is what failover decides on, and an error would only be retried.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from controllers.outcomes import Outcome
from controllers.record import Record
from models.dispatch import ClusterStatus, RemoteState
from models.signals.common import CommandIssued


class RemoteEvent(Record):
    """One Event of a copy on its worker cluster, as mirrored onto the manager's Job."""

    name: str  # the Event object's name, which tells one Event from another
    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str
    last_seen: datetime | None = None  # None: the Event carries no time at all


class EventMark(Record):
    """How far the copy's Events were mirrored: the latest time seen, and the Events seen at
    that very time (Event times have a second's grain: two may share one)."""

    since: datetime | None = None  # None: none mirrored yet
    seen: list[str] = Field(default_factory=list)


class Reach(Outcome):
    """An answer from one copy's cluster: which copy, and whether the cluster answered."""

    cluster: str
    generation: int
    reachable: bool = True
    error: str = ""  # why not reachable ("": it was)


class Probed(Outcome):
    kind: Literal["Probed"] = "Probed"
    statuses: list[ClusterStatus]
    # The choice draws among the clusters that fit (`choose.draw`); False: the best ranked
    # wins, as in runs recorded before the draw (the shell sets it, as a patch).
    spread: bool = False


class CopyMade(Reach):
    """The create-if-absent of a copy: made now, found made before (the same origin and
    generation: a retried or replayed create), or refused by another Job of that name."""

    kind: Literal["CopyMade"] = "CopyMade"
    uid: str = ""  # the copy's uid ("": not made)
    created: bool = False  # False with a uid: it existed already
    found_origin: str = ""  # a Job of that name that is not this copy: its origin annotation
    found_generation: int = 0  # ... and its generation (0: none)
    found_uid: str = ""
    found_deleting: bool = False  # ... already being deleted (its pods going): wait, then create


class Followed(Reach):
    """One long poll of a copy: its status when it changed (or the poll's time was up), and
    the Events it got since the mark."""

    kind: Literal["Followed"] = "Followed"
    remote: RemoteState | None = None  # None: the cluster did not answer
    events: list[RemoteEvent] = Field(default_factory=list)
    mark: EventMark = Field(default_factory=EventMark)
    lease_until: datetime | None = None  # the copy's lease as read (None: none, or unread)
    drained: bool = False  # its cluster is drained (asked only with `move_on_drain`)


class CopyDeleted(Reach):
    """The fenced delete of a copy: deleted, absent already, or kept because the Job of that
    name is not that copy (another origin or generation)."""

    kind: Literal["CopyDeleted"] = "CopyDeleted"
    outcome: Literal["deleted", "absent", "kept"] = "deleted"
    phase: str = ""  # the copy's phase when it was deleted ("": none, or absent)
    found_generation: int = 0  # kept: the generation the Job there belongs to (0: none)
    # The stale-copy deadline applies (`following.deleted`); False: a copy whose cluster
    # never answers is tried for ever, as in runs recorded before it (the shell sets it, as
    # a patch).
    deadline: bool = False


class CopyUpdated(Reach):
    """The manager Job's spec onto the copy: updated, the same already, or not done because
    the Job there is gone or not this copy (the next poll tells), or refused there."""

    kind: Literal["CopyUpdated"] = "CopyUpdated"
    outcome: Literal["updated", "unchanged", "absent", "kept", "refused"] = "updated"
    refused: str = ""  # why the cluster refused it ("": it did not)


class CommandSent(Reach):
    kind: Literal["CommandSent"] = "CommandSent"
    command: CommandIssued


class Resumed(Outcome):
    """A run begins with a state (continued as new, or started over): carry on from it."""

    kind: Literal["Resumed"] = "Resumed"


AnyResult = Probed | CopyMade | CopyUpdated | Followed | CopyDeleted | CommandSent | Resumed
