"""Inputs and results of the Kubernetes activities: one model each, owned by Caldera."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from models import batchv1, vcjob
from models.signals import scheduler as scheduler_signals
from scheduling.api.backlog import Backlog

NAMESPACE_GONE: Final = "NamespaceGone"  # an activity's error type: the namespace is going


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JobInput(Message):
    """Activities that act for a whole Volcano Job get the Job as last observed."""

    job: vcjob.Job


class EnsurePodGroupInput(JobInput):
    look_up: bool = False  # see `controllers.job.effects.EnsurePodGroup`


class BatchJobInput(Message):
    """Activities that act for a whole batch/v1 Job get the Job as last observed."""

    job: batchv1.BatchJob


class CreatePodsInput(Message):
    job: vcjob.Job
    version: int
    retry_count: int
    pods: list[tuple[str, int]]  # (task, index)
    scheduler_override: str | None = None  # None: the job's or template's scheduler
    pod_group: str | None = None  # None: the job's own `<job>-<uid>`


class CreatePodsResult(Message):
    created: list[str]
    existing: list[str]


class PodsInput(Message):
    """Pods of one namespace, by name (to delete, or to check)."""

    namespace: str
    names: list[str]


class CheckPodsResult(Message):
    absent: list[str]  # the names the apiserver has no pod for


class DeletePodsResult(Message):
    deleted: list[str]
    gone: list[str]


class PodGroupInput(Message):
    namespace: str
    name: str


class WriteStatusInput(Message):
    namespace: str
    name: str
    status: vcjob.JobStatus


class RecordEventInput(Message):
    namespace: str  # for a cluster-scoped object: the namespace the Event is written in
    name: str
    uid: str
    type: str
    reason: str
    message: str
    api_version: str = "batch.volcano.sh/v1alpha1"
    kind: str = "Job"


class QueueStatusInput(Message):
    name: str
    status: dict[str, Any]


class PatchQueueInput(Message):
    name: str
    closed_by_parent: bool | None = None  # None: leave the annotation alone
    parent: str | None = None  # None: leave spec.parent alone


class DeleteJobInput(Message):
    namespace: str
    name: str
    uid: str


class Done(Message):
    """A result with nothing to report beyond success."""

    ok: bool = True


class VolumesResult(Done):
    """The claim of each `spec.volumes[i]`, as the Job's spec now names it. A `Done` too: a run
    that began before the names were reported recorded `ensure_volumes` answering `Done`."""

    claims: list[str] = []


# -- one decision's short writes of a Job, as one local activity (activities.controllers.writes) --


class WriteStatusStep(Message):
    activity: Literal["write_job_status"] = "write_job_status"  # the call it stands for
    input: WriteStatusInput


class EnsurePodGroupStep(Message):
    activity: Literal["ensure_pod_group"] = "ensure_pod_group"
    input: EnsurePodGroupInput


class DeletePodGroupStep(Message):
    activity: Literal["delete_pod_group"] = "delete_pod_group"
    input: PodGroupInput


class CreatePodsStep(Message):
    activity: Literal["create_pods"] = "create_pods"
    input: CreatePodsInput


class DeletePodsStep(Message):
    activity: Literal["delete_pods"] = "delete_pods"
    input: PodsInput


WriteStep = Annotated[
    WriteStatusStep | EnsurePodGroupStep | DeletePodGroupStep | CreatePodsStep | DeletePodsStep,
    Field(discriminator="activity"),
]


class WritesInput(Message):
    steps: list[WriteStep]  # in the order the decision's effects came


class StepOutcome(Message):
    """What one step came to, as its own activity would have ended."""

    error: str = ""  # "": done; else the error its own activity would have failed with
    namespace_gone: bool = False  # the error says the namespace is going (no step runs after)
    created: CreatePodsResult | None = None  # a pod creation's result; None: not one, or failed
    deleted: DeletePodsResult | None = None  # a pod deletion's result; None: not one, or failed


class WritesResult(Message):
    # One per step carried out, in order; fewer than the steps when the namespace went.
    outcomes: list[StepOutcome]


class WritesFailed(Message):
    """The details of an attempt that failed with a step's retryable error: which step, and
    what the steps before it came to (the shell hands back that step's failure alone once
    the attempts run out, and goes on after it)."""

    step: int
    outcomes: list[StepOutcome]


class Placement(Message):
    pod: str
    uid: str = ""  # "" : do not pin the pod's UID in the Binding
    node: str


class BindPodsInput(Message):
    namespace: str
    placements: list[Placement]


class BindPodsResult(Message):
    bound: list[str]
    failed: dict[str, str]  # pod → why it was not bound (the scheduler retries it later)


class Unschedulable(Message):
    pod: str
    reason: str  # Volcano's: Unschedulable, Schedulable, SchedulerError
    message: str
    nominated_node: str = ""  # "" : leave status.nominatedNodeName alone


class MarkUnschedulableInput(Message):
    namespace: str
    pods: list[Unschedulable]


class StaticBinding(Message):
    pvc: str
    pv: str


class VolumesInput(Message):
    namespace: str
    pod: str
    node: str
    static: list[StaticBinding] = []
    provision: list[str] = []  # PVCs to provision on `node` (WaitForFirstConsumer)
    timeout_seconds: float = 120.0


class JobPlacements(Message):
    job_workflow_id: str
    namespace: str
    placements: list[scheduler_signals.PlacedPod]

    @property
    def binds_volumes(self) -> bool:
        """Some of its pods' claims are bound first (`bind_session`, in the background)."""
        return any(p.binds_volumes for p in self.placements)


