"""Payloads crossing the Temporal boundary: forwarder signals, update inputs, query results.

Owned by Caldera, so unknown fields are refused (`extra="forbid"`); every field added later
gets a default so running histories still decode.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from models.cronjob import CronJob
from models.jobflow import JobFlowSpec, JobFlowStatus
from models.meta import OwnerReference
from models.scheduling import PodGroup
from models.vcjob import Job, TaskState


class Payload(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class JobObserved(Payload):
    """The Job as the apiserver holds it now (added, spec or phase changed, or resynced)."""

    job: dict[str, Any]  # the whole object, as read; parsed with models.vcjob.Job


class JobDeleted(Payload):
    uid: str


class PodSnapshot(Payload):
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


class PodsChanged(Payload):
    """A coalesced batch: at most one snapshot per pod, in the order they last changed."""

    pods: list[PodSnapshot]


class PodsListed(Payload):
    """Every pod of one Job in a full list (a forwarder's first list of its term, or one after
    a 410): a pod the workflow knows and this list lacks went while no forwarder watched (a
    pod deleted between two leaders, or while the Temporal server was down)."""

    uids: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)

    def lacks(self, name: str, uid: str | None) -> bool:
        """Not in this list: by uid for a pod the workflow heard of, by name for one it only
        created (whether that one is gone or was created after the list, only a read says)."""
        return uid not in self.uids if uid is not None else name not in self.names


class PodGroupObserved(Payload):
    name: str
    phase: str | None = None  # None: the PodGroup has no phase yet
    deleted: bool = False
    conditions: list[dict[str, Any]] = Field(default_factory=list)


class CommandIssued(Payload):
    """A Command CR aimed at this Job, already consumed (deleted) by the forwarder."""

    action: str
    command: str = ""  # the Command's name, for the story
    reason: str = ""
    message: str = ""


class JobCommand(Payload):
    """Input of the abort/restart/resume/terminate/complete updates."""

    reason: str = ""
    message: str = ""


class JobCommandResult(Payload):
    action: str
    phase_before: str
    phase_after: str


class ControllerSettings(Payload):
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


class TaskView(Payload):
    name: str
    replicas: int
    phases: dict[str, int]


class DelayedActionView(Payload):
    key: str
    action: str
    event: str
    task: str
    pod: str
    fires_at: str


class JobView(Payload):
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


class JobStart(Payload):
    """What the forwarder starts a JobWorkflow with (signal-with-start)."""

    settings: ControllerSettings = Field(default_factory=ControllerSettings)


# Workflow type and message names: histories and the forwarder use these strings.
JOB_WORKFLOW = "JobWorkflow"
SIGNAL_JOB_OBSERVED = "job_observed"
SIGNAL_JOB_DELETED = "job_deleted"
SIGNAL_PODS_CHANGED = "pods_changed"
SIGNAL_PODS_LISTED = "pods_listed"
SIGNAL_POD_GROUP_OBSERVED = "pod_group_observed"
SIGNAL_COMMAND_ISSUED = "command_issued"


# -- queues -------------------------------------------------------------------------------------


class QueueObserved(Payload):
    """The Queue as the apiserver holds it now (added, spec or annotations changed, relisted)."""

    queue: dict[str, Any]


class QueueDeleted(Payload):
    uid: str


class PodGroupRef(Payload):
    """A PodGroup counted in a queue (by its `spec.queue`)."""

    key: str  # "<namespace>/<name>"
    phase: str | None = None  # None: no phase yet (counted as Pending)
    deleted: bool = False


class PodGroupsChanged(Payload):
    groups: list[PodGroupRef]


class PodGroupsListed(Payload):
    """Every PodGroup aimed at one queue in a full list: one the queue counts and this list
    lacks went while no forwarder watched."""

    keys: list[str] = Field(default_factory=list)  # "<namespace>/<name>"


class ChildQueueObserved(Payload):
    """Sent to a parent queue's workflow when one of its children is observed or deleted."""

    name: str
    state: str | None = None  # None: the child has no status.state yet (read as Open)
    closed_by_parent: bool = False
    deleted: bool = False


