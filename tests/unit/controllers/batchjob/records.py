"""Small literal inputs for the core modules' own tests: a Job, pods, the workflow record and
what one sync counted, at a fixed time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controllers.batchjob import census
from controllers.batchjob.census import Census
from controllers.batchjob.state import BatchJobRecord, ContainerExit, PodRecord
from models.batchv1 import BatchJob, BatchJobStatus
from tests.builders import make_batch_job

T0 = datetime(2026, 1, 1, tzinfo=UTC)
IGNORE_DISRUPTION = {  # a podFailurePolicy: disruptions do not count
    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def job(**spec: Any) -> BatchJob:
    return make_batch_job("j").spec(**spec).build()


def pod(name: str, **fields: Any) -> PodRecord:
    """An observed pod (uid `uid-<name>`) unless `uid=None` is given."""
    return PodRecord(**{"name": name, "uid": f"uid-{name}", **fields})


def failed(name: str, exit_code: int = 1, **fields: Any) -> PodRecord:
    exits = (ContainerExit(name="main", exit_code=exit_code),)
    return pod(name, phase="Failed", exits=exits, **fields)


def record(job: BatchJob, *pods: PodRecord, **fields: Any) -> BatchJobRecord:
    """The workflow's record of `job` with these pods; `status` etc. as given."""
    return BatchJobRecord(job=job, pods={p.name: p for p in pods}, **fields)


def counted(
    job: BatchJob,
    *pods: PodRecord,
    now: datetime = T0,
    status: BatchJobStatus | None = None,
    **fields: Any,
) -> Census:
    state = record(job, *pods, status=status or BatchJobStatus(), **fields)
    return census.count(job, state, now)
