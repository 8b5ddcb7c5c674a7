"""What a session writes back: PodGroup status, PodScheduled on waiting pods, queue allocation,
and the condition of a Kubernetes PodGroup (scheduling.k8s.io) whose gang a PodGroup mirrors.

The scheduler owns PodGroup `status` (phase and conditions), queue `status.allocated` and the
PodScheduled=False condition of pods that wait. Each planner compares what the session decided
with what the cache holds and plans a write only where they differ, so an idle cluster costs
reads only and a session that sees its own earlier writes writes nothing again. The session
activity performs the writes in the order planned.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from models import kube_gangs, vcjob
from models.keys import JobKey, QueueName, job_key
from scheduling.api.requests import Obj, as_obj
from scheduling.api.result import (
    NOT_ENOUGH_RESOURCES,
    ConditionType,
    JobCondition,
    PhaseUpdate,
    PodCondition,
)
from scheduling.api.snapshot import PodKey
from scheduling.api.vectors import Resources
from scheduling.cache.observed import ObservedGroup, ObservedPod, ObservedQueue


@dataclass(frozen=True)
class JobNotice:
    """A new Unschedulable message, also told to the Volcano Job, where users look first."""

    namespace: str
    job: str
    uid: str  # "": the PodGroup's ownerReference to the Job names none
    message: str


@dataclass(frozen=True)
class GroupStatusWrite:
    namespace: str
    name: str
    phase: str | None  # None: the PodGroup has none and the session set none
    conditions: tuple[Obj, ...]  # the conditions kept, then the new ones
    notice: JobNotice | None  # None: no new Unschedulable message, or no Volcano Job to tell

    @property
    def key(self) -> JobKey:
        return job_key(self.namespace, self.name)

    def status(self) -> dict[str, object]:
        return {"phase": self.phase, "conditions": [dict(c) for c in self.conditions]}


@dataclass(frozen=True)
class PodScheduledWrite:
    namespace: str
    pod: str
    reason: str
    message: str
    nominated_node: str = ""  # "": leave status.nominatedNodeName alone


@dataclass(frozen=True)
class QueueAllocatedWrite:
    queue: QueueName  # the canonical id (`<namespace>/<name>` for a NamespaceQueue)
    allocated: Mapping[str, str | None]  # a merge patch: None drops what is no longer allocated
    namespace: str = ""  # a NamespaceQueue's, written through its namespaced status; "": cluster
    name: str = ""  # the object's metadata.name; "": `queue`


@dataclass(frozen=True)
class KubeGroupWrite:
    """PodGroupInitiallyScheduled on a Kubernetes PodGroup, as kube-scheduler writes it."""

    namespace: str
    name: str
    scheduled: bool  # True: the gang was placed (terminal); False: not yet, and why
    reason: str
    message: str
    at: datetime  # the condition's lastTransitionTime (the API requires one)

    def status(self) -> dict[str, object]:
        """A strategic-merge patch: conditions are a list keyed by type, so the others stay."""
        condition = {
            "type": kube_gangs.INITIALLY_SCHEDULED,
            "status": "True" if self.scheduled else "False",
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        return {"status": {"conditions": [condition]}}


def kube_group_writes(
    writes: Sequence[GroupStatusWrite], groups: Mapping[JobKey, ObservedGroup], now: datetime
) -> list[KubeGroupWrite]:
    """For each PodGroup status written whose PodGroup mirrors a Kubernetes PodGroup: True
    with the Scheduled condition's message when the gang is first placed, False when it has
    never been and the session says why (not enough resources; a gang still waiting for its
    pods gets nothing, as kube-scheduler holds such pods without a word). Once the mirror was
    Scheduled, nothing: the condition never goes back to False."""
    out = []
    for write in writes:
        group = groups.get(write.key)
        core = next(
            (
                o.name
                for o in (group.owners if group is not None else ())
                if o.api_version == kube_gangs.API_VERSION and o.kind == kube_gangs.POD_GROUP_KIND
            ),
            None,
        )
        if group is None or core is None:
            continue
        if any(c.get("type") == ConditionType.SCHEDULED for c in group.conditions):
            continue
        fresh = {c.get("type"): c for c in write.conditions}
        scheduled = fresh.get(ConditionType.SCHEDULED)
        why = fresh.get(ConditionType.UNSCHEDULABLE)
        if scheduled is not None:
            message = str(scheduled.get("message") or "")
            out.append(
                KubeGroupWrite(
                    write.namespace, core, True, kube_gangs.SCHEDULED_REASON, message, now
                )
            )
        elif why is not None and why.get("reason") == NOT_ENOUGH_RESOURCES:
            message = str(why.get("message") or "")
            reason = kube_gangs.UNSCHEDULABLE_REASON
            out.append(KubeGroupWrite(write.namespace, core, False, reason, message, now))
    return out


def volcano_job(group: ObservedGroup) -> str | None:
    """The Volcano Job that owns a PodGroup; None: none does."""
    return next(
        (o.name for o in group.owners if o.kind == "Job" and o.api_version == vcjob.API_VERSION),
        None,
    )


def _notice(group: ObservedGroup, message: str) -> JobNotice | None:
    job = volcano_job(group)
    if job is None:
        return None
    uid = next((o.uid for o in group.owners if o.name == job), "")
    return JobNotice(namespace=group.namespace, job=job, uid=uid, message=message)


def _condition(condition: JobCondition, session: int) -> Obj:
    """A PodGroup condition as written; the session number is its transitionID."""
    return {
        "type": str(condition.type),
        "status": "True",
        "reason": condition.reason,
        "message": condition.message,
        "transitionID": str(session),
    }


def _group_write(
    group: ObservedGroup, phase: str | None, fresh: Mapping[str, JobCondition], session: int
) -> GroupStatusWrite | None:
    """The status to write, or None when neither the phase nor any condition message changes."""
    current: dict[object, Obj] = {c.get("type"): c for c in group.conditions}  # by type
    changed = {
        kind: c
        for kind, c in fresh.items()
        if as_obj(current.get(kind)).get("message") != c.message
    }
    wanted = group.phase if phase is None else phase
    if wanted == group.phase and not changed:
        return None
    merged = {**current}  # new conditions replace those of their type, in place
    merged.update((kind, _condition(c, session)) for kind, c in fresh.items())
    unschedulable = changed.get(ConditionType.UNSCHEDULABLE)
    return GroupStatusWrite(
        namespace=group.namespace,
        name=group.name,
        phase=wanted,
        conditions=tuple(merged.values()),
        notice=_notice(group, unschedulable.message) if unschedulable else None,
    )


def group_writes(
    updates: Sequence[PhaseUpdate],
    conditions: Sequence[JobCondition],
    groups: Mapping[JobKey, ObservedGroup],
    session: int,
) -> list[GroupStatusWrite]:
    """PodGroup statuses to write, by job key; PodGroups gone from the cache are skipped."""
    phases: dict[JobKey, str] = {u.job: str(u.new) for u in updates}
    fresh: dict[JobKey, dict[str, JobCondition]] = {}
    for c in conditions:
        fresh.setdefault(c.job, {})[str(c.type)] = c
    writes: list[GroupStatusWrite] = []
    for key in sorted({*phases, *fresh}):
        group = groups.get(key)
        if group is None:
            continue
        write = _group_write(group, phases.get(key), fresh.get(key, {}), session)
        if write is not None:
            writes.append(write)
    return writes


def pod_scheduled_writes(
    conditions: Sequence[PodCondition], pods: Mapping[PodKey, ObservedPod]
) -> list[PodScheduledWrite]:
    """PodScheduled=False on pods still waiting (not bound), where the reason or message changed,
    with the node a pipelined pod waits on as its nominatedNodeName (as kube-scheduler marks a
    preemptor waiting for its victims to go)."""
    writes: list[PodScheduledWrite] = []
    for c in conditions:
        pod = pods.get(c.pod)
        if pod is None or pod.node_name:
            continue
        nominated = c.nominated_node and c.nominated_node != pod.nominated
        if pod.scheduled == (str(c.reason), c.message) and not nominated:
            continue
        writes.append(
            PodScheduledWrite(
                namespace=pod.namespace,
                pod=pod.name,
                reason=str(c.reason),
                message=c.message,
                nominated_node=c.nominated_node,
            )
        )
    return writes


def _nonzero(resources: Mapping[str, str]) -> dict[str, str]:
    """An idle queue without `allocated` and one with zeros say the same: no write needed."""
    return {k: v for k, v in resources.items() if v not in ("0", "0m")}


def queue_allocated_writes(
    allocated: Mapping[QueueName, Resources], queues: Mapping[QueueName, ObservedQueue]
) -> list[QueueAllocatedWrite]:
    """Queue `status.allocated` where it changed, by queue name; unknown queues are skipped."""
    writes: list[QueueAllocatedWrite] = []
    for name, resources in sorted(allocated.items()):
        queue = queues.get(name)
        wanted = resources.to_resource_list()
        if queue is None or _nonzero(queue.allocated) == _nonzero(wanted):
            continue
        patch = {**dict.fromkeys(queue.allocated), **wanted}
        writes.append(QueueAllocatedWrite(name, patch, queue.namespace, queue.object_name))
    return writes
