"""Kubernetes objects (plain JSON dicts) to a session `Snapshot`.

So the activity that reads the cluster stays a list call per kind: every rule about what the
scheduler sees is here and unit-tested. Pods are taken when they name one of our schedulers or
already sit on a node (foreign pods still use capacity); a pod is a task when its group-name
annotation names a PodGroup whose queue exists, otherwise it only loads its node; every pod on
a node is also kept in `Snapshot.pods` for the rules about other pods. Placements
the scheduler has assumed but not yet seen bound are passed in as `assumed` and count as
`Binding` on their node, so two sessions never hand out the same room.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final

from pydantic import ValidationError

from models import labels
from models.keys import JobKey, QueueName, job_key
from models.scheduling import PodGroup, PodGroupPhase, Queue, QueueState
from models.topology import HyperNode
from scheduling.api import topology
from scheduling.api.constraints import NodeSelector, PreferredSchedulingTerm, Taint, Toleration
from scheduling.api.devices import DeviceWorld, device_dimension
from scheduling.api.podterms import PodOnNode, host_ports, pod_affinity, spread_constraints
from scheduling.api.requests import Obj, as_list, as_obj, pod_request
from scheduling.api.snapshot import (
    COMPLETED,
    EPOCH,
    JobInfo,
    NodeInfo,
    NodeName,
    PodKey,
    QueueInfo,
    Snapshot,
    TaskInfo,
    TaskStatus,
    pod_on_node,
)
from scheduling.api.vectors import EMPTY, Resources
from scheduling.cache.observed import claim_names
from scheduling.cache.volumes import Storage

# Keys Volcano reads on pods that models/labels.py does not spell yet.
VOLCANO_GROUP_NAME: Final = "scheduling.volcano.sh/group-name"
TASK_PRIORITY: Final = "volcano.sh/task-priority"
PREEMPTABLE: Final = "volcano.sh/preemptable"
DEFAULT_TASK_PRIORITY: Final = 1
_MILLI: Final = 1000  # scalar resources are kept in milli-units
_PHASES: Final = {
    "Running": TaskStatus.RUNNING,
    "Succeeded": TaskStatus.SUCCEEDED,
    "Failed": TaskStatus.FAILED,
}


def _strings(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_obj(value).items()}


def _time(value: object) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else EPOCH


def pod_key(pod: Obj) -> PodKey:
    meta = as_obj(pod.get("metadata"))
    return PodKey(f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}")


def task_status(pod: Obj) -> TaskStatus:
    """Volcano's getTaskStatus: phase, deletion and whether a node is set."""
    deleting = bool(as_obj(pod.get("metadata")).get("deletionTimestamp"))
    phase = as_obj(pod.get("status")).get("phase") or "Pending"
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if as_obj(pod.get("spec")).get("nodeName") else TaskStatus.PENDING
    if phase == "Running" and deleting:
        return TaskStatus.RELEASING
    return _PHASES.get(str(phase), TaskStatus.UNKNOWN)


def _preemptable(annotations: Mapping[str, str], pod_labels: Mapping[str, str]) -> bool:
    """GetPodPreemptable: the annotation, else the label, else true; unparsable is false."""
    value = annotations.get(PREEMPTABLE, pod_labels.get(PREEMPTABLE))
    if value is None:
        return True
    return value in ("1", "t", "T", "TRUE", "true", "True")  # Go's ParseBool


def _index(name: str) -> int | None:
    """The numeric last token of `<job>-<task>-<index>`; None for other names."""
    tokens = name.split("-")
    return int(tokens[-1]) if len(tokens) >= 3 and tokens[-1].isdigit() else None


def _priority_values(classes: Iterable[Obj]) -> tuple[dict[str, int], int | None]:
    """PriorityClass values by name, and the globalDefault one's (None: no global default)."""
    values: dict[str, int] = {}
    default: int | None = None
    for pc in classes:
        value = pc.get("value")
        number = value if isinstance(value, int) else 0
        values[str(as_obj(pc.get("metadata")).get("name") or "")] = number
        if pc.get("globalDefault") is True:
            default = number
    return values, default


