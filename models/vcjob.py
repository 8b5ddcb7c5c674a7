"""batch.volcano.sh/v1alpha1 Job: the Volcano batch job, field for field.

The pod template stays the Kubernetes PodTemplateSpec the user wrote (a free-form mapping
here, validated by the apiserver when pods are created), so nothing in it is lost or
reinterpreted. Admission rules that Volcano's webhook enforces are declared next to the field
they guard, as CEL rules the generated CRD carries (see `models.crd`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from models import bus
from models.base import ApiModel, Int32, NonNegInt32
from models.duration import GoDuration, parse_duration
from models.meta import ObjectMeta
from models.scheduling import NetworkTopologySpec

# What a Job's update may change (Volcano's validateJobUpdate): the rest of its spec is fixed.
UPDATABLE_JOB: Final = ("minAvailable", "priorityClassName")
UPDATABLE_TASK: Final = ("replicas", "minAvailable")
GROUP: Final = "batch.volcano.sh"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "Job"

DNS1123_LABEL: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
MAX_TASKS: Final = 64
MAX_POLICIES: Final = 16


def _cel(rule: str, message: str, field_path: str | None = None) -> JsonDict:
    """One `x-kubernetes-validations` entry; the message names the field it rejects."""
    entry: JsonDict = {"rule": rule, "message": message}
    if field_path is not None:
        entry["fieldPath"] = field_path
    return entry


class JobPhase(StrEnum):
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


_HAS_EVENT = "(has(self.event) || has(self.events))"


class LifecyclePolicy(ApiModel):
    """event(s) or exitCode → action, optionally after `timeout`."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    f"!({_HAS_EVENT} && has(self.exitCode))",
                    "must not specify event and exitCode simultaneously",
                ),
                _cel(
                    f"{_HAS_EVENT} || has(self.exitCode)",
                    "either event and exitCode should be specified",
                ),
                _cel(
                    "!has(self.exitCode) || self.exitCode != 0",
                    "exitCode: 0 is not a valid error code",
                    ".exitCode",
                ),
                _cel(
                    "!(has(self.event) && has(self.events) && self.event in self.events)",
                    "events: duplicate event, it is also given as event",
                    ".events",
                ),
            ]
        }
    )

    action: bus.UserJobAction
    event: bus.UserEvent | None = None  # None: see events
    events: (
        Annotated[
            list[bus.UserEvent],
            Field(
                max_length=len(bus.USER_EVENTS),
                json_schema_extra={"x-kubernetes-list-type": "set"},
            ),
        ]
        | None
    ) = None  # None: only `event` (or exitCode) is given
    exit_code: Int32 | None = None  # None: the policy matches on events
    timeout: GoDuration | None = None  # None: act at once

    @property
    def all_events(self) -> tuple[str, ...]:
        """Volcano's effective event list: `events` then `event`."""
        return (*(self.events or ()), *((self.event,) if self.event else ()))

    @property
    def delay(self) -> timedelta | None:
        """The timeout as a duration; None means immediately."""
        return None if self.timeout is None else parse_duration(self.timeout)


def _policy_events(p: str) -> str:
    return f"((has({p}.event) ? [{p}.event] : []) + (has({p}.events) ? {p}.events : []))"


# Rules on one level's policy list (the job's, or one task's), as Volcano validates each list.
_USER_EVENT_LIST = "[" + ", ".join(f"'{e}'" for e in bus.USER_EVENTS) + "]"

# Rules on one level's policy list (the job's, or one task's), as Volcano validates each list.
# Duplicate events are counted per known event so the CEL cost stays linear in the list.
_POLICY_LIST_RULES = [
    _cel(
        f"{_USER_EVENT_LIST}.all(e, self.filter(p, e in {_policy_events('p')}).size() <= 1)",
        "duplicate event: an event may appear in only one policy of the list",
    ),
    _cel(
        "self.all(p, !has(p.exitCode) || "
        "self.exists_one(q, has(q.exitCode) && q.exitCode == p.exitCode))",
        "duplicate exitCode: an exit code may appear in only one policy of the list",
    ),
    _cel(
        f"!self.exists(p, '*' in {_policy_events('p')}) || "
        f"self.all(p, {_policy_events('p')}.all(e, e == '*'))",
        "if there's * here, no other policy should be here",
    ),
]

