"""What a Volcano JobWorkflow hears and answers: forwarder signals, command updates, its view.

The BatchJobWorkflow shares the job shell and hears `job_observed`, `job_deleted` and
`pods_listed` with these payloads too (carrying a batch/v1 Job). Signal and workflow type names
are stored in histories and used by the forwarder: they never change. Pure: pydantic only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from models.signals import common


class ControllerSettings(common.Payload):
    """How this Caldera installation runs jobs; fixed per workflow run and carried along."""

    # Skip the PodGroup gate and hand pods to this scheduler instead of the job's one.
    # None: Volcano's behaviour, pods wait until the PodGroup is Inqueue.
    scheduler_override: str | None = None
    # Pods are created and deleted by local activities. A run started before this setting
    # existed has it off and keeps regular activities, so its history replays unchanged.
    local_pod_writes: bool = False
    # Short writes are local without evaluating the `local-kube-writes` patch (its marker and
    # search attribute upsert); off in runs started before, whose histories hold the marker.
    local_writes: bool = False
    # A decision's consecutive short writes go by one local activity without evaluating the
    # `caldera-one-write-per-decision` patch; off in runs started before (or until it is asked).
    one_write_per_decision: bool = False


class JobStart(common.Payload):
    """What the forwarder starts a JobWorkflow with (signal-with-start)."""

    settings: ControllerSettings = Field(default_factory=ControllerSettings)


class JobObserved(common.Payload):
    """The Job as the apiserver holds it now (added, spec or phase changed, or resynced)."""

    job: dict[str, Any]  # the whole object, as read; parsed with models.vcjob.Job


class PodSnapshot(common.Payload):
    """One pod of a Volcano Job as the forwarder last saw it (latest state wins)."""

    name: str
    uid: str
    resource_version: str = ""
    job_uid: str | None = None  # None: no controller ownerRef to a Job
    task: str
    index: int | None = None  # None: no task-index annotation
    job_version: int = 0
    phase: str = "Pending"  # Pending, Running, Succeeded, Failed, Unknown
    exit_code: int | None = None  # first container's terminated exit code; None: not terminated
    restart_count: int = 0  # summed over init and regular containers
    ready: bool = False  # every container Ready
    deleting: bool = False  # has a deletionTimestamp
    deleted: bool = False  # gone from the apiserver
    out_of_sync: bool = False  # marked by a kill: its events are not policy events
    partition: str | None = None  # None: the task has no partitions
    node_name: str | None = None  # None: not bound yet


class PodsChanged(common.Payload):
    """A coalesced batch: at most one snapshot per pod, in the order they last changed."""

    pods: list[PodSnapshot]


class PodsListed(common.Payload):
    """Every pod of one Job in a full list (a forwarder's first list of its term, or one after
    a 410): a pod the workflow knows and this list lacks went while no forwarder watched (a
    pod deleted between two leaders, or while the Temporal server was down)."""

    uids: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)

    def lacks(self, name: str, uid: str | None) -> bool:
        """Not in this list: by uid for a pod the workflow heard of, by name for one it only
        created (whether that one is gone or was created after the list, only a read says)."""
        return uid not in self.uids if uid is not None else name not in self.names


class PodGroupObserved(common.Payload):
    name: str
    phase: str | None = None  # None: the PodGroup has no phase yet
    deleted: bool = False
    conditions: list[dict[str, Any]] = Field(default_factory=list)


class JobCommand(common.Payload):
    """Input of the abort/restart/resume/terminate/complete updates."""

    reason: str = ""
    message: str = ""


class JobCommandResult(common.Payload):
    action: str
    phase_before: str
    phase_after: str


class TaskView(common.Payload):
    name: str
    replicas: int
    phases: dict[str, int]


class DelayedActionView(common.Payload):
    key: str
    action: str
    event: str
    task: str
    pod: str
    fires_at: str


class JobView(common.Payload):
    """The `status` query: what a user asks `caldera job view` for."""

    namespace: str
    name: str
    uid: str
    phase: str
    version: int
    retry_count: int
    queue: str
    # As the job last heard it: the forwarder sends a move past the gate (Inqueue → Running)
    # to the queue's workflow, not to the job's, which decides nothing on it.
    pod_group_phase: str | None
    tasks: list[TaskView]
    delayed: list[DelayedActionView]
    backlog: int = 0  # inputs received and not yet fully carried out
    kind: Literal["JobView"] = "JobView"


# Workflow type and message names: histories and the forwarder use these strings.
JOB_WORKFLOW = "JobWorkflow"
SIGNAL_JOB_OBSERVED = "job_observed"
SIGNAL_JOB_DELETED = "job_deleted"
SIGNAL_PODS_CHANGED = "pods_changed"
SIGNAL_PODS_LISTED = "pods_listed"
SIGNAL_POD_GROUP_OBSERVED = "pod_group_observed"
