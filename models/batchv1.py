"""batch/v1 Job: the plain Kubernetes Job, the fields Caldera's job controller reads and writes.

A Job is Caldera's when `spec.managedBy` names `CONTROLLER_NAME`: the built-in job controller
then leaves it alone (JobManagedBy, GA since Kubernetes 1.35). The pod template stays the
PodTemplateSpec the user wrote (`models.batch.PodTemplateSpec`, kept verbatim), and unknown
fields survive a round trip (`ApiModel` keeps extras).

`defaulted` applies the apiserver's SetDefaults_Job, so the pure core can be fed a manifest as
a user writes it; what the apiserver returns is already defaulted and comes out unchanged.

Must not import anything with I/O: this layer is pure.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from models.base import INT32_MAX, ApiModel
from models.defaults import DEFAULT_SCHEDULER
from models.meta import ObjectMeta
from models.vcjob import PodTemplateSpec

GROUP: Final = "batch"
VERSION: Final = "v1"
API_VERSION: Final = "batch/v1"
KIND: Final = "Job"

# Jobs whose spec.managedBy says this are run by BatchJobWorkflows.
CONTROLLER_NAME: Final = "caldera.dev/job-controller"

# Labels, annotations and the finalizer the built-in controller puts on pods, spelled once.
TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"  # annotation and label
INDEX_FAILURE_COUNT: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT: Final = "batch.kubernetes.io/job-index-ignored-failure-count"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"

DEFAULT_BACKOFF_LIMIT: Final = 6
# Pods naming Caldera's gang scheduler are placed through a PodGroup per Job, as Volcano's
# PodGroup controller does for pods it did not create: `podgroup-<job uid>`, one pod enough.
QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"  # on the pod template


class CompletionMode(StrEnum):
    NON_INDEXED = "NonIndexed"
    INDEXED = "Indexed"


class FailurePolicyAction(StrEnum):
    FAIL_JOB = "FailJob"
    FAIL_INDEX = "FailIndex"
    IGNORE = "Ignore"
    COUNT = "Count"


class ConditionType(StrEnum):
    SUSPENDED = "Suspended"
    COMPLETE = "Complete"
    FAILED = "Failed"
    FAILURE_TARGET = "FailureTarget"
    SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"


# Conditions the apiserver never lets a status write turn off once True.
TERMINAL_CONDITIONS: Final = frozenset(
    {
        ConditionType.COMPLETE,
        ConditionType.FAILED,
        ConditionType.FAILURE_TARGET,
        ConditionType.SUCCESS_CRITERIA_MET,
    }
)


class Reason(StrEnum):
    """The condition reasons the built-in controller writes (batch/v1 JobReason*)."""

    BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    POD_FAILURE_POLICY = "PodFailurePolicy"
    MAX_FAILED_INDEXES_EXCEEDED = "MaxFailedIndexesExceeded"
    FAILED_INDEXES = "FailedIndexes"
    SUCCESS_POLICY = "SuccessPolicy"
    COMPLETIONS_REACHED = "CompletionsReached"
    JOB_SUSPENDED = "JobSuspended"
    JOB_RESUMED = "JobResumed"


class OnExitCodes(ApiModel):
    container_name: str | None = None  # None: any container
    operator: Literal["In", "NotIn"]
    values: list[int]


class OnPodCondition(ApiModel):
    type: str
    status: str = "True"


class PodFailurePolicyRule(ApiModel):
    action: FailurePolicyAction
    on_exit_codes: OnExitCodes | None = None  # None: the rule matches on pod conditions
    on_pod_conditions: list[OnPodCondition] | None = None  # None: it matches on exit codes


class PodFailurePolicy(ApiModel):
    rules: list[PodFailurePolicyRule] = Field(default_factory=list)


class SuccessPolicyRule(ApiModel):
    succeeded_indexes: str | None = None  # None: any indexes count toward succeededCount
    succeeded_count: int | None = None  # None: every index in succeededIndexes


class SuccessPolicy(ApiModel):
    rules: list[SuccessPolicyRule] = Field(default_factory=list)


class BasicPolicy(ApiModel):
    """`basic: {}`: pods are scheduled one by one, as without a PodGroup."""


class GangPolicy(ApiModel):
    min_count: int | None = None  # None: the controller defaults it to max(1, parallelism)


class SchedulingPolicy(ApiModel):
    """A union: exactly one member is set (the apiserver validates it)."""

    basic: BasicPolicy | None = None  # None: not the basic policy
    gang: GangPolicy | None = None  # None: not the gang policy


class JobScheduling(ApiModel):
    """batch/v1 JobSchedulingConfiguration (Kubernetes 1.37, feature gate WorkloadWithJob): what
    the Job's Workload and PodGroup are made from. Only the policy is read; the other building
    blocks are copied onto the Workload's template and the PodGroup as the user wrote them."""

    scheduling_policy: SchedulingPolicy | None = None  # None: basic, Kubernetes' default
    scheduling_constraints: dict[str, Any] | None = None  # None: unset
    disruption_mode: dict[str, Any] | None = None  # None: unset ({single: {}} on a PodGroup)
    resource_claims: list[dict[str, Any]] | None = None  # None: unset

    @property
    def gang(self) -> GangPolicy | None:
        """The gang policy; None: a basic one."""
        return self.scheduling_policy.gang if self.scheduling_policy else None


