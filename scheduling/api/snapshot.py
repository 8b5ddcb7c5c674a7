"""One session's view of the cluster: nodes, tasks, jobs and queues.

Frozen models, built once per session by `scheduling.cache.objects.snapshot_from_objects` from what
the snapshot activity read, and never mutated: the session works on its own copy
(`scheduling.framework.state`). Every collection is a tuple sorted by key, so whatever iterates it
produces the same order on every worker and on replay.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from fractions import Fraction
from functools import cached_property
from typing import Final, NamedTuple, NewType

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, model_validator

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase, QueueState
from scheduling.api.constraints import NodeSelector, PreferredSchedulingTerm, Taint, Toleration
from scheduling.api.devices import DeviceWorld
from scheduling.api.disruption import JobBudget, PodDisruptionBudget
from scheduling.api.nodegroups import NodeGroupRule, QueueGroups
from scheduling.api.podterms import (
    AttachedVolume,
    HostPort,
    PodAffinity,
    PodOnNode,
    SpreadConstraint,
)
from scheduling.api.quotas import ResourceQuota
from scheduling.api.subgroups import SubGroupRule
from scheduling.api.taskaffinity import TaskTopology
from scheduling.api.topology import JobTopology, Topology
from scheduling.api.vectors import EMPTY, Resources, total

# Pod and node keys; they belong in models/keys.py beside JobKey once that module is open.
PodKey = NewType("PodKey", str)  # "<namespace>/<name>"
NodeName = NewType("NodeName", str)

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)  # creation time of objects that carry none


class TaskStatus(StrEnum):
    """Volcano's TaskStatus, spelled as Volcano prints it."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


ALLOCATED_CLASS: Final = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING}
)
SCHEDULED: Final = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED}
)
COMPLETED: Final = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
PREEMPTABLE: Final = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})  # may be evicted


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NodeInfo(_Frozen):
    """A node with what is already placed on it (bound, running and assumed pods)."""

    name: NodeName
    allocatable: Resources = EMPTY  # `pods` holds the pod capacity
    used: Resources = EMPTY  # requests of the pods on it; `pods` holds their count
    nonzero_used: Resources = EMPTY  # the same with kube's defaults for request-less pods
    releasing: Resources = EMPTY  # requests of its pods being deleted (part of `used`)
    pipelined: Resources = EMPTY  # session only: tasks waiting for the releasing room
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    volume_limits: dict[str, int] = Field(default_factory=dict)  # CSI driver -> volume count

    @property
    def idle(self) -> Resources:
        """Allocatable minus used; negative when the node is overcommitted."""
        return self.allocatable.sub(self.used)

    @property
    def future_idle(self) -> Resources:
        """Volcano's FutureIdle: idle plus what is being released, less what waits for it."""
        return self.idle.add(self.releasing).sub(self.pipelined)

    @property
    def pod_count(self) -> int:
        """Pods on the node, counting those pipelined onto it (Volcano counts node.Tasks)."""
        return self.used.pods + self.pipelined.pods


