"""BatchJobWorkflow state: one pydantic model, built in `@workflow.init`, carried whole through
continue-as-new. Pure: no Temporal or Kubernetes import.

What the built-in controller keeps in memory and loses on a restart (the pod back-off record,
expectations, the finalizers it is removing, its requeue timers) lives here, durably.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from controllers.record import ObservedJob, Record
from models.batchv1 import BatchJob, BatchJobStatus
from models.meta import ObjectMeta


class ContainerExit(Record):
    """A terminated container: what podFailurePolicy's onExitCodes rules read."""

    name: str
    exit_code: int
    init: bool = False


class PodRecord(Record):
    """One pod of the Job: the forwarder's latest snapshot, or a pod just created (uid None
    until it is observed: the controller's creation expectation)."""

    name: str
    uid: str | None = None  # None: created by us, not observed yet
    phase: str = "Pending"
    ready: bool = False
    ready_since: datetime | None = None  # None: not ready
    node: str | None = None  # None: not bound to a node yet
    deleting: bool = False  # has a deletionTimestamp, or its deletion was issued
    finalizer: bool = True  # still carries the job-tracking finalizer
    index: int | None = None  # None: no (valid) completion index annotation
    failure_count: int = 0  # the job-index-failure-count annotation
    ignored_failure_count: int = 0  # the job-index-ignored-failure-count annotation
    exits: tuple[ContainerExit, ...] = ()
    conditions: dict[str, str] = Field(default_factory=dict)  # type → status, in status order
    max_restarts: int = 0  # highest restartCount of a regular container
    sidecar_restarts: int = 0  # highest restartCount of a restartable init container
    restarts: int = 0  # all restarts summed (restartPolicy OnFailure's backoffLimit)
    created_at: datetime | None = None  # None: not observed yet
    finished_at: datetime | None = None  # None: not finished (the controller's finish time)
    issued_at: datetime | None = None  # None: not created by this workflow
    heard: bool = False  # a snapshot of it arrived (False: known from its creation only)

    @property
    def active(self) -> bool:
        return self.phase not in ("Succeeded", "Failed") and not self.deleting

    @property
    def terminating(self) -> bool:
        return self.phase not in ("Succeeded", "Failed") and self.deleting

    @property
    def observed(self) -> bool:
        return self.uid is not None


class Backoff(Record):
    """The pod-failure back-off record: failures since the last success, and the last one."""

    failures: int = 0
    last_failure: datetime | None = None  # None: no failure since the last success


class KubeGang(Record):
    """The Kubernetes Workload and PodGroup a Job with `spec.scheduling` is scheduled through
    (`controllers.batchjob.workload`)."""

    workload: str
    pod_group: str
    uid: str | None = None  # the PodGroup's; None: not ensured yet (no pod is made before)
    min_count: int | None = None  # the gang minCount both carry; None: basic, or not known


class BatchJobRecord(ObservedJob):
    job: BatchJob | None = None  # None: the Job has not been observed yet
    status: BatchJobStatus = Field(default_factory=BatchJobStatus)  # what the Job should say
    written: BatchJobStatus | None = None  # None: not known to match what the apiserver holds
    pods: dict[str, PodRecord] = Field(default_factory=dict)  # by pod name
    removing: tuple[str, ...] = ()  # uids whose finalizer removal was issued, not yet seen
    backoff: Backoff = Field(default_factory=Backoff)
    pod_seq: int = 0  # pods ever named, so every pod name is new and retries find their pod
    unique_names: bool = False  # names one to one in pod_seq; False: hashed, as first shipped
    api_failures: int = 0  # consecutive failed API actions (the controller's rate limiter)
    timers: dict[str, datetime] = Field(default_factory=dict)  # armed timer key → fires at
    ttl_expired: bool = False
    deleted: bool = False
    pod_group: bool = False  # the gang scheduler's PodGroup was ensured (gang-scheduled Jobs)
    follow_scheduling: bool = False  # spec.scheduling is followed (the shell's patch said so)
    kube_gang: KubeGang | None = None  # None: its pods name no Kubernetes PodGroup

    @property
    def meta(self) -> ObjectMeta | None:
        return self.job.metadata if self.job else None

    def pod_counts(self) -> str:
        """The status's pod counts as the UI's current details show them; zeros left out
        but for active."""
        s = self.status
        active = f"{s.active or 0} active" + (f" ({s.ready} ready)" if s.ready else "")
        rest = [("succeeded", s.succeeded), ("failed", s.failed), ("terminating", s.terminating)]
        return ", ".join([active] + [f"{n} {word}" for word, n in rest if n])
