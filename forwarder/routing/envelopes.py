"""What flows between the forwarder's stages: watch events in, addressed signals out.

Watch threads produce `Observed` and `Relisted`; the router turns them into the updates
(`PodUpdate`, `BatchPodUpdate`, `GroupRefUpdate`), `Signal`s and `ConsumeCommand`s; the
coalescer batches the updates into `Signal`s; the signaller sends `Signal`s. A message is
addressed to a `JobRef` (a JobWorkflow; a `DispatchRef` for a DispatchWorkflow), a
`BatchJobRef` (a BatchJobWorkflow), a `QueueRef` (a QueueWorkflow), a `NamespaceQueueRef` (a
NamespaceQueueWorkflow) or a `WorkloadRef` (a PodGroupWorkflow). Plain frozen data, no I/O,
so every stage between the watch and the Temporal client is testable without a server.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from models import dispatch, keys, queue_refs
from models.signals import batchjob as batchjob_signals
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from service.reflector import Obj as Obj  # re-exported
from service.reflector import WatchType as WatchType


class Kind(StrEnum):
    """The resources the forwarder lists and watches."""

    JOB = "jobs"
    POD = "pods"
    POD_GROUP = "podgroups"
    COMMAND = "commands"
    QUEUE = "queues"
    BATCH_JOB = "batchjobs"  # batch/v1 Jobs (those with Caldera's spec.managedBy are ours)
    BATCH_POD = "batchpods"  # pods of batch/v1 Jobs
    WORKLOAD_POD = "workloadpods"  # pods naming Volcano's scheduler (those without a PodGroup)
    # Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1), which such pods may name
    KUBE_POD_GROUP = "kubepodgroups"
    JOBFLOW = "jobflows"  # flow.volcano.sh JobFlows (each with a JobFlowWorkflow)
    JOBTEMPLATE = "jobtemplates"  # flow.volcano.sh JobTemplates (wake flows waiting for one)
    CRON_JOB = "cronjobs"  # batch.volcano.sh CronJobs (each with a CronJobWorkflow)
    NAMESPACE = "namespaces"  # one being deleted ends every workflow of its objects at once
    # scheduling.volcano.sh NamespaceQueues (each with a NamespaceQueueWorkflow); a cluster
    # without the CRD lists none
    NAMESPACE_QUEUE = "namespacequeues"


@dataclass(frozen=True)
class Observed:
    """One watch event for one object."""

    kind: Kind
    type: WatchType
    obj: Obj
    # time.monotonic() when the watch thread received it (the signal lag metric starts here).
    received: float = field(default_factory=time.monotonic, compare=False, repr=False)


@dataclass(frozen=True)
class Relisted:
    """A full list: the complete current set of objects of `kind` (initial list or after 410)."""

    kind: Kind
    objects: Sequence[Obj]
    received: float = field(default_factory=time.monotonic, compare=False, repr=False)


Inbound = Observed | Relisted


@dataclass(frozen=True)
class _NamespacedRef:
    namespace: str
    name: str

    @property
    def key(self) -> keys.JobKey:
        return keys.job_key(self.namespace, self.name)


@dataclass(frozen=True)
class JobRef(_NamespacedRef):
    """The Volcano Job a message is addressed to; its workflow id comes from models.keys."""

    @property
    def workflow_id(self) -> str:
        return keys.job_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class BatchJobRef(_NamespacedRef):
    """The batch/v1 Job (spec.managedBy Caldera's) a message is addressed to."""

    @property
    def workflow_id(self) -> str:
        return keys.batch_job_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class DispatchRef(_NamespacedRef):
    """A Volcano Job of a queue with `extendClusters`, run on a worker cluster by its
    DispatchWorkflow instead of here by a JobWorkflow."""

    @property
    def workflow_id(self) -> str:
        return dispatch.dispatch_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class FlowRef(_NamespacedRef):
    """The Volcano JobFlow a message is addressed to."""

    @property
    def workflow_id(self) -> str:
        return keys.jobflow_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class CronJobRef(_NamespacedRef):
    """The Volcano CronJob a message is addressed to."""

    @property
    def workflow_id(self) -> str:
        return keys.cronjob_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class QueueRef:
    """The Volcano Queue (cluster-scoped) a message is addressed to."""

    name: str

    @property
    def key(self) -> keys.QueueName:
        return keys.QueueName(self.name)

    @property
    def workflow_id(self) -> str:
        return keys.queue_workflow_id(self.name)


@dataclass(frozen=True)
class NamespaceQueueRef:
    """The NamespaceQueue a message is addressed to (workloads name it `namespace/<name>`)."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """Its canonical queue id, `<namespace>/<name>` (`models.queue_refs`)."""
        return queue_refs.namespace_queue_id(self.namespace, self.name)

    @property
    def workflow_id(self) -> str:
        return keys.namespace_queue_workflow_id(self.namespace, self.name)


@dataclass(frozen=True)
class WorkloadRef:
    """The gang of pods Caldera did not create that one owner controls (the pod itself for a
    bare pod), whose PodGroup a PodGroupWorkflow makes."""

    namespace: str
    owner_uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.owner_uid}"

    @property
    def workflow_id(self) -> str:
        return keys.pod_group_workflow_id(self.namespace, self.owner_uid)


# Which workflow a message is for; its type picks the workflow type.
Target = (
    JobRef
    | QueueRef
    | BatchJobRef
    | WorkloadRef
    | FlowRef
    | CronJobRef
    | DispatchRef
    | NamespaceQueueRef
)


@dataclass(frozen=True)
class Signal:
    """One signal to one workflow; `start`: signal-with-start rather than a plain signal."""

    target: Target
    name: str  # one of the SIGNAL_* names in models.signals.<kind>
    payload: common_signals.Payload
    start: bool = False
    # time.monotonic() of the oldest watch event behind it; None: unknown (not measured).
    received: float | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PodUpdate:
    """The latest snapshot of one pod, waiting to be coalesced into a PodsChanged batch."""

    job: JobRef
    pod: job_signals.PodSnapshot


@dataclass(frozen=True)
class BatchPodUpdate:
    """The latest snapshot of one pod of a batch/v1 Job, waiting for a BatchPodsChanged batch."""

    job: BatchJobRef
    pod: batchjob_signals.BatchPodSnapshot


@dataclass(frozen=True)
class GroupRefUpdate:
    """The latest state of one PodGroup in a queue, waiting for a PodGroupsChanged batch."""

    queue: QueueRef | NamespaceQueueRef
    group: queue_signals.PodGroupRef


@dataclass(frozen=True)
class ConsumeCommand:
    """Delete the Command (namespace/name, exactly this uid), then, and only then, send `signal`."""

    namespace: str
    name: str
    uid: str
    signal: Signal


# What the coalescer holds back.
Batched = PodUpdate | GroupRefUpdate | BatchPodUpdate
Outbound = Signal | PodUpdate | GroupRefUpdate | BatchPodUpdate | ConsumeCommand