def _task_priority(pod: Obj, annotations: Mapping[str, str], classes: Mapping[str, int]) -> int:
    """Pod annotation, else spec.priority, else its PriorityClass, else Volcano's default 1."""
    spec = as_obj(pod.get("spec"))
    note = annotations.get(TASK_PRIORITY, "")
    if note.lstrip("-").isdigit():
        return int(note)
    priority = spec.get("priority")
    if isinstance(priority, int):
        return priority
    return classes.get(str(spec.get("priorityClassName") or ""), DEFAULT_TASK_PRIORITY)


def task_info(pod: Obj, job: JobKey, classes: Mapping[str, int] | None = None) -> TaskInfo:
    """One pod as a task of `job`; `classes` are PriorityClass values by name (None: none)."""
    meta, spec = as_obj(pod.get("metadata")), as_obj(pod.get("spec"))
    annotations, pod_labels = _strings(meta.get("annotations")), _strings(meta.get("labels"))
    node_affinity = as_obj(as_obj(spec.get("affinity")).get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    node = spec.get("nodeName")
    return TaskInfo(
        key=pod_key(pod),
        uid=str(meta.get("uid") or ""),
        job=job,
        role=annotations.get(labels.TASK_SPEC) or pod_labels.get(labels.TASK_SPEC, ""),
        request=pod_request(spec),
        nonzero_request=pod_request(spec, nonzero=True),
        priority=_task_priority(pod, annotations, classes or {}),
        status=task_status(pod),
        node_name=NodeName(str(node)) if node else None,
        node_selector=_strings(spec.get("nodeSelector")),
        required_affinity=NodeSelector.model_validate(required) if required is not None else None,
        preferred_affinity=tuple(PreferredSchedulingTerm.model_validate(t) for t in preferred),
        tolerations=tuple(Toleration.model_validate(t) for t in as_list(spec.get("tolerations"))),
        gated=bool(as_list(spec.get("schedulingGates"))),
        creation=_time(meta.get("creationTimestamp")),
        index=_index(str(meta.get("name") or "")),
        preemptable=_preemptable(annotations, pod_labels),
        priority_class=str(spec.get("priorityClassName") or ""),
        preempts=spec.get("preemptionPolicy") != "Never",
        labels=pod_labels,
        pod_affinity=pod_affinity(spec),
        spread=spread_constraints(spec, pod_labels),
        host_ports=host_ports(spec),
        resource_claims=resource_claims(pod),
    )


def resource_claims(pod: Obj) -> tuple[str, ...]:
    """The names of the pod's ResourceClaims, in spec order: the one it names, or the one
    kube-controller-manager made from its template ("" until the pod's status says)."""
    made = {
        str(s.get("name") or ""): str(s.get("resourceClaimName") or "")
        for s in as_list(as_obj(pod.get("status")).get("resourceClaimStatuses"))
    }
    out = []
    for entry in as_list(as_obj(pod.get("spec")).get("resourceClaims")):
        name = entry.get("resourceClaimName")
        out.append(str(name) if name else made.get(str(entry.get("name") or ""), ""))
    return tuple(out)


def _device_request(devices: DeviceWorld, task: TaskInfo) -> Resources:
    """The devices a pod's own claims (made for it from a template) ask for, per class, as
    quota dimensions; a claim shared by several pods counts for none of them."""
    counts: dict[str, int] = {}
    for name in dict.fromkeys(task.resource_claims):
        claim = devices.claims.get((task.namespace, name))
        if claim is None or claim.owner_pod != task.uid:
            continue
        for request in claim.requests:
            option = request.options[0] if request.options else None
            if option is not None and not option.all:
                dimension = device_dimension(option.device_class)
                counts[dimension] = counts.get(dimension, 0) + option.count * _MILLI
    return Resources.of(scalars=counts) if counts else EMPTY


def node_info(
    node: Obj, pods: Sequence[TaskInfo] = (), volume_limits: Mapping[str, int] | None = None
) -> NodeInfo:
    """A node loaded with `pods` (already filtered to those on it and not terminated), with
    its CSINode's volume counts per driver (None: no CSINode)."""
    meta, spec, status = (as_obj(node.get(k)) for k in ("metadata", "spec", "status"))
    allocatable = as_obj(status.get("allocatable")) or as_obj(status.get("capacity"))
    used, nonzero, releasing = EMPTY, EMPTY, EMPTY
    for pod in pods:
        used, nonzero = used.add(pod.request), nonzero.add(pod.nonzero_request)
        if pod.status is TaskStatus.RELEASING:
            releasing = releasing.add(pod.request)
    return NodeInfo(
        name=NodeName(str(meta.get("name") or "")),
        allocatable=Resources.from_resource_list(
            {str(k): v for k, v in allocatable.items() if isinstance(v, str | int | float)}
        ),
        used=used,
        nonzero_used=nonzero,
        releasing=releasing,
        labels=_strings(meta.get("labels")),
        taints=tuple(Taint.model_validate(t) for t in as_list(spec.get("taints"))),
        unschedulable=spec.get("unschedulable") is True,
        volume_limits=dict(volume_limits or {}),
    )


def job_info(group: PodGroup, priority: int, default_queue: str) -> JobInfo:
    meta, spec = group.metadata, group.spec
    return JobInfo(
        key=job_key(meta.namespace or "default", meta.name or ""),
        uid=meta.uid or "",
        queue=QueueName(spec.queue or default_queue),
        min_member=spec.min_member or 0,
        min_task_member=dict(spec.min_task_member or {}),
        min_resources=(
            Resources.from_resource_list(spec.min_resources)
            if spec.min_resources is not None
            else None
        ),
        priority=priority,
        creation=meta.creation_timestamp or EPOCH,
        phase=(group.status.phase if group.status else None) or PodGroupPhase.PENDING,
        network_topology=topology.job_topology(spec.network_topology),
    )


def queue_info(queue: Queue) -> QueueInfo:
    spec, name = queue.spec, queue.metadata.name or ""
    guarantee = spec.guarantee.resource if spec.guarantee else None
    return QueueInfo(
        name=QueueName(name),
        weight=spec.weight or 1,
        capability=Resources.from_resource_list(spec.capability) if spec.capability else None,
        guarantee=Resources.from_resource_list(guarantee) if guarantee else None,
        deserved=Resources.from_resource_list(spec.deserved) if spec.deserved else None,
        state=(queue.status.state if queue.status else None) or QueueState.OPEN,
        parent=QueueName(spec.parent or "root") if name != "root" else None,
        priority=spec.priority or 0,
        creation=queue.metadata.creation_timestamp or EPOCH,
        reclaimable=spec.reclaimable is not False,
    )


def _group_of(pod: Obj) -> str:
    annotations = _strings(as_obj(pod.get("metadata")).get("annotations"))
    return annotations.get(labels.GROUP_NAME) or annotations.get(VOLCANO_GROUP_NAME, "")


_Version = tuple[str, str]  # (uid, resourceVersion): one state of one object


def _version(obj: Obj) -> _Version | None:
    meta = as_obj(obj.get("metadata"))
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    return (str(uid), str(rv)) if uid and rv else None


class ParseMemo:
    """Pods parsed as tasks in the previous session, by (uid, resourceVersion): a change to a
    pod gives it a new resourceVersion, so a session parses only the pods that changed since.
    Entries not used by a session are dropped by the next, so it holds one cluster's worth."""

    def __init__(self) -> None:
        self._classes: tuple[tuple[str, int], ...] = ()
        self._tasks: dict[tuple[_Version, JobKey], TaskInfo] = {}
        self._used: dict[tuple[_Version, JobKey], TaskInfo] = {}

    def begin(self, classes: Mapping[str, int]) -> None:
        """A session starts: what the last one used is kept; priorities changed: nothing is."""
        current = tuple(sorted(classes.items()))
        self._tasks = self._used if current == self._classes else {}
        self._classes, self._used = current, {}

    def task(self, pod: Obj, job: JobKey, classes: Mapping[str, int]) -> TaskInfo:
        version = _version(pod)
        if version is None:
            return task_info(pod, job, classes)
        key = (version, job)
        found = self._tasks.get(key)
        if found is None:
            found = task_info(pod, job, classes)
        self._used[key] = found
        return found


def snapshot_from_objects(
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    podgroups: Iterable[Obj],
    queues: Iterable[Obj],
    priority_classes: Iterable[Obj] = (),
    *,
    scheduler_names: Sequence[str] = ("volcano",),
    default_queue: str = "default",
    assumed: Mapping[str, str] | None = None,  # None: no placement awaiting its bind
    memo: ParseMemo | None = None,  # None: parse every pod
    storage: Storage | None = None,  # None: no PV known, so no pod's volumes restrict its node
    hyper_nodes: Iterable[Obj] = (),
    devices: DeviceWorld | None = None,  # None: no DRA device or claim known
) -> Snapshot:
    """The session snapshot from what the activity listed, sorted by key."""
    classes, default_priority = _priority_values(priority_classes)
    memo = memo or ParseMemo()
    memo.begin(classes)
    queue_infos = sorted((queue_info(Queue.load(dict(q))) for q in queues), key=lambda q: q.name)
    known = {q.name for q in queue_infos}
    jobs: dict[JobKey, JobInfo] = {}
    for raw in podgroups:
        group = PodGroup.load(dict(raw))
        pc = group.spec.priority_class_name
        priority = classes.get(pc or "", default_priority or 0)
        job = job_info(group, priority, default_queue)
        if job.queue in known:
            jobs[job.key] = job
    tasks: list[TaskInfo] = []
    on_nodes: dict[str, list[TaskInfo]] = {}
    placed: list[PodOnNode] = []
    for pod in pods:
        spec = as_obj(pod.get("spec"))
        if spec.get("schedulerName") not in scheduler_names and not spec.get("nodeName"):
            continue
        namespace = str(as_obj(pod.get("metadata")).get("namespace") or "default")
        key = job_key(namespace, _group_of(pod))
        task = memo.task(pod, key, classes)
        if storage is not None and (claims := claim_names(pod)):
            affinity = storage.volume_affinity(namespace, claims)
            volumes = storage.attached(namespace, claims)
            if affinity or volumes:
                update = {"volume_affinity": affinity, "volumes": volumes}
                task = task.model_copy(update=update)
        if devices is not None and task.resource_claims:
            extra = _device_request(devices, task)
            if extra != EMPTY:
                task = task.model_copy(
                    update={
                        "request": task.request.add(extra),
                        "nonzero_request": task.nonzero_request.add(extra),
                    }
                )
        target = (assumed or {}).get(task.key)
        if task.status is TaskStatus.PENDING and target:
            task = task.model_copy(
                update={"status": TaskStatus.BINDING, "node_name": NodeName(target)}
            )
        if task.node_name and task.status not in COMPLETED:
            on_nodes.setdefault(task.node_name, []).append(task)
            placed.append(pod_on_node(task, task.node_name))
        if key in jobs:
            tasks.append(task)
    limits = storage.limits if storage is not None else {}
    node_infos = tuple(
        sorted(
            (
                _with_devices(node_info(n, on_nodes.get(name, []), limits.get(name)), devices)
                for n in nodes
                for name in (_node_name(n),)
            ),
            key=lambda n: n.name,
        )
    )
    return Snapshot(
        nodes=node_infos,
        jobs=tuple(sorted(jobs.values(), key=lambda j: j.key)),
        tasks=tuple(sorted(tasks, key=lambda t: t.key)),
        queues=tuple(queue_infos),
        pods=tuple(sorted(placed, key=lambda p: p.key)),
        topology=topology.build(_hyper_nodes(hyper_nodes), {n.name: n.labels for n in node_infos}),
        devices=devices if devices is not None and not devices.empty else None,
    )


def _with_devices(node: NodeInfo, devices: DeviceWorld | None) -> NodeInfo:
    """The node's allocatable with its devices counted per class (the quota dimensions)."""
    if devices is None or not devices.devices:
        return node
    counts = devices.class_counts(node.name, node.labels)
    if not counts:
        return node
    extra = Resources.of(scalars={k: v * _MILLI for k, v in counts.items()})
    return node.model_copy(update={"allocatable": node.allocatable.add(extra)})


def _hyper_nodes(objects: Iterable[Obj]) -> list[HyperNode]:
    """The HyperNodes that parse; one stored before its rules were checked is left out
    rather than failing every session."""
    parsed = []
    for obj in objects:
        try:
            parsed.append(HyperNode.load(dict(obj)))
        except ValidationError:
            continue
    return parsed


def _node_name(node: Obj) -> str:
    return str(as_obj(node.get("metadata")).get("name") or "")