Policies = Annotated[
    list[LifecyclePolicy],
    Field(
        max_length=MAX_POLICIES, json_schema_extra={"x-kubernetes-validations": _POLICY_LIST_RULES}
    ),
]


class PodTemplateSpec(ApiModel):
    """A core/v1 PodTemplateSpec kept verbatim."""

    metadata: dict[str, Any] | None = None  # None: no labels or annotations of its own
    spec: dict[str, Any] | None = None  # None: rejected when pods are created


class DependsOn(ApiModel):
    name: list[str] | None = None  # None: depends on nothing
    iteration: Literal["any", "all"] | None = None  # None: Volcano's default, "all"


class PartitionPolicy(ApiModel):
    total_partitions: Annotated[Int32, Field(ge=1)]
    partition_size: Annotated[Int32, Field(ge=1)]
    network_topology: NetworkTopologySpec | None = None  # None: no topology constraint
    min_partitions: NonNegInt32 | None = None  # None: 0


class TaskSpec(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "!has(self.minAvailable) || "
                    "self.minAvailable <= (has(self.replicas) ? self.replicas : 0)",
                    "minAvailable: 'minAvailable' is greater than 'replicas'",
                    ".minAvailable",
                ),
                _cel(
                    "!has(self.partitionPolicy) || (has(self.replicas) && self.replicas == "
                    "self.partitionPolicy.totalPartitions * self.partitionPolicy.partitionSize)",
                    "replicas must equal partitionPolicy.totalPartitions * partitionSize",
                    ".replicas",
                ),
            ]
        }
    )

    name: (
        Annotated[
            str,
            Field(
                max_length=63,
                json_schema_extra={
                    "x-kubernetes-validations": [
                        _cel(
                            f"self.matches('{DNS1123_LABEL}')",
                            "must be a DNS-1123 label: lowercase letters, digits and '-', "
                            "starting and ending with a letter or digit",
                        )
                    ]
                },
            ),
        ]
        | None
    ) = None  # None: defaulted to default<index>
    replicas: NonNegInt32 | None = None  # None: 0 pods
    min_available: NonNegInt32 | None = None  # None: defaulted to replicas
    template: PodTemplateSpec | None = None  # None: an empty pod, rejected at pod creation
    policies: Policies | None = None  # None: no task-level policy
    topology_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] | None = None
    max_retry: NonNegInt32 | None = None  # None: defaulted to 3
    depends_on: DependsOn | None = None  # None: created with the job
    partition_policy: PartitionPolicy | None = None  # None: no partitions


class VolumeSpec(ApiModel):
    """A PVC mounted in every container. Without a claim name the controller generates one and
    writes it into the stored spec, next to the `volumeClaim` it creates the PVC from; so the
    CRD cannot refuse a name and a claim together: the webhook does, on CREATE only, with the
    rest of Volcano's volume rules (a mountPath used twice is named by its index there)."""

    mount_path: str = Field(min_length=1, max_length=1024, pattern=r"^[^:]*$")
    volume_claim_name: str | None = Field(default=None, max_length=253)  # None: to generate
    volume_claim: dict[str, Any] | None = None  # None: the named claim must exist


_TOTAL_REPLICAS = "self.tasks.map(t, has(t.replicas) ? t.replicas : 0).sum()"


