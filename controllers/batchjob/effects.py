"""What only a batch/v1 Job's shell does on its core's behalf; with `controllers.effects`, the
closed union of frozen records the shell executes in order. Outcomes a later decision needs
(which pods were created, which finalizers were removed) come back as inputs."""

from __future__ import annotations

from typing import Literal

from controllers import effects as fx
from models.batchv1 import BatchJob, BatchJobStatus, NewPod, SchedulingGroup


class CreatePods(fx.Effect):
    kind: Literal["CreatePods"] = "CreatePods"
    job: BatchJob
    pods: list[NewPod]
    group: SchedulingGroup | None = None  # None: the pods name no Kubernetes PodGroup


class DeletePods(fx.Effect):
    """Delete pods; `keep_finalizers`: they are counted as failed first (the Job is failing),
    otherwise their finalizer goes first so they never count (surplus, suspend)."""

    kind: Literal["DeletePods"] = "DeletePods"
    names: list[str]
    keep_finalizers: bool
    why: str


class RemoveFinalizers(fx.Effect):
    kind: Literal["RemoveFinalizers"] = "RemoveFinalizers"
    pods: dict[str, str]  # name → uid
    why: str


class WriteStatus(fx.Effect):
    kind: Literal["WriteStatus"] = "WriteStatus"
    status: BatchJobStatus  # the whole status, as the apiserver takes it
    summary: str


class EnsurePodGroup(fx.Effect):
    """The PodGroup Caldera's gang scheduler places the Job's pods through."""

    kind: Literal["EnsurePodGroup"] = "EnsurePodGroup"
    job: BatchJob


class EnsureWorkload(fx.Effect):
    """The Kubernetes Workload and PodGroup of a Job with `spec.scheduling`, before its first
    pod; the PodGroup's uid comes back (`workload.WorkloadEnsured`)."""

    kind: Literal["EnsureWorkload"] = "EnsureWorkload"
    job: BatchJob


class PatchGangMinCount(fx.Effect):
    """A changed `spec.scheduling.schedulingPolicy.gang.minCount` (the one mutable part), onto
    the Workload's template and the PodGroup."""

    kind: Literal["PatchGangMinCount"] = "PatchGangMinCount"
    job: BatchJob
    min_count: int


Own = (
    CreatePods
    | DeletePods
    | RemoveFinalizers
    | WriteStatus
    | EnsurePodGroup
    | EnsureWorkload
    | PatchGangMinCount
    | fx.DeleteJob
)
AnyEffect = Own | fx.Shared
