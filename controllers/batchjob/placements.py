"""Pods placed by Caldera's gang scheduler: bind what is still waiting, report the rest. Pure.

A Job whose pod template names Caldera's scheduler gets a PodGroup (`podgroup-<uid>`, like
Volcano's PodGroup controller makes for pods it did not create); the SchedulerWorkflow places
its pods and hands the placements here, the same way it hands a Volcano Job's gang to its
JobWorkflow. Binds that fail mark the pod unschedulable and drop the scheduler's assumption.
"""

from __future__ import annotations

from controllers.batchjob import effects as fx
from controllers.batchjob.state import BatchJobRecord
from models import keys, signals


def _scheduler(state: BatchJobRecord) -> str:
    name = state.job.scheduler_name if state.job else "volcano"
    return keys.scheduler_workflow_id(name)


def placed(state: BatchJobRecord, placed: signals.PodsPlaced) -> list[fx.AnyEffect]:
    """Bind what the scheduler placed, if the pods are still ours, unbound and waiting."""
    job = state.job
    ns = (job.metadata.namespace if job else None) or ""
    gone = job is None or state.deleted or job.metadata.deletion_timestamp is not None
    ok: list[signals.PlacedPod] = []
    stale: dict[str, str] = {}
    for p in placed.placements:
        pod = state.pods.get(p.pod)
        if gone:
            stale[f"{ns}/{p.pod}"] = "job is being deleted"
        elif pod is None or not pod.active or pod.node is not None or pod.phase != "Pending":
            stale[f"{ns}/{p.pod}"] = "pod no longer waits for a node"
        else:
            ok.append(p)
    return [*fx.handle_placements(placed.session, ok, stale, _scheduler(state))]


def bound(state: BatchJobRecord, failed: dict[str, str]) -> list[fx.AnyEffect]:
    """Failed binds: PodScheduled=False on the pods, an Event, and the scheduler retries."""
    if not failed or state.job is None:
        return []
    ns = state.job.metadata.namespace or ""
    ordered = dict(sorted(failed.items()))
    detail = "; ".join(f"{pod}: {why}" for pod, why in ordered.items())
    return [
        fx.MarkUnschedulable(pods=ordered),
        fx.RecordEvent(type="Warning", reason="FailedScheduling", message=detail[:1000]),
        fx.TellScheduler(
            scheduler=_scheduler(state),
            failed={f"{ns}/{pod}": why for pod, why in ordered.items()},
        ),
    ]
