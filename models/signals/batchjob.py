"""What a BatchJobWorkflow hears besides the job shell's signals (models.signals.job): its pods
(`pods_changed` with `BatchPodsChanged`), its start input and its view.

Serves batch/v1 Jobs with `spec.managedBy: caldera.dev/job-controller`. The workflow type name
is stored in histories and used by the forwarder: it never changes. Pure: pydantic only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from models.signals import common


class BatchJobStart(common.Payload):
    """What the forwarder starts a BatchJobWorkflow with (signal-with-start)."""


class ContainerExitSnapshot(common.Payload):
    """A terminated container of a pod, in status order (init containers flagged)."""

    name: str
    exit_code: int
    init: bool = False


class BatchPodSnapshot(common.Payload):
    """One pod of a batch/v1 Job as the forwarder last saw it (latest state wins)."""

    name: str
    uid: str
    resource_version: str = ""
    job_uid: str = ""
    phase: str = "Pending"
    ready: bool = False  # the Ready condition is True
    ready_since: datetime | None = None  # None: not ready
    node_name: str | None = None  # None: not bound yet
    deleting: bool = False  # has a deletionTimestamp
    deleted: bool = False  # gone from the apiserver
    finalizer: bool = False  # carries batch.kubernetes.io/job-tracking
    index: int | None = None  # None: no valid completion-index annotation
    failure_count: int = 0  # job-index-failure-count annotation
    ignored_failure_count: int = 0  # job-index-ignored-failure-count annotation
    exits: list[ContainerExitSnapshot] = Field(default_factory=list)
    conditions: dict[str, str] = Field(default_factory=dict)  # type → status, in status order
    max_restarts: int = 0  # highest restartCount of a regular container
    sidecar_restarts: int = 0  # highest restartCount of a restartable init container
    restarts: int = 0  # every container's restartCount summed
    created_at: datetime | None = None  # None: not known
    finished_at: datetime | None = None  # None: not finished (the job controller's rule)


class BatchPodsChanged(common.Payload):
    """A coalesced batch: at most one snapshot per pod, in the order they last changed."""

    pods: list[BatchPodSnapshot]


class BatchJobView(common.Payload):
    """The `status` query of a BatchJobWorkflow."""

    namespace: str
    name: str
    uid: str
    phase: str
    status: dict[str, Any]  # the Job status as the workflow wants it written
    pods: dict[str, str]  # pod name → phase (with " terminating" when deleting)
    timers: dict[str, str]  # timer key → when it fires (RFC 3339)
    backlog: int = 0
    kind: Literal["BatchJobView"] = "BatchJobView"


# Workflow type and message names: histories and the forwarder use these strings.
BATCH_JOB_WORKFLOW = "BatchJobWorkflow"
