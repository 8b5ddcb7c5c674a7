"""Carrying out a session's evictions (reclaim, preempt), as vc-scheduler's evictor does.

For each victim: mark the pod Ready=False (reason `Evict`) and DisruptionTarget=True (reason
`PreemptionByScheduler`, Kubernetes' own for a scheduler that makes room), then delete it,
then record `Evict` Events on the pod and its PodGroup. The victim's JobWorkflow hears of the
deletion through the forwarder (PodEvicted) and applies its policies; without one, it
recreates the pod, pending. Every call is conditional on the victim's UID, so a pod recreated
under the same name is never touched, and NotFound or a UID mismatch mean the victim is
already gone: a session retried after a crash evicts nobody twice. Runs inside the session
activity: the room is not handed out before the next session sees the victims gone.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client
from temporalio import activity

from activities import errors, kube, kube_events
from activities.messages import RecordEventInput
from models import scheduling
from scheduling.api.result import Eviction

DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"  # v1.PodReasonPreemptionByScheduler
EVICT: Final = "Evict"
_GONE: Final = frozenset({errors.NOT_FOUND, errors.CONFLICT})  # deleted, or a new pod by now
_PARALLEL: Final = 16


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _mark(eviction: Eviction) -> None:
    """The conditions Volcano's evictor writes before deleting (a strategic merge by type)."""
    namespace, name = eviction.pod.split("/", 1)
    now = _now()
    patch = {
        "metadata": {"uid": eviction.uid} if eviction.uid else {},  # precondition: this pod
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": EVICT,
                    "message": eviction.message,
                    "lastTransitionTime": now,
                },
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": PREEMPTION_BY_SCHEDULER,
                    "message": eviction.message,
                    "lastTransitionTime": now,
                },
            ]
        },
    }
    with errors.kube_call(f"mark pod {eviction.pod} evicted", ok=_GONE):
        kube.core().patch_namespaced_pod_status(name, namespace, kube.body(patch))


def _delete(eviction: Eviction) -> bool:
    """Delete exactly the victim; False: it was already gone (or replaced)."""
    namespace, name = eviction.pod.split("/", 1)
    options = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=eviction.uid) if eviction.uid else None
    )
    deleted = False
    with errors.kube_call(f"evict pod {eviction.pod}", ok=_GONE):
        kube.core().delete_namespaced_pod(name, namespace, body=options)
        deleted = True
    return deleted


def _record(eviction: Eviction, group: Mapping[str, Any] | None) -> None:
    """`Evict` on the pod (Warning) and on its PodGroup (Normal); best effort."""
    namespace, name = eviction.pod.split("/", 1)
    notes = [
        RecordEventInput(
            namespace=namespace,
            name=name,
            uid=eviction.uid,
            type="Warning",
            reason=EVICT,
            message=eviction.message,
            api_version="v1",
            kind="Pod",
        )
    ]
    if group is not None:
        meta = group.get("metadata") or {}
        notes.append(
            RecordEventInput(
                namespace=namespace,
                name=str(meta.get("name") or ""),
                uid=str(meta.get("uid") or ""),
                type="Normal",
                reason=EVICT,
                message=f"{eviction.pod}: {eviction.message}",
                api_version=scheduling.API_VERSION,
                kind="PodGroup",
            )
        )
    for note in notes:  # best effort: the pod's conditions and the job's history say it too
        kube_events.try_event(note)


def _evict(eviction: Eviction, group: Mapping[str, Any] | None) -> None:
    _mark(eviction)
    if _delete(eviction):
        _record(eviction, group)
    activity.logger.info(
        "pod evicted pod=%s job=%s node=%s reason=%s by=%s",
        eviction.pod,
        eviction.job,
        eviction.node,
        eviction.reason,
        eviction.preemptor,
    )


def evict(evictions: Sequence[Eviction], groups: Mapping[str, Mapping[str, Any]]) -> None:
    """Evict every victim of the session (side by side); `groups` are PodGroups by job key."""
    if not evictions:
        return
    work = [(contextvars.copy_context(), e) for e in evictions]
    with ThreadPoolExecutor(max_workers=_PARALLEL) as pool:
        list(pool.map(lambda w: w[0].run(_evict, w[1], groups.get(w[1].job)), work))