class TaskInfo(_Frozen):
    """One pod of a PodGroup, with what the predicates and orderings need from it."""

    key: PodKey
    uid: str = ""
    job: JobKey
    role: str = ""  # volcano.sh/task-spec; "": the pod names no role
    request: Resources = EMPTY  # init-container max rule applied; `pods` is 1
    nonzero_request: Resources = EMPTY  # with kube's 100m / 200Mi for missing requests
    priority: int = 1
    status: TaskStatus = TaskStatus.PENDING
    node_name: NodeName | None = None  # None: not placed on a node
    node_selector: dict[str, str] = Field(default_factory=dict)
    required_affinity: NodeSelector | None = None  # None: no required node affinity
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()  # only scores nodes
    tolerations: tuple[Toleration, ...] = ()
    gated: bool = False  # the pod has schedulingGates
    creation: datetime = EPOCH
    index: int | None = None  # None: the pod name carries no numeric index
    preemptable: bool = True  # volcano.sh/preemptable: others may evict it
    priority_class: str = ""  # spec.priorityClassName ("" : none)
    preempts: bool = True  # False: spec.preemptionPolicy Never, it evicts nobody
    # The required node affinity of each PV the pod's claims are bound to.
    volume_affinity: tuple[NodeSelector, ...] = ()
    # What the rules about other pods read (the inter-pod plugins, over `plugins.podview`).
    labels: dict[str, str] = Field(default_factory=dict)
    pod_affinity: PodAffinity | None = None  # None: no pod (anti-)affinity terms
    spread: tuple[SpreadConstraint, ...] = ()  # topologySpreadConstraints
    host_ports: tuple[HostPort, ...] = ()
    volumes: tuple[AttachedVolume, ...] = ()  # the CSI volumes its claims attach to its node
    # Its ResourceClaims' names, in spec order ("": made from a template and not created yet).
    resource_claims: tuple[str, ...] = ()
    # Session only: its queue's nodegroup rule (`plugins.nodegroup`); None: the plugin is off.
    node_groups: NodeGroupRule | None = None
    # The cdp plugin's reading: volcano.sh/cooldown-time (label, else annotation); None: not
    # set or not a Go duration. Since when it runs: its PodScheduled condition's time while
    # its phase is Running, as cdp reads it; None: not running, or no such condition.
    cooldown: timedelta | None = None
    running_since: datetime | None = None
    # When the pod started (status.startTime) and, once completed, when its last container
    # finished: how long the queue's jobs run (`framework.estimates`). None: not known.
    started: datetime | None = None
    finished: datetime | None = None
    # spec.activeDeadlineSeconds: the kubelet ends the pod this long after its start, so it
    # runs no longer than that (`framework.estimates`). None: not set.
    active_deadline: timedelta | None = None
    # resource-strategy-fit's pod annotations: the scoring type ("": none asked) and the
    # per-resource weights (None: absent or not a JSON map of whole numbers).
    fit_type: str = ""
    fit_weights: dict[str, int] | None = None

    @property
    def namespace(self) -> str:
        return self.key.partition("/")[0]

    @cached_property
    def best_effort(self) -> bool:
        """No cpu, memory or scalar request: placed by backfill, never by the gang statement.
        Cached: readiness asks it of every pending task of a gang once per task placed."""
        return self.request.is_empty()


class JobInfo(_Frozen):
    """A PodGroup: the gang and its demands (tasks are in `Snapshot.tasks`)."""

    key: JobKey
    uid: str = ""
    queue: QueueName
    min_member: int = 0
    min_task_member: dict[str, int] = Field(default_factory=dict)
    min_resources: Resources | None = None  # None: enqueue is always permitted
    priority: int = 0
    creation: datetime = EPOCH
    phase: PodGroupPhase = PodGroupPhase.PENDING
    network_topology: JobTopology | None = None  # None: placed anywhere
    sla_waiting: timedelta | None = None  # its own sla-waiting-time; None: the plugin's
    budget: JobBudget | None = None  # its jdb-* annotation (the pdb plugin); None: none
    # minResources in the quota evaluator's names (the resourcequota plugin); None: none set.
    quota_usage: dict[str, Fraction] | None = None
    # Its task-topology annotations (the task-topology plugin); None: none of them is set.
    task_topology: TaskTopology | None = None
    sub_groups: tuple[SubGroupRule, ...] = ()  # its subGroupPolicy; (): one gang

    @property
    def min_task_member_total(self) -> int:
        return sum(self.min_task_member.values())

    @property
    def is_pending(self) -> bool:
        """Not admitted yet: the enqueue action decides, allocate skips it."""
        return self.phase is PodGroupPhase.PENDING


class QueueInfo(_Frozen):
    name: QueueName
    weight: int = 1
    capability: Resources | None = None  # None: no upper limit
    guarantee: Resources | None = None  # None: nothing reserved
    deserved: Resources | None = None  # None: the proportion plugin computes it
    state: QueueState = QueueState.OPEN
    parent: QueueName | None = None  # None: the root queue
    priority: int = 0
    creation: datetime = EPOCH
    reclaimable: bool = True  # other queues may evict its tasks above its deserved share
    node_groups: QueueGroups | None = None  # spec.affinity's node groups; None: no affinity
    # Its `volcano.sh/hierarchy` path and `volcano.sh/hierarchy-weights` as Volcano stores
    # them (`models.hierarchy.normalized`), read by drf with enableHierarchy; "": not set.
    hierarchy: str = ""
    hierarchy_weights: str = ""
    # A NamespaceQueue (`name` is then `<namespace>/<name>`, `parent` its parent's id) carries
    # its namespace: scope is read here, never parsed out of the name. "": a cluster Queue.
    namespace: str = ""
    # Why the queue places nothing whatever its quota (a NamespaceQueue not Open and Ready, or
    # a queue a workload names that does not exist or cannot be parsed); None: it may place.
    refusal: str | None = None
    listed: bool = True  # False: no object behind it, it stands in so its jobs hear why
    # A cluster Queue's spec.allowedNamespaces: whose NamespaceQueues may hang under it.
    allowed_namespaces: tuple[str, ...] = ()

    @property
    def namespaced(self) -> bool:
        return bool(self.namespace)


