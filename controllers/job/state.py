"""JobWorkflow state: one pydantic model, built in `@workflow.init`, carried whole through
continue-as-new. Pure: no Temporal or Kubernetes import.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from controllers.record import ObservedJob, Record
from models import bus
from models.meta import ObjectMeta
from models.signals.job import ControllerSettings
from models.vcjob import Job, JobPhase, JobStatus


class PodRecord(Record):
    """What the controller knows of one pod: the forwarder's latest snapshot, or the pod it
    just created (uid None until the first snapshot arrives)."""

    name: str
    task: str
    index: int | None = None  # None: no task-index annotation (not created by us)
    uid: str | None = None  # None: created by us, not observed yet
    job_version: int = 0
    phase: str = "Pending"
    exit_code: int | None = None  # None: not terminated
    restart_count: int = 0
    ready: bool = False
    deleting: bool = False
    out_of_sync: bool = False
    partition: str | None = None  # None: the task has no partitions
    node: str | None = None  # None: not bound to a node yet


class DelayedAction(Record):
    """A policy action waiting for its timeout (Volcano's delayActionMap entry)."""

    key: str  # the pod name, or "" for requests without a pod
    action: bus.Action
    event: str
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    partition: str = ""
    fires_at: datetime
    timer: int  # unique per registration, so a stale firing is recognised


class JobRecord(ObservedJob):
    job: Job | None = None  # None: the Job has not been observed yet
    settings: ControllerSettings = Field(default_factory=ControllerSettings)
    status: JobStatus = Field(default_factory=JobStatus)
    pods: dict[str, PodRecord] = Field(default_factory=dict)
    pod_group_phase: str | None = None  # None: no PodGroup, or one without a phase yet
    pod_group_exists: bool = False
    pod_group_generation: int | None = None  # None: PodGroup not ensured for any generation
    # A PodGroup named as the Job itself, as Volcano named them before 1.5 (the
    # `caldera-legacy-pod-group` patch: False, a run from before it ignores one). Volcano's
    # lookup falls back to it while the job's own `<job>-<uid>` does not exist.
    legacy_pod_groups: bool = False
    ran_before: bool = False  # the Job had a phase when this run first saw it
    legacy_pod_group_exists: bool = False
    legacy_pod_group_phase: str | None = None
    plugins_generation: int | None = None  # None: plugins not applied since the last kill
    # Names chosen, PVCs made and markers kept (the `caldera-job-io` patch): the volumes step
    # runs before the PodGroup and reports its claim names, the plugins step its markers.
    # False: the run began before it, or the job has neither volumes nor plugins.
    job_io: bool = False
    volume_claims: list[str] | None = None  # None: the volumes step has not succeeded yet
    controlled: dict[str, str] = Field(default_factory=dict)  # status.controlledResources
    delayed: dict[str, DelayedAction] = Field(default_factory=dict)
    ttl_fires_at: datetime | None = None  # None: no TTL timer armed yet
    ttl_expired: bool = False
    # A dispatched copy's lease (`controllers.job.lease`); None: the Job carries none.
    lease_until: datetime | None = None
    timer_seq: int = 0
    deleted: bool = False

    @property
    def phase(self) -> JobPhase | None:
        """None: the job was never initiated (Volcano's "")."""
        return self.status.state.phase if self.status.state else None

    def pod_counts(self) -> str:
        """The status's pod counts as the UI's current details show them; zeros left out."""
        s = self.status
        counts = [
            ("running", s.running),
            ("pending", s.pending),
            ("succeeded", s.succeeded),
            ("failed", s.failed),
            ("terminating", s.terminating),
        ]
        return ", ".join(f"{n or 0} {word}" for word, n in counts if n or word == "running")

    @property
    def meta(self) -> ObjectMeta | None:
        return self.job.metadata if self.job else None
