"""The Job's pod table: what the workflow knows of each pod, from the forwarder's snapshots
and from its own writes. Pure."""

from __future__ import annotations

from controllers.batchjob.state import BatchJobRecord, ContainerExit, PodRecord
from models.signals import batchjob as batchjob_signals
from models.signals import job as job_signals


def record_of(snapshot: batchjob_signals.BatchPodSnapshot, old: PodRecord | None) -> PodRecord:
    """The pod as now seen. Some facts only ever move one way, so a snapshot older than
    what the workflow did itself cannot undo it: deletion, finalizer removal, a final phase."""
    same = old is not None and old.uid in (None, snapshot.uid)
    phase = snapshot.phase
    if same and old is not None and old.phase in ("Succeeded", "Failed"):
        phase = old.phase
    return PodRecord(
        name=snapshot.name,
        uid=snapshot.uid,
        phase=phase,
        ready=snapshot.ready,
        ready_since=snapshot.ready_since,
        node=snapshot.node_name,
        deleting=snapshot.deleting or (same and old is not None and old.deleting),
        finalizer=snapshot.finalizer and not (same and old is not None and not old.finalizer),
        index=snapshot.index,
        failure_count=snapshot.failure_count,
        ignored_failure_count=snapshot.ignored_failure_count,
        exits=tuple(
            ContainerExit(name=e.name, exit_code=e.exit_code, init=e.init) for e in snapshot.exits
        ),
        conditions=dict(snapshot.conditions),
        max_restarts=snapshot.max_restarts,
        sidecar_restarts=snapshot.sidecar_restarts,
        restarts=snapshot.restarts,
        created_at=snapshot.created_at,
        finished_at=snapshot.finished_at,
        issued_at=old.issued_at if same and old is not None else None,
        heard=True,
    )


def _settled(pod: PodRecord) -> bool:
    """Finished and counted: nothing the controller computes reads it any more."""
    return pod.phase in ("Succeeded", "Failed") and not pod.finalizer


def observed(state: BatchJobRecord, changed: batchjob_signals.BatchPodsChanged) -> BatchJobRecord:
    """The pod table after a batch of snapshots; settled pods leave it."""
    pods = dict(state.pods)
    removing = set(state.removing)
    for snapshot in changed.pods:
        old = pods.get(snapshot.name)
        if snapshot.deleted:
            if old is not None and old.uid in (None, snapshot.uid):
                del pods[snapshot.name]
            removing.discard(snapshot.uid)
            continue
        pod = record_of(snapshot, old)
        if not pod.finalizer:
            removing.discard(snapshot.uid)
        if _settled(pod):
            pods.pop(snapshot.name, None)
        else:
            pods[snapshot.name] = pod
    kept = tuple(u for u in state.removing if u in removing)
    return state.model_copy(update={"pods": pods, "removing": kept})


def listed(
    state: BatchJobRecord, listed: job_signals.PodsListed
) -> tuple[BatchJobRecord, list[str]]:
    """Pods a full list lacks went unseen: one the workflow heard of leaves as its deletion
    would; the names of those it only created are returned, to be read first (they may be
    newer than the list)."""
    missing = [p for p in state.pods.values() if listed.lacks(p.name, p.uid if p.heard else None)]
    unheard = sorted(p.name for p in missing if not p.heard)
    return vanished(state, [p.name for p in missing if p.heard]), unheard


def vanished(state: BatchJobRecord, names: list[str]) -> BatchJobRecord:
    """These pods are gone, unreported: as if the forwarder had reported their deletion."""
    gone = [
        batchjob_signals.BatchPodSnapshot(name=p.name, uid=p.uid or "", deleted=True)
        for p in state.pods.values()
        if p.name in names
    ]
    return observed(state, batchjob_signals.BatchPodsChanged(pods=gone)) if gone else state


def finalizers_removed(state: BatchJobRecord, removed: dict[str, str]) -> BatchJobRecord:
    """The finalizers of these pods (name → uid) are gone: they count, and settled ones leave."""
    pods = dict(state.pods)
    for name, uid in removed.items():
        pod = pods.get(name)
        if pod is None or pod.uid != uid:
            continue
        pod = pod.model_copy(update={"finalizer": False})
        if _settled(pod):
            del pods[name]
        else:
            pods[name] = pod
    gone = set(removed.values())
    removing = tuple(u for u in state.removing if u not in gone)
    return state.model_copy(update={"pods": pods, "removing": removing})