class BatchJobSpec(ApiModel):
    # None on each field: unset, defaulted by the apiserver (see `defaulted`) or not used.
    parallelism: int | None = None
    completions: int | None = None  # None: a work queue, done at the first success
    active_deadline_seconds: int | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: SuccessPolicy | None = None
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    selector: dict[str, object] | None = None
    manual_selector: bool | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    ttl_seconds_after_finished: int | None = None
    completion_mode: CompletionMode | None = None
    suspend: bool | None = None
    pod_replacement_policy: Literal["TerminatingOrFailed", "Failed"] | None = None
    managed_by: str | None = None
    scheduling: JobScheduling | None = None  # None: no Workload (Kubernetes' WorkloadWithJob)

    @property
    def indexed(self) -> bool:
        return self.completion_mode == CompletionMode.INDEXED

    @property
    def suspended(self) -> bool:
        return bool(self.suspend)

    @property
    def only_replace_failed(self) -> bool:
        """podReplacementPolicy Failed: a terminating pod is replaced once it has failed."""
        return self.pod_replacement_policy == "Failed"


class JobCondition(ApiModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    last_probe_time: datetime | None = None  # None: never probed
    last_transition_time: datetime | None = None  # None: time unknown
    reason: str | None = None  # None: no reason given
    message: str | None = None  # None: no message given


class UncountedTerminatedPods(ApiModel):
    succeeded: list[str] | None = None  # None: no uncounted succeeded pod
    failed: list[str] | None = None  # None: no uncounted failed pod


class BatchJobStatus(ApiModel):
    """batch/v1 JobStatus. Pointer fields of the Go type (ready, terminating, failedIndexes,
    uncountedTerminatedPods) are None when unset, which differs from 0 or empty on the wire."""

    conditions: list[JobCondition] | None = None  # None: no condition yet
    start_time: datetime | None = None  # None: not started, or suspended
    completion_time: datetime | None = None  # None: not complete
    active: int | None = None  # None: 0
    succeeded: int | None = None  # None: 0
    failed: int | None = None  # None: 0
    terminating: int | None = None  # None: not reported
    completed_indexes: str | None = None  # None: ""
    failed_indexes: str | None = None  # None: backoffLimitPerIndex is not used
    uncounted_terminated_pods: UncountedTerminatedPods | None = None  # None: never synced
    ready: int | None = None  # None: not reported

    def dump(self) -> dict[str, Any]:
        """As the apiserver stores it: zero counters and empty completedIndexes are omitted
        (omitempty), while ready, terminating and the pointer fields stay when set."""
        out = super().dump()
        for key in ("active", "succeeded", "failed"):
            if out.get(key) == 0:
                del out[key]
        if out.get("completedIndexes") == "":
            del out["completedIndexes"]
        return out

    def condition(self, type_: str) -> JobCondition | None:
        """The condition of this type; None: there is none."""
        return next((c for c in self.conditions or () if c.type == type_), None)

    def is_true(self, type_: str) -> bool:
        found = self.condition(type_)
        return found is not None and found.status == "True"

    @property
    def finished(self) -> bool:
        """Complete=True or Failed=True: the controller never touches the Job again."""
        return self.is_true(ConditionType.COMPLETE) or self.is_true(ConditionType.FAILED)


class BatchJob(ApiModel):
    """A Kubernetes batch/v1 Job."""

    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["Job"] = "Job"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: BatchJobSpec = Field(default_factory=BatchJobSpec)
    status: BatchJobStatus | None = None  # None: never synced

    @property
    def scheduler_name(self) -> str:
        return str((self.spec.template.spec or {}).get("schedulerName") or "default-scheduler")

    @property
    def gang_scheduled(self) -> bool:
        """Its pods name Caldera's gang scheduler, which places PodGroups' pods only."""
        return self.scheduler_name == DEFAULT_SCHEDULER

    @property
    def pod_group_name(self) -> str:
        return f"podgroup-{self.metadata.uid}"


def defaulted(job: BatchJob) -> BatchJob:
    """The apiserver's SetDefaults_Job: both counts 1 when neither is given, parallelism 1,
    backoffLimit 6 (or MaxInt32 with backoffLimitPerIndex), NonIndexed, not suspended, and
    Failed replacement when a podFailurePolicy is set."""
    spec = job.spec
    update: dict[str, object] = {}
    if spec.completions is None and spec.parallelism is None:
        update.update(completions=1, parallelism=1)
    elif spec.parallelism is None:
        update["parallelism"] = 1
    if spec.backoff_limit is None:
        limit = INT32_MAX if spec.backoff_limit_per_index is not None else DEFAULT_BACKOFF_LIMIT
        update["backoff_limit"] = limit
    if spec.completion_mode is None:
        update["completion_mode"] = CompletionMode.NON_INDEXED
    if spec.suspend is None:
        update["suspend"] = False
    if spec.pod_replacement_policy is None:
        failed = spec.pod_failure_policy is not None
        update["pod_replacement_policy"] = "Failed" if failed else "TerminatingOrFailed"
    if spec.manual_selector is None:
        update["manual_selector"] = False
    if not update:
        return job
    return job.model_copy(update={"spec": spec.model_copy(update=update)})


class NewPod(BaseModel):
    """One pod of a Job to create from its template: the name the controller chose and the
    index annotations it carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    index: int | None = None  # None: a NonIndexed Job's pod
    failure_count: int | None = None  # None: backoffLimitPerIndex is not used
    ignored_failure_count: int = 0


class SchedulingGroup(BaseModel):
    """The Kubernetes PodGroup a Job's pods name (`spec.schedulingGroup`), with its uid for
    the pods' owner reference to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pod_group: str
    uid: str


class CreatedPod(BaseModel):
    """A pod the apiserver accepted (or one of ours found already there)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uid: str
    created_at: datetime | None = None  # None: the apiserver did not say