class JobSpec(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "!has(self.minAvailable) || self.minAvailable <= " + _TOTAL_REPLICAS,
                    "minAvailable: job 'minAvailable' should not be greater than total replicas",
                    ".minAvailable",
                ),
                _cel(
                    "self.tasks.all(t, !has(t.name) || "
                    "self.tasks.exists_one(u, has(u.name) && u.name == t.name))",
                    "tasks: duplicated task name, task names must be unique",
                    ".tasks",
                ),
                _cel(
                    "self.tasks.size() == oldSelf.tasks.size() && "
                    "self.tasks.map(t, has(t.name) ? t.name : '') == "
                    "oldSelf.tasks.map(t, has(t.name) ? t.name : '')",
                    "tasks: job updates may not add, remove or rename tasks",
                    ".tasks",
                ),
            ]
        }
    )

    scheduler_name: str | None = Field(default=None, max_length=63)  # None: "volcano"
    min_available: NonNegInt32 | None = None  # None: defaulted to the tasks' minAvailable sum
    volumes: Annotated[list[VolumeSpec], Field(max_length=64)] | None = None  # None: no volumes
    tasks: Annotated[list[TaskSpec], Field(min_length=1, max_length=MAX_TASKS)]
    policies: Policies | None = None  # None: no job-level policy
    plugins: dict[str, list[str]] | None = None  # None: no plugins
    running_estimate: GoDuration | None = None  # None: no estimate given
    queue: str | None = Field(
        default=None,
        max_length=263,  # `namespace/` and a 253-character name (models/queue_refs.py)
        json_schema_extra={
            "x-crd-default": "default",
            "x-kubernetes-validations": [
                _cel("self == oldSelf", "queue is immutable once the job is created")
            ],
        },
    )  # None: the default queue
    max_retry: NonNegInt32 | None = Field(
        default=None, json_schema_extra={"x-crd-default": 3}
    )  # None: 3 runs
    ttl_seconds_after_finished: NonNegInt32 | None = None  # None: kept after it finishes
    priority_class_name: str | None = Field(default=None, max_length=253)  # None: no priority
    min_success: Annotated[Int32, Field(ge=1)] | None = None  # None: decided by the tasks
    network_topology: NetworkTopologySpec | None = None  # None: no topology constraint

    @property
    def total_replicas(self) -> int:
        """N in Volcano's rules: the sum of every task's replicas."""
        return sum(t.replicas or 0 for t in self.tasks)


class JobState(ApiModel):
    phase: JobPhase | None = None  # None: not yet observed, read as Pending
    reason: str | None = None  # None: no reason recorded
    message: str | None = None  # None: no message recorded
    last_transition_time: datetime | None = None  # None: never transitioned


class JobCondition(ApiModel):
    status: JobPhase
    last_transition_time: datetime | None = None  # None: time unknown


class TaskState(ApiModel):
    phase: dict[str, Int32] | None = None  # pod phase → count; None: no pods


class JobStatus(ApiModel):
    # Every counter None: not reported yet, read as 0.
    state: JobState | None = None
    min_available: Int32 | None = None
    task_status_count: dict[str, TaskState] | None = None
    pending: Int32 | None = None
    running: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    terminating: Int32 | None = None
    unknown: Int32 | None = None
    version: Int32 | None = None
    retry_count: Int32 | None = None
    running_duration: str | None = None
    controlled_resources: dict[str, str] | None = None
    conditions: list[JobCondition] | None = None


class Job(ApiModel):
    """A Volcano Job (`vcjob`)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _cel(
                    "self.spec.tasks.all(t, !has(t.name) || self.metadata.name.size() + "
                    "t.name.size() + string((has(t.replicas) && t.replicas > 0) ? "
                    "t.replicas - 1 : 0).size() + 2 <= 63)",
                    "metadata.name: pod names <job>-<task>-<index> must be at most 63 "
                    "characters: shorten the job or task name",
                )
            ]
        }
    )

    api_version: Literal["batch.volcano.sh/v1alpha1"] = "batch.volcano.sh/v1alpha1"
    kind: Literal["Job"] = "Job"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec
    status: JobStatus | None = None  # None: not yet reconciled