class ParentStateChanged(Payload):
    """Sent by a QueueWorkflow to its children's workflows when its state changes."""

    parent: str
    state: str


class QueueCommand(Payload):
    """Input of the open/close updates."""

    reason: str = ""


class QueueCommandResult(Payload):
    action: str
    state_before: str
    state_after: str


class QueueStart(Payload):
    """What the forwarder starts a QueueWorkflow with (signal-with-start)."""


class QueueView(Payload):
    """The `status` query of a QueueWorkflow."""

    name: str
    state: str
    parent: str | None  # None: root
    closed_by_parent: bool
    pod_groups: dict[str, int]  # phase → count
    children: dict[str, str]  # child name → state
    open_waiting_for_parent: bool = False
    backlog: int = 0
    kind: Literal["QueueView"] = "QueueView"


QUEUE_WORKFLOW = "QueueWorkflow"
SIGNAL_QUEUE_OBSERVED = "queue_observed"
SIGNAL_QUEUE_DELETED = "queue_deleted"
SIGNAL_POD_GROUPS_CHANGED = "pod_groups_changed"
SIGNAL_POD_GROUPS_LISTED = "pod_groups_listed"
SIGNAL_CHILD_QUEUE_OBSERVED = "child_queue_observed"
SIGNAL_PARENT_STATE_CHANGED = "parent_state_changed"


# -- scheduler ----------------------------------------------------------------------------------


class VolumePlan(Payload):
    """What binding a pod's claims on its node takes (the scheduler's volume decision)."""

    static: list[tuple[str, str]] = Field(default_factory=list)  # (pvc, pv) pairs to claim
    provision: list[str] = Field(default_factory=list)  # PVCs to provision on the node


class PlacedPod(Payload):
    pod: str
    uid: str = ""
    node: str
    volumes: VolumePlan = Field(default_factory=VolumePlan)

    @property
    def binds_volumes(self) -> bool:
        """Its claims are bound on its node first (which may wait minutes for a provisioner)."""
        return bool(self.volumes.static or self.volumes.provision)


class PodsPlaced(Payload):
    """Sent by the SchedulerWorkflow to a JobWorkflow: bind these pods (a whole gang)."""

    session: int
    placements: list[PlacedPod]


class BindFailed(Payload):
    """Sent by a JobWorkflow to the SchedulerWorkflow: drop these assumptions, retry later."""

    pods: dict[str, str]  # "<ns>/<pod>" → why


class WorkArrived(Payload):
    """Something may be schedulable now (pods created, a PodGroup changed)."""

    reason: str = ""


SCHEDULER_WORKFLOW = "SchedulerWorkflow"
SIGNAL_PODS_PLACED = "pods_placed"
SIGNAL_BIND_FAILED = "bind_failed"
SIGNAL_WORK_ARRIVED = "work_arrived"


# -- batch/v1 Jobs (spec.managedBy: caldera.dev/job-controller) ---------------------------------
# A BatchJobWorkflow hears `job_observed` / `job_deleted` (the payloads above, carrying a
# batch/v1 Job) and `pods_changed` with `BatchPodsChanged`.


class ContainerExitSnapshot(Payload):
    """A terminated container of a pod, in status order (init containers flagged)."""

    name: str
    exit_code: int
    init: bool = False


class BatchPodSnapshot(Payload):
    """One pod of a batch/v1 Job as the forwarder last saw it (latest state wins)."""

    name: str
    uid: str
    resource_version: str = ""
    job_uid: str = ""
    phase: str = "Pending"
    ready: bool = False  # the Ready condition is True
    ready_since: datetime | None = None  # None: not ready
    node_name: str | None = None  # None: not bound yet
    deleting: bool = False  # has a deletionTimestamp
    deleted: bool = False  # gone from the apiserver
    finalizer: bool = False  # carries batch.kubernetes.io/job-tracking
    index: int | None = None  # None: no valid completion-index annotation
    failure_count: int = 0  # job-index-failure-count annotation
    ignored_failure_count: int = 0  # job-index-ignored-failure-count annotation
    exits: list[ContainerExitSnapshot] = Field(default_factory=list)
    conditions: dict[str, str] = Field(default_factory=dict)  # type → status, in status order
    max_restarts: int = 0  # highest restartCount of a regular container
    sidecar_restarts: int = 0  # highest restartCount of a restartable init container
    restarts: int = 0  # every container's restartCount summed
    created_at: datetime | None = None  # None: not known
    finished_at: datetime | None = None  # None: not finished (the job controller's rule)


