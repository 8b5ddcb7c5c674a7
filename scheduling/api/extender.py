"""Volcano's HTTP scheduler-extender protocol as data, and the port a session asks it through.

The bodies are Volcano's (`pkg/scheduler/plugins/extender/argument.go`): vc-scheduler
marshals its own `api.TaskInfo`, `api.NodeInfo` and `api.JobInfo` with Go's field names
(`UID`, `Resreq`, `MilliCPU`, a task's `Status` as Volcano's bit-flag number), so an extender
written for Volcano reads Caldera's requests the same way. Caldera has no raw Pod or Node in a
session, so the `Pod` and `Node` members carry the parts Caldera keeps (metadata, selector,
taints, the request as one container), built by `task_body`, `node_body` and `job_body`.
Answers are read leniently (`extra="ignore"`), as Go's decoder skips unknown members.

`ExtenderPort` is the boundary: the session calls it with these models and gets models back,
or a `Failure` (no answer, a status other than 200, a body that does not decode, a timeout).
What a failure means (`extender.ignorable`) is the session's decision (`plugins.extender`);
the HTTP client lives in the shell (`activities.scheduler.extender`). Predicate requests go as one
batch per task, one request per candidate node as Volcano's protocol has them, so the shell can send
them side by side.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from pydantic import BaseModel, ConfigDict, Field

from scheduling.api.snapshot import JobInfo, NodeInfo, TaskInfo
from scheduling.api.vectors import Resources

# Volcano's api.TaskStatus bit flags (Pending = 1 << iota), as its JSON carries them.
TASK_STATUS: Final = {
    name: 1 << i
    for i, name in enumerate(
        (
            "Pending",
            "Allocated",
            "Pipelined",
            "Binding",
            "Bound",
            "Running",
            "Releasing",
            "Succeeded",
            "Failed",
            "Unknown",
        )
    )
}
# api.Status codes a predicate answer carries (Success 0, Error 1, Unschedulable 2, ...).
SUCCESS: Final = 0
ERROR: Final = 1
UNSCHEDULABLE: Final = 2


class _Body(BaseModel):
    """A request body: Go's field names on the wire (`by_alias`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class _Answer(BaseModel):
    """An answer: unknown members ignored, as Go's json decoder does."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class ResourceBody(_Body):
    milli_cpu: float = Field(default=0, alias="MilliCPU")
    memory: float = Field(default=0, alias="Memory")
    scalar_resources: dict[str, float] = Field(default_factory=dict, alias="ScalarResources")
    max_task_num: int = Field(default=0, alias="MaxTaskNum")


class TaskBody(_Body):
    uid: str = Field(alias="UID")
    job: str = Field(alias="Job")
    name: str = Field(alias="Name")
    namespace: str = Field(alias="Namespace")
    task_role: str = Field(default="", alias="TaskRole")
    resreq: ResourceBody = Field(alias="Resreq")
    init_resreq: ResourceBody = Field(alias="InitResreq")
    node_name: str = Field(default="", alias="NodeName")
    status: int = Field(alias="Status")
    priority: int = Field(default=0, alias="Priority")
    preemptable: bool = Field(default=False, alias="Preemptable")
    best_effort: bool = Field(default=False, alias="BestEffort")
    sch_gated: bool = Field(default=False, alias="SchGated")
    pod: dict[str, object] = Field(default_factory=dict, alias="Pod")


class NodeBody(_Body):
    name: str = Field(alias="Name")
    node: dict[str, object] = Field(default_factory=dict, alias="Node")
    releasing: ResourceBody = Field(alias="Releasing")
    pipelined: ResourceBody = Field(alias="Pipelined")
    idle: ResourceBody = Field(alias="Idle")
    used: ResourceBody = Field(alias="Used")
    allocatable: ResourceBody = Field(alias="Allocatable")
    capacity: ResourceBody = Field(alias="Capacity")


class JobBody(_Body):
    uid: str = Field(alias="UID")
    name: str = Field(alias="Name")
    namespace: str = Field(alias="Namespace")
    queue: str = Field(alias="Queue")
    priority: int = Field(default=0, alias="Priority")
    min_available: int = Field(default=0, alias="MinAvailable")
    task_min_available: dict[str, int] = Field(default_factory=dict, alias="TaskMinAvailable")
    min_resources: ResourceBody | None = Field(default=None, alias="MinResources")  # None: unset
    tasks: dict[str, TaskBody] = Field(default_factory=dict, alias="Tasks")


class QueueBody(_Body):
    uid: str = Field(alias="UID")
    name: str = Field(alias="Name")
    weight: int = Field(default=1, alias="Weight")


class SessionOpenRequest(_Body):
    """onSessionOpen: the session's jobs, nodes and queues, keyed as Volcano keys them."""

    jobs: dict[str, JobBody] = Field(default_factory=dict, alias="Jobs")
    nodes: dict[str, NodeBody] = Field(default_factory=dict, alias="Nodes")
    queues: dict[str, QueueBody] = Field(default_factory=dict, alias="Queues")
    namespace_info: dict[str, object] = Field(default_factory=dict, alias="NamespaceInfo")
    revocable_nodes: dict[str, NodeBody] = Field(default_factory=dict, alias="RevocableNodes")
    node_list: list[str] = Field(default_factory=list, alias="NodeList")