class Arrivals(Message):
    """Where a worker's count of a scheduler's arrivals stood (`activities.scheduler.informer`)."""

    token: str  # the worker process's cache: counts of another are not comparable
    count: int


class SessionInput(Message):
    scheduler_name: str
    session: int
    assumed: dict[str, str]  # "<ns>/<pod>" → node, placed earlier and not bound yet
    # The device allocations of those pods' claims ("<ns>/<pod>" → plans), taken until seen.
    assumed_claims: dict[str, list[scheduler_signals.ClaimPlan]] = {}
    # Patch `caldera-session-folds-binding`: the previous session's placements, bound before
    # this session reads the cluster (those without volumes to bind) ...
    bind: list[JobPlacements] = []
    # ... and, with nothing to bind, how long to wait for an arrival after `since` first.
    wait_seconds: float = 0.0
    since: Arrivals | None = None
    # This session's placements are bound by the next: the PodGroup status of those gangs
    # waits for it (one write with the pods bound, not one before and one after).
    bind_next: bool = False


class SessionReport(Message):
    jobs: list[JobPlacements]  # gangs placed this session, one entry per job
    bound: list[str]  # "<ns>/<pod>" seen bound: their assumptions are confirmed
    pending: int  # pods still waiting for a node after this session
    bind_failed: dict[str, str] = {}  # "<ns>/<pod>" of `bind` not bound → why (placed again)
    arrivals: Arrivals | None = None  # the count as the session read the cluster
    # Each queue's waiting jobs (`activities.scheduler.backlogs`); None: as in the last report.
    backlog: Backlog | None = None


class BindPlacementsInput(Message):
    namespace: str
    placements: list[scheduler_signals.PlacedPod]
    volume_timeout_seconds: float = 120.0


class BindSessionInput(Message):
    session: int
    jobs: list[JobPlacements]
    volume_timeout_seconds: float = 120.0


class BindSessionResult(Message):
    bound: int
    failed: dict[str, str]  # "<ns>/<pod>" → why it was not bound (placed again later)


# -- batch/v1 Jobs ------------------------------------------------------------------------------


class CreateJobPodsInput(Message):
    job: batchv1.BatchJob  # as last observed
    pods: list[batchv1.NewPod]
    group: batchv1.SchedulingGroup | None = None  # None: they name no Kubernetes PodGroup


class JobWorkloadResult(Message):
    """The Job's Kubernetes PodGroup exists (made now, or found)."""

    pod_group_uid: str


class GangMinCountInput(Message):
    job: batchv1.BatchJob  # as last observed
    min_count: int


class CreateJobPodsResult(Message):
    created: dict[str, batchv1.CreatedPod]  # pod name → the pod created (or found, ours)
    failed: dict[str, str]  # pod name → why not (skipped ones after a failed batch too)


class DeleteJobPodsInput(Message):
    namespace: str
    job_name: str
    job_uid: str
    names: list[str]
    keep_finalizers: bool  # False: the tracking finalizer goes first, so the pod never counts


class RemoveFinalizersInput(Message):
    namespace: str
    pods: dict[str, str]  # pod name → uid


class BatchJobStatusInput(Message):
    namespace: str
    name: str
    uid: str  # written only while the Job is still this one
    status: batchv1.BatchJobStatus
