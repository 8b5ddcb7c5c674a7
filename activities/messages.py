"""Inputs and results of the Kubernetes activities: one model each, owned by Caldera."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from models import signals


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JobInput(Message):
    """Activities that act for a whole Job get the Job as last observed."""

    job: dict[str, Any]


class CreatePodsInput(Message):
    job: dict[str, Any]
    version: int
    retry_count: int
    pods: list[tuple[str, int]]  # (task, index)
    scheduler_override: str | None = None  # None: the job's or template's scheduler


class CreatePodsResult(Message):
    created: list[str]
    existing: list[str]


class DeletePodsInput(Message):
    namespace: str
    names: list[str]


class DeletePodsResult(Message):
    deleted: list[str]
    gone: list[str]


class PodGroupInput(Message):
    namespace: str
    name: str


class WriteStatusInput(Message):
    namespace: str
    name: str
    status: dict[str, Any]


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


class SessionInput(Message):
    scheduler_name: str
    session: int
    assumed: dict[str, str]  # "<ns>/<pod>" → node, placed earlier and not bound yet


class JobPlacements(Message):
    job_workflow_id: str
    namespace: str
    placements: list[signals.PlacedPod]


class SessionResult(Message):
    jobs: list[JobPlacements]  # gangs placed this session, one entry per job
    bound: list[str]  # "<ns>/<pod>" seen bound: their assumptions are confirmed
    pending: int  # pods still waiting for a node after this session


class BindPlacementsInput(Message):
    namespace: str
    placements: list[signals.PlacedPod]
    volume_timeout_seconds: float = 120.0


# -- batch/v1 Jobs ------------------------------------------------------------------------------


class JobPod(Message):
    """One pod of a batch/v1 Job to create from its template."""

    name: str
    index: int | None = None  # None: a NonIndexed Job's pod
    failure_count: int | None = None  # None: backoffLimitPerIndex is not used
    ignored_failure_count: int = 0


class CreateJobPodsInput(Message):
    job: dict[str, Any]  # the batch/v1 Job as last observed
    pods: list[JobPod]


class CreatedJobPod(Message):
    uid: str
    created_at: datetime | None = None  # None: the apiserver did not say


class CreateJobPodsResult(Message):
    created: dict[str, CreatedJobPod]  # pod name → the pod created (or found, ours)
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
    status: dict[str, Any]