class BatchPodsChanged(Payload):
    """A coalesced batch: at most one snapshot per pod, in the order they last changed."""

    pods: list[BatchPodSnapshot]


class BatchJobStart(Payload):
    """What the forwarder starts a BatchJobWorkflow with (signal-with-start)."""


class BatchJobView(Payload):
    """The `status` query of a BatchJobWorkflow."""

    namespace: str
    name: str
    uid: str
    phase: str
    status: dict[str, Any]  # the Job status as the workflow wants it written
    pods: dict[str, str]  # pod name → phase (with " terminating" when deleting)
    timers: dict[str, str]  # timer key → when it fires (RFC 3339)
    backlog: int = 0
    kind: Literal["BatchJobView"] = "BatchJobView"


BATCH_JOB_WORKFLOW = "BatchJobWorkflow"


# -- PodGroups for pods Caldera did not create (Deployments, StatefulSets, bare pods) ----------


class WorkloadPod(Payload):
    """A pod that names Volcano's scheduler and has no PodGroup yet, as far as the PodGroup
    controller reads it: only the annotations and labels it copies travel, not the object."""

    namespace: str
    name: str
    uid: str
    owner_references: list[OwnerReference] = Field(default_factory=list)
    priority_class_name: str = ""
    requests: dict[str, str] = Field(default_factory=dict)  # one pod's, with `pods: 1`
    annotations: dict[str, str] = Field(default_factory=dict)  # the keys the controller reads
    labels: dict[str, str] = Field(default_factory=dict)  # likewise


class WorkloadPodSeen(Payload):
    pod: WorkloadPod


class PodGroupStart(Payload):
    """What the forwarder starts a PodGroupWorkflow with (signal-with-start)."""


class PodGroupView(Payload):
    """The `status` query of a PodGroupWorkflow."""

    namespace: str
    name: str  # the PodGroup's
    applied: PodGroup | None = None  # as last created or updated; None: not yet
    waiting: list[str] = Field(default_factory=list)  # pods not annotated yet
    annotated: int = 0  # pods annotated by this run
    idle_until: str = ""  # RFC 3339: when the run ends if no pod comes; "": not armed
    backlog: int = 0


POD_GROUP_WORKFLOW = "PodGroupWorkflow"
SIGNAL_WORKLOAD_POD_SEEN = "workload_pod_seen"


# -- Volcano CronJobs: a CronJobWorkflow per CronJob, a CronRunWorkflow per scheduled run -------


class CronJobObserved(Payload):
    """The CronJob as the apiserver holds it now (added, spec changed, or resynced)."""

    cron_job: CronJob


class CronJobStart(Payload):
    """What the forwarder starts a CronJobWorkflow with (signal-with-start)."""


class CronJobRun(Payload):
    """A Volcano Job a CronJob controls, as far as its CronJobWorkflow reads it."""

    name: str
    uid: str
    resource_version: str = ""
    phase: str = ""  # "": no phase yet
    created: datetime | None = None  # None: unknown
    finished_at: datetime | None = None  # status.state.lastTransitionTime; None: unknown
    deleted: bool = False  # gone from the apiserver


class CronJobRunChanged(Payload):
    job: CronJobRun


class RunDue(Payload):
    """A scheduled run started and asks whether it is still due (its nominal time)."""

    workflow_id: str
    scheduled: datetime


class RunAnswer(Payload):
    """The CronJobWorkflow's answer to `RunDue`: the Job to create, or why not."""

    job: Job | None = None  # None: the run makes no Job
    reason: str = ""