class PredicateRequest(_Body):
    task: TaskBody
    node: NodeBody


class PredicateResponse(_Answer):
    error_message: str = Field(default="", alias="status")
    code: int = 0


class PrioritizeRequest(_Body):
    task: TaskBody
    nodes: list[NodeBody]


class PrioritizeResponse(_Answer):
    node_score: dict[str, float] | None = Field(default=None, alias="nodeScore")  # None: absent
    error_message: str = Field(default="", alias="errorMessage")


class EvictableRequest(_Body):
    """preemptable and reclaimable alike (Volcano's ReclaimableRequest is the same type)."""

    evictor: TaskBody
    evictees: list[TaskBody]


class Victim(_Answer):
    uid: str = Field(default="", alias="UID")


class EvictableResponse(_Answer):
    status: int = 0  # util.Permit 1, Abstain 0, Reject -1
    victims: list[Victim] | None = None  # None: null or absent


class JobEnqueueableRequest(_Body):
    job: JobBody


class JobEnqueueableResponse(_Answer):
    status: int = 0


def resource(vector: Resources) -> ResourceBody:
    return ResourceBody(
        milli_cpu=float(vector.milli_cpu),
        memory=float(vector.memory),
        scalar_resources={name: float(value) for name, value in vector.scalars.items()},
        max_task_num=vector.pods,
    )


def task_body(task: TaskInfo) -> TaskBody:
    """A task as Volcano's api.TaskInfo marshals; `UID` the pod's uid (its key if unknown)."""
    namespace, _, name = task.key.partition("/")
    uid = task.uid or task.key
    requests = {k: v for k, v in task.request.to_resource_list().items() if k != "pods"}
    pod = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "labels": task.labels},
        "spec": {
            "nodeName": task.node_name or "",
            "nodeSelector": task.node_selector,
            "priorityClassName": task.priority_class,
            "containers": [{"name": task.role or "main", "resources": {"requests": requests}}],
        },
    }
    return TaskBody(
        uid=uid,
        job=task.job,
        name=name,
        namespace=namespace,
        task_role=task.role,
        resreq=resource(task.request),
        init_resreq=resource(task.request),
        node_name=task.node_name or "",
        status=TASK_STATUS[task.status.value],
        priority=task.priority,
        preemptable=task.preemptable,
        best_effort=task.best_effort,
        sch_gated=task.gated,
        pod=pod,
    )


def node_body(node: NodeInfo) -> NodeBody:
    taints = [t.model_dump(mode="json") for t in node.taints]
    return NodeBody(
        name=node.name,
        node={
            "metadata": {"name": node.name, "labels": node.labels},
            "spec": {"unschedulable": node.unschedulable, "taints": taints},
            "status": {"allocatable": node.allocatable.to_resource_list()},
        },
        releasing=resource(node.releasing),
        pipelined=resource(node.pipelined),
        idle=resource(node.idle),
        used=resource(node.used),
        allocatable=resource(node.allocatable),
        capacity=resource(node.allocatable),
    )


def job_body(job: JobInfo, tasks: Sequence[TaskInfo]) -> JobBody:
    namespace, _, name = job.key.partition("/")
    bodies = [task_body(t) for t in tasks]
    return JobBody(
        uid=job.key,
        name=name,
        namespace=namespace,
        queue=job.queue,
        priority=job.priority,
        min_available=job.min_member,
        task_min_available=job.min_task_member,
        min_resources=resource(job.min_resources) if job.min_resources is not None else None,
        tasks={b.uid: b for b in bodies},
    )


class Failure(BaseModel):
    """No usable answer: why (the verb, the URL, the status or the transport error)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: str


class ExtenderPort(Protocol):
    """The calls a session makes to an extender; the verbs and URL are the implementation's.
    A method is called only when its verb is configured."""

    def session_open(self, request: SessionOpenRequest) -> Failure | None: ...

    def session_close(self) -> Failure | None: ...

    def predicate(
        self, requests: Sequence[PredicateRequest]
    ) -> list[PredicateResponse | Failure]: ...

    def prioritize(self, request: PrioritizeRequest) -> PrioritizeResponse | Failure: ...

    def preemptable(self, request: EvictableRequest) -> EvictableResponse | Failure: ...

    def reclaimable(self, request: EvictableRequest) -> EvictableResponse | Failure: ...

    def job_enqueueable(
        self, request: JobEnqueueableRequest
    ) -> JobEnqueueableResponse | Failure: ...
