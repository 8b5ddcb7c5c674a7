"""One scheduling session (the SchedulerWorkflow's activity): read the cluster, decide with
`scheduling.run_session`, write what the scheduler owns, return the placements.

The scheduler owns PodGroup `status` (phase and conditions), queue `status.allocated`, and
PodScheduled=False on pods that wait; each is written only when it changes, so an idle
cluster costs reads only. Placements are returned, not bound: the JobWorkflow of each gang
binds its own pods so its history shows them. Victims of reclaim and preempt are evicted here
(`activities.evictions`), after the statuses are written. Volumes get a plan here (a static PV
that fits, or provisioning on the chosen node for a WaitForFirstConsumer class), executed by
the binder.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import binding, cluster, errors, events, evictions, kube, scheduler_config
from activities.messages import (
    JobPlacements,
    RecordEventInput,
    SessionInput,
    SessionResult,
    Unschedulable,
)
from models import batchv1, keys, scheduling, signals, vcjob
from scheduling.actions import run_session
from scheduling.objects import snapshot_from_objects
from scheduling.snapshot import TaskStatus
from service import metrics

_G, _V = scheduling.GROUP, scheduling.VERSION
T = TypeVar("T")


def _world() -> dict[str, list[dict[str, Any]]]:
    cache = cluster.cluster()
    missing = cache.wait_synced(cluster.SYNC_TIMEOUT)
    if missing:
        raise ApplicationError(f"cluster cache not synced yet: {', '.join(missing)}")
    return cache.read()


def _owner_job(group: dict[str, Any]) -> str | None:
    for ref in group.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and ref.get("apiVersion") == vcjob.API_VERSION:
            return str(ref.get("name"))
    return None


def _owner_workflow(group: dict[str, Any]) -> str | None:
    """The workflow that binds a PodGroup's pods: its Volcano Job's, or its batch/v1 Job's
    (one Caldera runs, whose pods name the gang scheduler); None: no Job owns it."""
    meta = group.get("metadata", {})
    namespace = str(meta.get("namespace", ""))
    for ref in meta.get("ownerReferences") or []:
        name = str(ref.get("name"))
        if ref.get("kind") != "Job":
            continue
        if ref.get("apiVersion") == vcjob.API_VERSION:
            return keys.job_workflow_id(namespace, name)
        if ref.get("apiVersion") == batchv1.API_VERSION:
            return keys.batch_job_workflow_id(namespace, name)
    return None


def _volume_plan(
    pod: dict[str, Any], node: str, world: dict[str, list[dict[str, Any]]]
) -> signals.VolumePlan:
    """Unbound claims of a pod: a matching Available PV, else provisioning on `node`."""
    namespace = pod["metadata"]["namespace"]
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in world["pvcs"]}
    waiting = {c["metadata"]["name"]: c for c in world["classes"]}
    used: set[str] = set()
    static: list[tuple[str, str]] = []
    provision: list[str] = []
    for volume in pod.get("spec", {}).get("volumes") or []:
        claim_name = str((volume.get("persistentVolumeClaim") or {}).get("claimName") or "")
        claim = claims.get((namespace, claim_name)) if claim_name else None
        if claim is None or claim.get("spec", {}).get("volumeName"):
            continue
        storage_class = claim.get("spec", {}).get("storageClassName") or ""
        pv = next(
            (
                v["metadata"]["name"]
                for v in sorted(world["pvs"], key=lambda v: v["metadata"]["name"])
                if v.get("status", {}).get("phase") == "Available"
                and (v.get("spec", {}).get("storageClassName") or "") == storage_class
                and v["metadata"]["name"] not in used
            ),
            None,
        )
        if pv is not None:
            used.add(str(pv))
            static.append((claim_name, str(pv)))
        elif (waiting.get(storage_class) or {}).get("provisioner") not in (
            None,
            "kubernetes.io/no-provisioner",
        ):
            provision.append(claim_name)
    return signals.VolumePlan(static=static, provision=provision)


def _write_pod_groups(result: Any, groups: dict[str, dict[str, Any]], session: int) -> None:
    """PodGroup phase and conditions, written only where they change."""
    wanted: dict[str, dict[str, Any]] = {}
    for update in result.phase_updates:
        wanted.setdefault(update.job, {})["phase"] = str(update.new)
    for c in result.conditions:
        condition = {
            "type": str(c.type),
            "status": "True",
            "reason": c.reason,
            "message": c.message,
            "transitionID": str(session),
        }
        wanted.setdefault(c.job, {}).setdefault("conditions", {})[condition["type"]] = condition
    writes: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None]] = []
    for key, want in sorted(wanted.items()):
        group = groups.get(key)
        if group is None:
            continue
        current = group.get("status") or {}
        conditions = {c.get("type"): c for c in current.get("conditions") or []}
        fresh = want.get("conditions", {})
        changed = {
            t: c
            for t, c in fresh.items()
            if (conditions.get(t) or {}).get("message") != c["message"]
        }
        phase = want.get("phase", current.get("phase"))
        if phase == current.get("phase") and not changed:
            continue
        status = {"phase": phase, "conditions": list({**conditions, **fresh}.values())}
        writes.append((key, group, status, changed.get("Unschedulable")))

    def write(item: tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None]) -> None:
        key, group, status, unschedulable = item
        namespace, name = key.split("/", 1)
        _tell_job(group, unschedulable)
        with errors.kube_call(f"write status of podgroup {key}", ok=errors.GONE_OK):
            kube.custom().patch_namespaced_custom_object_status(
                _G,
                _V,
                namespace,
                "podgroups",
                name,
                {"status": status},
                _content_type="application/merge-patch+json",
            )

    _side_by_side(write, writes)


def _side_by_side(write: Callable[[T], None], items: list[T]) -> None:
    """Hundreds of objects can change in one session: write them in parallel, each thread in
    a copy of this activity's context (Events and logs read the activity's info from it)."""
    jobs = [(contextvars.copy_context(), item) for item in items]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda job: job[0].run(write, job[1]), jobs))


def _write_pod_conditions(result: Any, pods: dict[str, dict[str, Any]]) -> None:
    """PodScheduled=False on pods left waiting, where the reason or message changed."""
    writes: list[tuple[str, Unschedulable]] = []
    for c in result.pod_conditions:
        pod = pods.get(c.pod)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            continue
        current: dict[str, Any] = next(
            (
                x
                for x in (pod.get("status") or {}).get("conditions") or []
                if x.get("type") == "PodScheduled"
            ),
            {},
        )
        if (current.get("reason"), current.get("message")) == (str(c.reason), c.message):
            continue
        namespace, name = c.pod.split("/", 1)
        writes.append((namespace, Unschedulable(pod=name, reason=str(c.reason), message=c.message)))
    _side_by_side(lambda w: binding.write_pod_scheduled(*w), writes)


def _nonzero(resources: dict[str, Any]) -> dict[str, str]:
    """An idle queue without `allocated` and one with zeros say the same: no write needed."""
    return {k: str(v) for k, v in resources.items() if str(v) not in ("0", "0m")}


def _write_queue_allocated(result: Any, queues: list[dict[str, Any]]) -> None:
    """Queue `status.allocated` (the scheduler's part of queue status), where it changed."""
    current = {
        q["metadata"]["name"]: (q.get("status") or {}).get("allocated") or {} for q in queues
    }
    for name, allocated in sorted(result.queue_allocated.items()):
        wanted = allocated.to_resource_list()
        if name not in current or _nonzero(current[name]) == _nonzero(wanted):
            continue
        with errors.kube_call(f"write allocated of queue {name}", ok=errors.GONE_OK):
            kube.custom().patch_cluster_custom_object_status(
                _G,
                _V,
                "queues",
                name,
                # Merge patch: null removes resources no longer allocated.
                {"status": {"allocated": {**dict.fromkeys(current[name]), **wanted}}},
                _content_type="application/merge-patch+json",
            )


def _tell_job(group: dict[str, Any], condition: dict[str, Any] | None) -> None:
    """A new Unschedulable message also goes on the Volcano Job, where users look first."""
    job = _owner_job(group)
    if condition is None or job is None:
        return
    namespace = group["metadata"]["namespace"]
    uid = next(
        (
            r.get("uid", "")
            for r in group["metadata"].get("ownerReferences") or []
            if r.get("name") == job
        ),
        "",
    )
    event = RecordEventInput(
        namespace=namespace,
        name=job,
        uid=uid,
        type="Warning",
        reason="Unschedulable",
        message=str(condition["message"]),
    )
    try:
        events.write_event(event)
    except ApplicationError as e:  # best effort: the PodGroup condition says it too
        activity.logger.warning("event not recorded job=%s/%s error=%s", namespace, job, e)


@activity.defn(name="schedule_session")
def schedule_session(request: SessionInput) -> SessionResult:
    """One session, counted and timed (caldera_scheduling_session_duration_seconds)."""
    with metrics.session_timer(metrics.activity_meter(), request.scheduler_name):
        return _session(request)


def _session(request: SessionInput) -> SessionResult:
    world = _world()
    snapshot = snapshot_from_objects(
        world["nodes"],
        world["pods"],
        world["podgroups"],
        world["queues"],
        world["priority"],
        scheduler_names=(request.scheduler_name,),
        assumed=request.assumed,
    )
    result = run_session(snapshot, scheduler_config.session_config())
    groups = {
        f"{g['metadata']['namespace']}/{g['metadata']['name']}": g for g in world["podgroups"]
    }
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in world["pods"]}
    _write_pod_groups(result, groups, request.session)
    _write_pod_conditions(result, pods)
    _write_queue_allocated(result, world["queues"])
    evictions.evict(result.evictions, groups)  # reclaim/preempt victims, after the statuses
    by_job: dict[str, JobPlacements] = {}
    for placement in result.placements:
        group = groups.get(placement.job)
        wid = _owner_workflow(group) if group else None
        pod = pods.get(placement.pod)
        if wid is None or pod is None:
            continue
        namespace = pod["metadata"]["namespace"]
        placed = signals.PlacedPod(
            pod=pod["metadata"]["name"],
            uid=pod["metadata"].get("uid", ""),
            node=placement.node,
            volumes=_volume_plan(pod, placement.node, world),
        )
        entry = by_job.get(wid) or JobPlacements(
            job_workflow_id=wid, namespace=namespace, placements=[]
        )
        by_job[wid] = entry.model_copy(update={"placements": [*entry.placements, placed]})
    bound = sorted(
        key for key in request.assumed if (pods.get(key) or {}).get("spec", {}).get("nodeName")
    )
    pending = sum(1 for t in snapshot.tasks if t.status is TaskStatus.PENDING) - len(
        result.placements
    )
    activity.logger.info(
        "session done session=%d placed=%d pending=%d bound=%d evicted=%d",
        request.session,
        len(result.placements),
        pending,
        len(bound),
        len(result.evictions),
    )
    return SessionResult(jobs=list(by_job.values()), bound=bound, pending=max(pending, 0))
