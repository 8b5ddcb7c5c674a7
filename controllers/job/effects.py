"""What only a Volcano Job's shell does on its core's behalf; with `controllers.effects`, the
closed union of frozen records the shell executes in order. Each record carries the typed Job,
so an activity gets the model, not a dict to parse again."""

from __future__ import annotations

from typing import Literal

from controllers import effects as fx
from models.vcjob import Job, JobStatus


class WriteStatus(fx.Effect):
    kind: Literal["WriteStatus"] = "WriteStatus"
    status: JobStatus


class EnsurePodGroup(fx.Effect):
    kind: Literal["EnsurePodGroup"] = "EnsurePodGroup"
    job: Job
    # Look the PodGroup up as Volcano does (its own name, then the one from before 1.5) before
    # creating one: the job ran under a controller before this run saw it. False: a new job,
    # whose create is the lookup.
    look_up: bool = False


class DeletePodGroup(fx.Effect):
    kind: Literal["DeletePodGroup"] = "DeletePodGroup"
    name: str


class EnsurePlugins(fx.Effect):
    kind: Literal["EnsurePlugins"] = "EnsurePlugins"
    job: Job


class RemovePlugins(fx.Effect):
    kind: Literal["RemovePlugins"] = "RemovePlugins"
    job: Job


class EnsureVolumes(fx.Effect):
    kind: Literal["EnsureVolumes"] = "EnsureVolumes"
    job: Job


class CreatePods(fx.Effect):
    kind: Literal["CreatePods"] = "CreatePods"
    job: Job
    version: int
    retry_count: int
    pods: list[tuple[str, int]]  # (task, index), in creation order
    scheduler_override: str | None = None  # None: the job's or template's scheduler
    # The gang the pods name; None: the job's own `<job>-<uid>`. Volcano names the own one even
    # while it keeps a job's PodGroup from before 1.5, so its new pods wait for a PodGroup that
    # never comes; Caldera names the one in use, so they are placed.
    pod_group: str | None = None


class DeletePods(fx.Effect):
    kind: Literal["DeletePods"] = "DeletePods"
    names: list[str]
    why: str


Own = (
    WriteStatus
    | EnsurePodGroup
    | DeletePodGroup
    | EnsurePlugins
    | RemovePlugins
    | EnsureVolumes
    | CreatePods
    | DeletePods
    | fx.DeleteJob
)
AnyEffect = Own | fx.Shared
