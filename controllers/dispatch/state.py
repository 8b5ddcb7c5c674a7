"""The DispatchWorkflow's state: one frozen model, built in `@workflow.init`, carried whole
through continue-as-new. Where the job went, what is left to clean, what was mirrored. Pure.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from controllers.dispatch.results import EventMark
from controllers.record import ObservedJob, Record
from models.dispatch import DispatchSettings, RemoteCopy
from models.meta import ObjectMeta
from models.signals.common import CommandIssued
from models.signals.dispatch import DispatchObserved
from models.vcjob import Job

# The phases after which a job never moves: it ran to an end on its cluster.
FINISHED = frozenset({"Completed", "Failed", "Terminated", "Aborted"})


class Stale(Record):
    """A copy this job no longer runs as: an older generation, or any once the manager's Job
    was deleted. Deleted (fenced) when its cluster answers, before anything else there."""

    target: RemoteCopy
    why: str  # "cluster lost", "fenced", "job deleted": the story's words
    misses: int = 0  # failed attempts in a row (the retry's backoff)
    # The first failed delete of this copy: the stale-copy deadline counts from it (None: the
    # last delete, if any, reached its cluster).
    silent_since: datetime | None = None


class DispatchState(ObservedJob):
    job: Job | None = None  # the manager's Job as last observed, status left out; None: not yet
    settings: DispatchSettings | None = None  # None: not observed yet
    generation: int = 0  # the latest generation dispatched (0: never)
    current: RemoteCopy | None = None  # the copy the job runs as; None: none (waiting, moving)
    stale: list[Stale] = Field(default_factory=list)
    refused: dict[str, str] = Field(default_factory=dict)  # cluster → why no copy can go there
    probing: bool = False  # a probe is out: its answer chooses
    waiting: str = ""  # why no cluster was chosen, as the manager's Job says ("": not waiting)
    phase: str = ""  # the copy's phase as last mirrored ("": none yet)
    digest: str = ""  # of the status last written on the manager's Job ("": none)
    resource_version: str = ""  # the copy's, as last followed
    spec_given: str = ""  # digest of the manager Job's spec the current copy was given ("": none)
    events: EventMark = Field(default_factory=EventMark)
    unreachable_since: datetime | None = None  # None: the current copy's cluster answers
    lost_at: datetime | None = None  # when the lost timer fires; None: not armed
    misses: int = 0  # failed reaches of the current cluster in a row (the retry's backoff)
    commands: list[CommandIssued] = Field(default_factory=list)  # not delivered yet
    commands_sent: int = 0  # Commands created on worker clusters (each one's serial)
    ended_here: str = ""  # a phase set on the manager with no copy (aborted while waiting)
    ttl_at: datetime | None = None  # when ttlSecondsAfterFinished deletes the Job; None: not armed
    deleted: bool = False  # the manager's Job is gone: only the cleanup is left
    successor: DispatchObserved | None = None  # a new Job of the same name, after the cleanup
    # Stale copies given up once their cluster stayed silent past the queue's stale-copy
    # deadline: "<cluster>/<generation>", as `caldera.dev/left-behind` on the Job says.
    left_behind: list[str] = Field(default_factory=list)

    @property
    def meta(self) -> ObjectMeta | None:
        return self.job.metadata if self.job else None

    @property
    def finished(self) -> bool:
        """The job reached an end (mirrored, or set here): it is never moved again."""
        return self.phase in FINISHED or bool(self.ended_here)

    @property
    def lost_after(self) -> int:
        return self.settings.lost_after_seconds if self.settings else 0

    def stale_on(self, cluster: str) -> bool:
        return any(s.target.cluster == cluster for s in self.stale)

    def progress(self) -> str:
        """The UI's current details after the phase: where the job runs, what waits."""
        parts = []
        if self.current is not None:
            parts.append(f"on {self.current.cluster} (generation {self.current.generation})")
        if self.unreachable_since is not None:
            parts.append("cluster unreachable")
        if self.stale:
            parts.append(f"{len(self.stale)} stale copies to delete")
        return ", ".join(parts)