class RunCreated(Payload):
    """What the run's create found: the Job made (or the one of that name already there)."""

    workflow_id: str
    name: str
    uid: str = ""  # "": it could not be created
    resource_version: str = ""
    created: datetime | None = None  # None: unknown
    owned: bool = True  # False: a Job of that name the CronJob does not control
    phase: str = ""  # of an existing Job; "": none
    error: str = ""  # why it could not be created; "": it was


class RunEnded(Payload):
    """The run ends before its Job finished (cancelled by Replace), its Job deleted."""

    workflow_id: str
    name: str


class RunFinished(Payload):
    """To a run: its Job finished, went, or the CronJob is gone; the run ends."""

    phase: str  # the Job's last phase, "Deleted", or "CronJobDeleted"


class CronRunStart(Payload):
    """The schedule's argument to every run: whose run it is."""

    namespace: str
    name: str


class CronJobView(Payload):
    """The `status` query of a CronJobWorkflow."""

    namespace: str
    name: str
    schedule_id: str
    paused: bool = False
    active: list[str] = Field(default_factory=list)  # Job names
    jobs: dict[str, str] = Field(default_factory=dict)  # Job name → phase
    last_schedule_time: datetime | None = None  # None: never
    backlog: int = 0
    kind: Literal["CronJobView"] = "CronJobView"


CRON_JOB_WORKFLOW = "CronJobWorkflow"
CRON_RUN_WORKFLOW = "CronRunWorkflow"
SIGNAL_CRON_JOB_OBSERVED = "cron_job_observed"
SIGNAL_CRON_JOB_DELETED = "cron_job_deleted"  # with JobDeleted: the CronJob's uid
SIGNAL_CRON_JOB_RUN_CHANGED = "cron_job_run_changed"
SIGNAL_RUN_DUE = "run_due"
SIGNAL_RUN_CREATED = "run_created"
SIGNAL_RUN_ENDED = "run_ended"
SIGNAL_RUN_ANSWERED = "run_answered"
SIGNAL_RUN_FINISHED = "run_finished"


# -- Volcano JobFlows (flow.volcano.sh) ---------------------------------------------------------


class FlowObserved(Payload):
    """The JobFlow as the apiserver holds it now (added, spec changed, relisted); its status
    stays behind: the workflow computes it."""

    namespace: str
    name: str
    uid: str
    spec: JobFlowSpec
    status: JobFlowStatus | None = None  # as stored; None: never written


class FlowJob(Payload):
    """A Volcano Job labelled with a flow, as far as the flow's status reads it."""

    name: str
    uid: str
    phase: str = ""  # "": the Job has no phase yet
    created_at: datetime | None = None  # None: not known
    running_duration: str | None = None  # None: not reported
    retry_count: int = 0
    task_status_count: dict[str, TaskState] = Field(default_factory=dict)
    deleted: bool = False  # gone from the apiserver


class FlowJobChanged(Payload):
    job: FlowJob


class TemplateObserved(Payload):
    """A JobTemplate the flow names appeared (or was relisted)."""

    name: str


class FlowStart(Payload):
    """What the forwarder starts a JobFlowWorkflow with (signal-with-start)."""


class FlowView(Payload):
    """The `status` query of a JobFlowWorkflow."""

    namespace: str
    name: str
    phase: str
    jobs: dict[str, str] = Field(default_factory=dict)  # Job name → phase, as last heard
    created: list[str] = Field(default_factory=list)  # Jobs this flow made
    waiting_for_template: str = ""  # "": none missing
    backlog: int = 0
    kind: Literal["FlowView"] = "FlowView"


JOBFLOW_WORKFLOW = "JobFlowWorkflow"
SIGNAL_JOBFLOW_OBSERVED = "jobflow_observed"
SIGNAL_JOBFLOW_DELETED = "jobflow_deleted"  # with JobDeleted: the flow's uid
SIGNAL_FLOW_JOB_CHANGED = "flow_job_changed"
SIGNAL_TEMPLATE_OBSERVED = "job_template_observed"
