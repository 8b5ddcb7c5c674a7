"""Kubernetes objects (plain JSON dicts) to a session `Snapshot`.

So the activity that reads the cluster stays a list call per kind: every rule about what the
scheduler sees is here and unit-tested. Pods are taken when they name one of our schedulers or
already sit on a node (foreign pods still use capacity); a pod is a task when its group-name
annotation names a PodGroup whose queue exists, otherwise it only loads its node; every pod on
a node is also kept in `Snapshot.pods` for the rules about other pods. Placements
the scheduler has assumed but not yet seen bound are passed in as `assumed` and count as
`Binding` on their node, so two sessions never hand out the same room.
Each pod is read as a task by `scheduling/cache/tasks.py`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from pydantic import ValidationError

from models import hierarchy, labels
from models.duration import positive_duration
from models.keys import JobKey, QueueName, job_key
from models.scheduling import (
    SLA_WAITING_ANNOTATIONS,
    PodGroup,
    PodGroupPhase,
    Queue,
    QueueState,
)
from models.topology import HyperNode
from scheduling.api import nodegroups, quotas, subgroups, taskaffinity, topology
from scheduling.api.constraints import Taint
from scheduling.api.devices import DeviceWorld
from scheduling.api.disruption import PodDisruptionBudget, job_budget
from scheduling.api.podterms import PodOnNode
from scheduling.api.requests import Obj, as_list, as_obj
from scheduling.api.snapshot import (
    COMPLETED,
    EPOCH,
    Finished,
    JobInfo,
    NodeInfo,
    NodeName,
    QueueInfo,
    Snapshot,
    TaskInfo,
    TaskStatus,
)
from scheduling.api.vectors import EMPTY, Resources, total
from scheduling.cache import namespacequeues
from scheduling.cache.observed import claim_names
from scheduling.cache.tasks import (
    MILLI,
    ParseMemo,
    device_request,
    priority_values,
    string_map,
)
from scheduling.cache.volumes import Storage


def node_info(
    node: Obj, pods: Sequence[TaskInfo] = (), volume_limits: Mapping[str, int] | None = None
) -> NodeInfo:
    """A node loaded with `pods` (already filtered to those on it and not terminated), with
    its CSINode's volume counts per driver (None: no CSINode)."""
    meta, spec, status = (as_obj(node.get(k)) for k in ("metadata", "spec", "status"))
    allocatable = as_obj(status.get("allocatable")) or as_obj(status.get("capacity"))
    used, nonzero = total(p.request for p in pods), total(p.nonzero_request for p in pods)
    releasing = total(p.request for p in pods if p.status is TaskStatus.RELEASING)
    return NodeInfo(
        name=NodeName(str(meta.get("name") or "")),
        allocatable=Resources.from_resource_list(
            {str(k): v for k, v in allocatable.items() if isinstance(v, str | int | float)}
        ),
        used=used,
        nonzero_used=nonzero,
        releasing=releasing,
        labels=string_map(meta.get("labels")),
        taints=tuple(Taint.model_validate(t) for t in as_list(spec.get("taints"))),
        unschedulable=spec.get("unschedulable") is True,
        volume_limits=dict(volume_limits or {}),
    )


def job_info(group: PodGroup, priority: int, default_queue: str) -> JobInfo:
    meta, spec = group.metadata, group.spec
    return JobInfo(
        key=job_key(meta.namespace or "default", meta.name or ""),
        uid=meta.uid or "",
        queue=namespacequeues.workload_queue(
            meta.namespace or "default", spec.queue, default_queue
        ),
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
        sla_waiting=sla_waiting(meta.annotations or {}),
        budget=job_budget(meta.annotations or {}),
        quota_usage=(
            quotas.quota_usage(spec.min_resources) if spec.min_resources is not None else None
        ),
        task_topology=taskaffinity.read(meta.annotations or {}),
        sub_groups=subgroups.rules(spec.sub_group_policy or ()),
    )


def sla_waiting(annotations: Mapping[str, str]) -> timedelta | None:
    """The PodGroup's own sla waiting time: `volcano.sh/sla-waiting-time`, else
    `sla-waiting-time` (Volcano's extractWaitingTime; the job controller copies a Job's
    annotations onto its PodGroup). A value that is no duration above zero counts as unset."""
    for key in SLA_WAITING_ANNOTATIONS:
        if key in annotations and (waiting := positive_duration(annotations[key])) is not None:
            return waiting
    return None


def queue_info(queue: Queue) -> QueueInfo:
    spec, name = queue.spec, queue.metadata.name or ""
    annotations = queue.metadata.annotations or {}
    path, weights = hierarchy.normalized(
        annotations.get(hierarchy.HIERARCHY, ""), annotations.get(hierarchy.WEIGHTS, "")
    )
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
        node_groups=nodegroups.queue_groups(spec.affinity),
        hierarchy=path,
        hierarchy_weights=weights,
        allowed_namespaces=tuple(spec.allowed_namespaces or ()),
    )


