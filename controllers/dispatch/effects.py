"""What only a DispatchWorkflow's shell does on its core's behalf; with `controllers.effects`,
the closed union of frozen records the shell carries out in order. The remote ones name the
copy (cluster and generation): the shell adds the manager Job's namespace, name and uid, which
fence every write to a worker cluster."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controllers import effects as fx
from controllers.dispatch.results import EventMark, RemoteEvent
from models.dispatch import RemoteCopy
from models.signals.common import CommandIssued
from models.vcjob import Job


class ProbeClusters(fx.Effect):
    kind: Literal["ProbeClusters"] = "ProbeClusters"
    clusters: list[str]
    queue: str = ""  # the job's queue, whose figures each cluster reports ("": none asked)


class CreateCopy(fx.Effect):
    """Create-if-absent of the copy of `generation` on `cluster`, with a fresh lease."""

    kind: Literal["CreateCopy"] = "CreateCopy"
    target: RemoteCopy
    job: Job
    lease_seconds: int


class UpdateCopy(fx.Effect):
    """The manager Job's spec, changed since the copy was made, onto the copy (fenced as a
    delete is; the copy keeps the queue it runs in there)."""

    kind: Literal["UpdateCopy"] = "UpdateCopy"
    target: RemoteCopy
    job: Job


class FollowCopy(fx.Effect):
    """One long poll of the copy, renewing its lease while it runs (`renew`): it answers when
    the copy's status differs from `known` (a digest), or when its time is up."""

    kind: Literal["FollowCopy"] = "FollowCopy"
    target: RemoteCopy
    known: str
    events: EventMark
    renew: bool
    lease_seconds: int
    move_on_drain: bool = False  # answer as soon as the copy's cluster is drained


class StopFollowing(fx.Effect):
    kind: Literal["StopFollowing"] = "StopFollowing"


class DeleteCopy(fx.Effect):
    """The fenced delete: only a Job of that name with this origin and the copy's generation."""

    kind: Literal["DeleteCopy"] = "DeleteCopy"
    target: RemoteCopy
    why: str


class SendCommand(fx.Effect):
    """A bus.volcano.sh Command for the copy, created on its cluster."""

    kind: Literal["SendCommand"] = "SendCommand"
    target: RemoteCopy
    command: CommandIssued
    serial: int  # names it: a retried create finds the Command it made


class WriteStatus(fx.Effect):
    """The manager Job's status, replaced whole (the copy's, as written there)."""

    kind: Literal["WriteStatus"] = "WriteStatus"
    status: dict[str, object]
    why: str


class MarkDispatched(fx.Effect):
    """`caldera.dev/dispatched-to` on the manager's Job ("": dispatching, no cluster yet)."""

    kind: Literal["MarkDispatched"] = "MarkDispatched"
    cluster: str


class MarkLeftBehind(fx.Effect):
    """`caldera.dev/left-behind` on the manager's Job: every stale copy given up so far."""

    kind: Literal["MarkLeftBehind"] = "MarkLeftBehind"
    copies: list[str]  # "<cluster>/<generation>"


class MirrorEvents(fx.Effect):
    kind: Literal["MirrorEvents"] = "MirrorEvents"
    cluster: str
    events: list[RemoteEvent] = Field(default_factory=list)


Own = (
    ProbeClusters
    | CreateCopy
    | UpdateCopy
    | FollowCopy
    | StopFollowing
    | DeleteCopy
    | SendCommand
    | WriteStatus
    | MarkDispatched
    | MarkLeftBehind
    | MirrorEvents
    | fx.DeleteJob
)
AnyEffect = Own | fx.Shared