class Finished(NamedTuple):
    """A completed pod's run, for its queue's record (`framework.estimates`)."""

    queue: QueueName
    at: datetime  # when its last container finished
    seconds: float  # from its start


class Snapshot(_Frozen):
    """Everything one session decides over, each tuple sorted by key."""

    nodes: tuple[NodeInfo, ...] = ()
    jobs: tuple[JobInfo, ...] = ()
    tasks: tuple[TaskInfo, ...] = ()
    queues: tuple[QueueInfo, ...] = ()
    # Every pod on a node (tasks and foreign pods), for the rules about other pods.
    pods: tuple[PodOnNode, ...] = ()
    topology: Topology = Field(default_factory=Topology)  # the HyperNodes over `nodes`
    devices: InstanceOf[DeviceWorld] | None = None  # None: no DRA device or claim known
    budgets: tuple[PodDisruptionBudget, ...] = ()  # the PodDisruptionBudgets (the pdb plugin)
    quotas: tuple[ResourceQuota, ...] = ()  # the ResourceQuotas by key (resourcequota plugin)
    now: datetime | None = None  # when the cluster was read (sla's waits); None: no clock
    # Completed pods' runs by queue, their PodGroup gone or not (a Volcano Job's goes when it
    # completes): how long the queue's jobs run.
    finished: tuple[Finished, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Snapshot:
        """Keys are unique and references resolve: every lookup here is by key."""
        for kind, keys in (
            ("node", [n.name for n in self.nodes]),
            ("job", [j.key for j in self.jobs]),
            ("task", [t.key for t in self.tasks]),
            ("queue", [q.name for q in self.queues]),
        ):
            repeated = sorted(k for k, n in Counter(keys).items() if n > 1)
            if repeated:
                raise ValueError(f"snapshot: {kind} keys must be unique, repeated: {repeated}")
        queues, jobs = {q.name for q in self.queues}, {j.key for j in self.jobs}
        for job in self.jobs:
            if job.queue not in queues:
                raise ValueError(f"snapshot: job {job.key}: queue {job.queue!r} is not in queues")
        for task in self.tasks:
            if task.job not in jobs:
                raise ValueError(f"snapshot: task {task.key}: job {task.job!r} is not in jobs")
        return self

    @cached_property
    def _tasks_by_job(self) -> dict[JobKey, tuple[TaskInfo, ...]]:
        grouped: dict[JobKey, list[TaskInfo]] = {job.key: [] for job in self.jobs}
        for task in self.tasks:
            grouped.setdefault(task.job, []).append(task)
        return {key: tuple(tasks) for key, tasks in grouped.items()}

    @property
    def total_resource(self) -> Resources:
        """Volcano's TotalResource: the sum of every node's allocatable."""
        return total(node.allocatable for node in self.nodes)

    def node(self, name: str) -> NodeInfo:
        found = next((n for n in self.nodes if n.name == name), None)
        if found is None:
            raise KeyError(f"snapshot has no node {name!r}")
        return found

    def job(self, key: str) -> JobInfo:
        found = next((j for j in self.jobs if j.key == key), None)
        if found is None:
            raise KeyError(f"snapshot has no job {key!r}")
        return found

    def queue(self, name: str) -> QueueInfo | None:
        """None: no such queue (its jobs are invisible to the session)."""
        return next((q for q in self.queues if q.name == name), None)

    def tasks_of(self, key: JobKey) -> tuple[TaskInfo, ...]:
        return self._tasks_by_job.get(key, ())

    def pending_tasks(self, key: JobKey | None = None) -> tuple[TaskInfo, ...]:
        """Pending tasks of one job, or of all jobs when `key` is None."""
        tasks = self.tasks if key is None else self.tasks_of(key)
        return tuple(t for t in tasks if t.status is TaskStatus.PENDING)


def pod_on_node(task: TaskInfo, node: NodeName) -> PodOnNode:
    """What the rules about other pods keep of a task on `node` (the snapshot's `pods`, and
    the session's `plugins.podview.PodView` as tasks are placed)."""
    return PodOnNode.model_construct(  # every field is already a parsed, validated value
        key=task.key,
        namespace=task.namespace,
        node=node,
        labels=task.labels,
        affinity=task.pod_affinity,
        host_ports=task.host_ports,
        volumes=task.volumes,
        deleting=task.status is TaskStatus.RELEASING,
    )
