"""The objects the dispatcher writes on a worker cluster: the copy of a Job and a Command for
it, as the apiserver takes them, and how a Job found there is told to be a copy. Pure.

The copy is the manager's Job under the same namespace and name with its labels, spec and
annotations, less what is the manager's own (`caldera.dev/dispatched-to`, so the worker's
forwarder never dispatches it again; kubectl's last-applied configuration), plus the three
dispatch annotations (`models.dispatch`). Its queue stays if the worker has one of that name,
else it is `default`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from models import bus, vcjob
from models.dispatch import (
    DISPATCHED_TO_ANNOTATION,
    GENERATION_ANNOTATION,
    LEASE_ANNOTATION,
    ORIGIN_ANNOTATION,
)
from models.meta import controller_reference
from models.signals.common import CommandIssued
from models.vcjob import Job

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
_MANAGERS_OWN: Final = frozenset({DISPATCHED_TO_ANNOTATION, LAST_APPLIED})
NAME_LIMIT: Final = 253


def stamp(when: datetime) -> str:
    """RFC 3339 in UTC, to the second, as the lease annotation holds it."""
    return when.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def manifest(
    job: Job, origin: str, generation: int, lease_until: datetime, queue: str
) -> dict[str, object]:
    meta = job.metadata
    notes = {k: v for k, v in (meta.annotations or {}).items() if k not in _MANAGERS_OWN}
    notes.update(
        {
            ORIGIN_ANNOTATION: origin,
            GENERATION_ANNOTATION: str(generation),
            LEASE_ANNOTATION: stamp(lease_until),
        }
    )
    metadata: dict[str, object] = {
        "name": meta.name,
        "namespace": meta.namespace,
        "annotations": notes,
    }
    if meta.labels:
        metadata["labels"] = dict(meta.labels)
    return {
        "apiVersion": vcjob.API_VERSION,
        "kind": vcjob.KIND,
        "metadata": metadata,
        "spec": spec(job, queue),
    }


def spec(job: Job, queue: str) -> dict[str, object]:
    """The copy's spec: the manager Job's, in the queue the copy runs in there."""
    return job.spec.model_copy(update={"queue": queue}).dump()


def updated_spec(there: Mapping[str, Any], job: Job) -> dict[str, Any]:
    """The copy's spec as it is there with what a Job's update may change (`minAvailable`,
    `priorityClassName`, each task's `replicas` and `minAvailable`) taken from the manager's:
    what the worker filled in (defaults, a volume claim's name) stays as it is."""
    wanted = job.spec.dump()
    out = dict(there)
    for key in vcjob.UPDATABLE_JOB:
        if key in wanted:  # one the manager's does not name stays as the worker defaulted it
            out[key] = wanted[key]
    tasks = [dict(t) for t in out.get("tasks") or []]
    for task, new in zip(tasks, wanted.get("tasks") or [], strict=False):
        for key in vcjob.UPDATABLE_TASK:
            if key in new:
                task[key] = new[key]
    if tasks:
        out["tasks"] = tasks
    return out


def whose(annotations: Mapping[str, str]) -> tuple[str, int]:
    """A Job's origin and generation as its annotations say ("", 0: not a dispatched copy)."""
    try:
        generation = int(annotations.get(GENERATION_ANNOTATION, "0"))
    except ValueError:
        generation = 0
    return annotations.get(ORIGIN_ANNOTATION, ""), generation


def command_name(job: str, action: str, generation: int, serial: int) -> str:
    """Named, not generated: a retried create finds the one it made rather than a second."""
    suffix = f"-{action.lower()}-g{generation}-{serial}"
    return job[: NAME_LIMIT - len(suffix)] + suffix


def command(
    namespace: str, job: str, uid: str, generation: int, serial: int, issued: CommandIssued
) -> dict[str, object]:
    """A bus.volcano.sh Command for the copy, as vcctl writes one (target and owner)."""
    owner = controller_reference(vcjob.API_VERSION, vcjob.KIND, job, uid).dump()
    body: dict[str, object] = {
        "apiVersion": bus.API_VERSION,
        "kind": "Command",
        "metadata": {
            "name": command_name(job, issued.action, generation, serial),
            "namespace": namespace,
            "ownerReferences": [owner],
        },
        "action": issued.action,
        "target": owner,
    }
    if issued.reason:
        body["reason"] = issued.reason
    if issued.message:
        body["message"] = issued.message
    return body
