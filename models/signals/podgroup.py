"""What a PodGroupWorkflow hears and answers: PodGroups for pods Caldera did not create
(Deployments, StatefulSets, bare pods).

Signal and workflow type names are stored in histories and used by the forwarder: they never
change. Pure: pydantic only.
"""

from __future__ import annotations

from pydantic import Field

from models.meta import OwnerReference
from models.scheduling import PodGroup
from models.signals import common


class PodGroupStart(common.Payload):
    """What the forwarder starts a PodGroupWorkflow with (signal-with-start)."""


class WorkloadPod(common.Payload):
    """A pod that names Volcano's scheduler and has no PodGroup yet, as far as the PodGroup
    controller reads it: only the annotations and labels it copies travel, not the object."""

    namespace: str
    name: str
    uid: str
    owner_references: list[OwnerReference] = Field(default_factory=list)
    priority_class_name: str = ""
    requests: dict[str, str] = Field(default_factory=dict)  # one pod's, with `pods: 1`
    annotations: dict[str, str] = Field(default_factory=dict)  # the keys the controller reads
    labels: dict[str, str] = Field(default_factory=dict)  # likewise
    # spec.schedulingGroup.podGroupName: the Kubernetes PodGroup (scheduling.k8s.io) whose gang
    # the pod is in; "": it names none, its gang is its owner's.
    scheduling_group: str = ""


class CoreGroup(common.Payload):
    """A Kubernetes PodGroup (scheduling.k8s.io/v1beta1, KEP-4671), as far as the gang Caldera
    mirrors it into reads it."""

    namespace: str
    name: str
    uid: str
    generation: int = 0
    min_member: int = 1  # its gang policy's minCount; 1 for a basic policy
    priority_class_name: str = ""
    annotations: dict[str, str] = Field(default_factory=dict)  # only the `volcano.sh/` keys
    workload: str = ""  # spec.workloadRef.workloadName; "": none


class WorkloadPodSeen(common.Payload):
    pod: WorkloadPod
    # The Kubernetes PodGroup the pod names, as the forwarder last saw it; None: it names none,
    # or it has not been seen yet (it comes as `CoreGroupSeen` once it is).
    core: CoreGroup | None = None


class CoreGroupSeen(common.Payload):
    """A Kubernetes PodGroup that pods of Caldera's scheduler name, created or changed."""

    group: CoreGroup
    # The newest pod the forwarder saw naming it, annotated or not: a run that starts with the
    # PodGroup's change (the last one ended idle while the gang waited) builds the mirror from
    # it. None: none seen.
    pod: WorkloadPod | None = None


class PodGroupView(common.Payload):
    """The `status` query of a PodGroupWorkflow."""

    namespace: str
    name: str  # the PodGroup's
    applied: PodGroup | None = None  # as last created or updated; None: not yet
    waiting: list[str] = Field(default_factory=list)  # pods not annotated yet
    annotated: int = 0  # pods annotated by this run
    idle_until: str = ""  # RFC 3339: when the run ends if no pod comes; "": not armed
    backlog: int = 0


# Workflow type and message names: histories and the forwarder use these strings.
POD_GROUP_WORKFLOW = "PodGroupWorkflow"
SIGNAL_WORKLOAD_POD_SEEN = "workload_pod_seen"
SIGNAL_CORE_GROUP_SEEN = "core_group_seen"
