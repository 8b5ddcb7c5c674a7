"""Many clusters, one queue: the names and messages of dispatching a Volcano Job to a worker
cluster.

A worker cluster is registered on the manager by a Secret in Caldera's namespace labelled
`caldera.dev/cluster: <name>` whose `kubeconfig` key holds a kubeconfig for it (MultiKueue keeps
its clusters' credentials in Secrets too; no new kind is needed, and RBAC on Secrets already
says who may add a cluster). A Queue's `spec.extendClusters[].name` names such clusters; a Job
submitted on the manager to a queue that has any is dispatched by its DispatchWorkflow
(`dispatch/<namespace>/<name>`) instead of being run there by its JobWorkflow.

The copy on a worker cluster is the Job with the same namespace and name, carrying:
- `caldera.dev/dispatch-origin`: the manager Job's uid, so a copy of another job of the same
  name is never taken for this one's;
- `caldera.dev/dispatch-generation`: the dispatch it belongs to (1, 2, ... one more per
  failover): the manager deletes only copies of generations it has moved away from;
- `caldera.dev/dispatch-lease-until` (RFC 3339): renewed by the manager while it can reach the
  cluster; Caldera on the worker aborts a copy whose lease has run out, so a copy cut off from
  its manager stops before the failover timer (longer than a lease) starts a new one.

The manager's Job carries `caldera.dev/dispatched-to: <cluster>` and the remote phase, counts
and conditions in its status.

Pure: constants and pydantic models only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from models.keys import QueueName

DEFAULT_NAMESPACE: Final = "caldera-system"  # where the clusters' Secrets live
CLUSTER_LABEL: Final = "caldera.dev/cluster"
KUBECONFIG_KEY: Final = "kubeconfig"
# On a cluster's Secret: "true" drains it (no new copies go there; those running there stay,
# as a cordoned node keeps its pods), "false" or absent: it takes copies.
DRAIN_ANNOTATION: Final = "caldera.dev/drain"

ORIGIN_ANNOTATION: Final = "caldera.dev/dispatch-origin"
GENERATION_ANNOTATION: Final = "caldera.dev/dispatch-generation"
LEASE_ANNOTATION: Final = "caldera.dev/dispatch-lease-until"
DISPATCHED_TO_ANNOTATION: Final = "caldera.dev/dispatched-to"

DISPATCH_WORKFLOW: Final = "DispatchWorkflow"
LEASE_SECONDS: Final = 60  # a copy's lease, renewed every LEASE_SECONDS / 3
LOST_AFTER_SECONDS: Final = 180  # default: a cluster unreachable this long loses its jobs
# default: a stale copy whose cluster has not answered this long is given up (left behind)
STALE_DEADLINE_SECONDS: Final = 3600
# On the manager's Job: the stale copies given up, `<cluster>/<generation>` comma-separated.
LEFT_BEHIND_ANNOTATION: Final = "caldera.dev/left-behind"


def dispatch_workflow_id(namespace: str, name: str) -> str:
    return f"dispatch/{namespace}/{name}"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class QueueThere(_Model):
    """A job's queue as one worker cluster holds it, from one probe: the queue its copy would
    land in there (its own name, else `default`, as `activities.dispatch.copies` creates it) and how
    much of that queue is taken. New in ClusterStatus with a default: probes recorded in
    histories before it still decode."""

    asked: str  # the job's queue, as named on the manager
    name: str = ""  # the queue a copy lands in there: `asked` or `default` ("": neither exists)
    state: str = ""  # its status.state ("": not written yet, read as Open)
    capability: dict[str, str] = Field(default_factory=dict)  # spec.capability ({}: no limit)
    # What it holds there: the larger of its status.allocated and its bound pods' requests.
    allocated: dict[str, str] = Field(default_factory=dict)
    # What its unfinished pods there request, pending ones included: its use of that cluster.
    used: dict[str, str] = Field(default_factory=dict)
    error: str = ""  # why the queue could not be read ("": it was)


class ClusterStatus(_Model):
    """What the manager knows of one worker cluster, from one probe."""

    name: str
    reachable: bool
    error: str = ""  # why not reachable, or why the Secret is unusable ("": none)
    nodes: int = 0
    allocatable: dict[str, str] = Field(default_factory=dict)  # summed ResourceList
    free: dict[str, str] = Field(default_factory=dict)  # allocatable less running pods' requests
    probed_at: datetime | None = None
    queue: QueueThere | None = None  # None: no queue asked (or a probe from before queues)
    drained: bool = False  # its Secret says caldera.dev/drain: true: no new copies go there


class RemoteCopy(_Model):
    """One copy of a dispatched Job on a worker cluster."""

    cluster: str
    generation: int
    uid: str = ""  # the copy's own uid once created ("": not created yet)


class RemoteState(_Model):
    """What a copy's status says, mirrored onto the manager's Job."""

    cluster: str
    generation: int
    found: bool  # False: the copy is gone (deleted, or never made)
    phase: str = ""  # the copy's status.state.phase
    status: dict[str, Any] = Field(default_factory=dict)  # its whole status, as written there
    resource_version: str = ""


class DispatchSettings(_Model):
    """A queue's dispatch: its clusters, their weights and capacities, and the failover
    timing."""

    queue: QueueName
    clusters: dict[str, int]  # name -> weight (extendClusters; weight defaults to 1)
    lost_after_seconds: int = LOST_AFTER_SECONDS
    # How long a stale copy's cluster may stay silent before the copy is given up and left
    # behind (recorded on the manager's Job), so a cluster that never returns holds no
    # workflow open; new with a default, so settings in running histories still decode.
    stale_deadline_seconds: int = STALE_DEADLINE_SECONDS
    # The queue's `caldera.dev/on-drain: Move`: a copy on a drained cluster moves at once;
    # False (`Stay`): it finishes there.
    move_on_drain: bool = False
    # name -> extendClusters[].capacity: the most this queue's jobs may use on that cluster
    # (a cluster not named here, or a resource not in its list: no limit).
    capacity: dict[str, dict[str, str]] = Field(default_factory=dict)
