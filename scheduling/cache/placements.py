"""Where a session's placements go, and what it reports about the placements before them.

The session places and does not bind: the SchedulerWorkflow assumes its placements, and the
next session's activity binds them (`caldera-session-folds-binding`; gangs with volumes to bind
go to `bind_session`). Placements are grouped into gangs keyed by the workflow of the job they
belong to: its Volcano Job's, its batch/v1 Job's (one Caldera runs, whose pods name the gang
scheduler), or for pods Caldera did not create, their PodGroupWorkflow's; that id keys the
assumptions until the binds are seen. A placement whose PodGroup none of these owns, or whose
pod is gone from the cache, goes nowhere. Each placed pod carries its volume plan. Placements
assumed earlier are confirmed once the cache shows their pod on a node.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from models import batchv1, keys, kube_gangs, labels, vcjob
from models.keys import JobKey
from models.signals.scheduler import ClaimPlan, PlacedPod
from scheduling.api.device_claims import ClaimKey
from scheduling.api.devices import DeviceWorld
from scheduling.api.result import Placement, SessionResult
from scheduling.api.snapshot import PodKey, Snapshot, TaskStatus
from scheduling.cache.observed import ObservedGroup, ObservedPod
from scheduling.cache.volumes import Storage, volume_plan


@dataclass(frozen=True)
class GangPlacements:
    """One gang's placed pods, to be bound in the order they were placed; `job_workflow_id`
    names the gang (its job's workflow), which keys the assumptions."""

    job_workflow_id: str
    namespace: str  # its first pod's
    placements: tuple[PlacedPod, ...]


def job_workflow(group: ObservedGroup) -> str | None:
    """The workflow whose gang a PodGroup is (its first Job owner's; for the PodGroup of pods
    Caldera did not create, the PodGroupWorkflow that mirrors the Kubernetes PodGroup owning
    it, else the one its name comes from); None: none of these. The
    next session binds what this one places; the id keys the assumptions until the binds are
    seen."""
    for owner in group.owners:
        if owner.kind == "Job" and owner.api_version == vcjob.API_VERSION:
            return keys.job_workflow_id(group.namespace, owner.name)
        if owner.kind == "Job" and owner.api_version == batchv1.API_VERSION:
            return keys.batch_job_workflow_id(group.namespace, owner.name)
        if owner.api_version == kube_gangs.API_VERSION and owner.kind == kube_gangs.POD_GROUP_KIND:
            return keys.pod_group_workflow_id(
                group.namespace, kube_gangs.GANG_KEY_PREFIX + owner.name
            )
    if group.name.startswith(labels.POD_GROUP_PREFIX) and group.owners:
        owner_uid = group.name.removeprefix(labels.POD_GROUP_PREFIX)
        return keys.pod_group_workflow_id(group.namespace, owner_uid)
    return None


def by_job_workflow(
    placements: Sequence[Placement],
    groups: Mapping[JobKey, ObservedGroup],
    pods: Mapping[PodKey, ObservedPod],
    storage: Storage,
) -> list[GangPlacements]:
    """The session's placements, one entry per gang (by its job's workflow id), in the order
    each was first placed."""
    gangs: dict[str, tuple[str, list[PlacedPod]]] = {}
    for placement in placements:
        group = groups.get(placement.job)
        workflow = job_workflow(group) if group is not None else None
        pod = pods.get(placement.pod)
        if workflow is None or pod is None:
            continue
        placed = PlacedPod(
            pod=pod.name,
            uid=pod.uid,
            node=placement.node,
            volumes=volume_plan(pod, storage, placement.node),
            claims=list(placement.claims),
        )
        gangs.setdefault(workflow, (pod.namespace, []))[1].append(placed)
    return [
        GangPlacements(job_workflow_id=workflow, namespace=namespace, placements=tuple(placed))
        for workflow, (namespace, placed) in gangs.items()
    ]


def confirmed(
    assumed: Iterable[str],
    pods: Mapping[PodKey, ObservedPod],
    claims: Mapping[str, Sequence[ClaimPlan]] | None = None,  # None: no device assumed
    devices: DeviceWorld | None = None,
) -> list[str]:
    """Assumed placements whose pod the cache shows on a node, by key: their bind is done.
    A pod whose claims were given devices stays assumed until the cache shows those claims
    allocated too (or gone): the claims' watch may lag the pods', and until then only the
    assumption keeps their devices taken."""
    done = []
    for key in assumed:
        pod = pods.get(PodKey(key))
        if pod is None or not pod.node_name:
            continue
        plans = (claims or {}).get(key, ())
        if (
            plans
            and devices is not None
            and not all(_written(devices, pod.namespace, p) for p in plans)
        ):
            continue
        done.append(key)
    return sorted(done)


def in_flight(claims: Mapping[str, Sequence[ClaimPlan]]) -> dict[ClaimKey, ClaimPlan]:
    """The assumed allocations by claim ("<ns>/<pod>" → plans, to (namespace, claim) → plan)."""
    return {
        (pod.partition("/")[0], plan.claim): plan
        for pod, plans in claims.items()
        for plan in plans
        if plan.allocates
    }


def _written(devices: DeviceWorld, namespace: str, plan: ClaimPlan) -> bool:
    claim = devices.claims.get((namespace, plan.claim))
    return claim is None or claim.uid != plan.uid or claim.allocation is not None


def still_pending(snapshot: Snapshot, result: SessionResult) -> int:
    """Pending pods the session did not place: they wait for a later session."""
    return sum(1 for t in snapshot.tasks if t.status is TaskStatus.PENDING) - len(result.placements)