def _queue_of(pod: Obj) -> QueueName | None:
    """The queue a pod's Job named (Volcano's job controller writes it on the pod), by id:
    the annotation carries the raw reference, a label only a cluster Queue's name."""
    meta = as_obj(pod.get("metadata"))
    namespace = str(meta.get("namespace") or "default")
    for source in (as_obj(meta.get("annotations")), as_obj(meta.get("labels"))):
        for key in (labels.QUEUE_NAME, labels.POD_QUEUE_NAME):
            if isinstance(found := source.get(key), str) and found:
                return namespacequeues.workload_queue(namespace, found, found)
    return None


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
    now: datetime | None = None,  # None: no clock, so no job has waited (sla)
    pdbs: Iterable[Obj] = (),
    resource_quotas: Iterable[Obj] = (),
    namespace_queues: Iterable[Obj] = (),
) -> Snapshot:
    """The session snapshot from what the activity listed, sorted by key."""
    classes, default_priority = priority_values(priority_classes)
    memo = memo or ParseMemo()
    memo.begin(classes)
    listed = [queue_info(Queue.load(dict(q))) for q in queues]
    listed.extend(namespacequeues.queue_info(q) for q in namespace_queues)
    listed = namespacequeues.capped(listed)
    by_name = {q.name: q for q in listed}
    known = set(by_name)
    jobs: dict[JobKey, JobInfo] = {}
    for raw in podgroups:

        def parsed(raw: Obj = raw) -> JobInfo:
            group = PodGroup.load(dict(raw))
            pc = group.spec.priority_class_name
            return job_info(group, classes.get(pc or "", default_priority or 0), default_queue)

        job = memo.job(raw, (default_queue, default_priority), parsed)
        if job.queue not in by_name and (stand_in := namespacequeues.stand_in(raw, default_queue)):
            by_name[job.queue] = stand_in  # it names no queue the session knows: it says why
        if job.queue in by_name:
            jobs[job.key] = job
    queue_infos = sorted(by_name.values(), key=lambda q: q.name)
    tasks: list[TaskInfo] = []
    on_nodes: dict[str, list[TaskInfo]] = {}
    placed: list[PodOnNode] = []
    finished: list[Finished] = []
    for pod in pods:
        spec = as_obj(pod.get("spec"))
        if spec.get("schedulerName") not in scheduler_names and not spec.get("nodeName"):
            continue
        task = memo.task(pod, classes)
        namespace, key = task.namespace, task.job
        if storage is not None and (claims := claim_names(pod)):
            affinity = storage.volume_affinity(namespace, claims)
            volumes = storage.attached(namespace, claims)
            if affinity or volumes:
                update = {"volume_affinity": affinity, "volumes": volumes}
                task = task.model_copy(update=update)
        if devices is not None and task.resource_claims:
            extra = device_request(devices, task)
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
            placed.append(memo.placed(pod, task, task.node_name))
        if key in jobs:
            tasks.append(task)
        if task.finished is not None and task.started is not None:
            queue = jobs[key].queue if key in jobs else _queue_of(pod)
            if queue in known:
                ran = (task.finished - task.started).total_seconds()
                finished.append(Finished(queue, task.finished, max(0.0, ran)))
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
        finished=tuple(sorted(finished)),
        topology=topology.build(_hyper_nodes(hyper_nodes), {n.name: n.labels for n in node_infos}),
        devices=devices if devices is not None and not devices.empty else None,
        now=now,
        budgets=_budgets(pdbs),
        quotas=_quotas(resource_quotas),
    )


def _with_devices(node: NodeInfo, devices: DeviceWorld | None) -> NodeInfo:
    """The node's allocatable with its devices counted per class (the quota dimensions)."""
    if devices is None or not devices.devices:
        return node
    counts = devices.class_counts(node.name, node.labels)
    if not counts:
        return node
    extra = Resources.of(scalars={k: v * MILLI for k, v in counts.items()})
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


def _budgets(objects: Iterable[Obj]) -> tuple[PodDisruptionBudget, ...]:
    """The PodDisruptionBudgets that parse, by key; one whose selector does not parse matches
    no pod, as Volcano's plugin skips it."""
    parsed = []
    for obj in objects:
        try:
            parsed.append(PodDisruptionBudget.parse(obj))
        except ValidationError:
            continue
    return tuple(sorted(parsed, key=lambda b: b.key))


def _quotas(objects: Iterable[Obj]) -> tuple[quotas.ResourceQuota, ...]:
    """The ResourceQuotas whose status parses, by key; one with a quantity that does not
    parse is left out (the apiserver never writes one)."""
    parsed = []
    for obj in objects:
        try:
            parsed.append(quotas.ResourceQuota.parse(obj))
        except ValueError:
            continue
    return tuple(sorted(parsed, key=lambda q: q.key))


def _node_name(node: Obj) -> str:
    return str(as_obj(node.get("metadata")).get("name") or "")
