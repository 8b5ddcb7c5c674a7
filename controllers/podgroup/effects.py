"""What only a PodGroupWorkflow's shell does on its core's behalf; with `controllers.effects`
(durable timers, the end of the workflow), the closed union the shell executes in order."""

from __future__ import annotations

from typing import Literal

from controllers import effects as fx
from models.meta import OwnerReference
from models.scheduling import PodGroup


class ReadOwners(fx.Effect):
    """Read the annotations of the pod's owners (and a ReplicaSet's Deployment); they come
    back as `OwnersRead`."""

    kind: Literal["ReadOwners"] = "ReadOwners"
    namespace: str
    owners: list[OwnerReference]


class ApplyPodGroup(fx.Effect):
    """Create the PodGroup, or update what differs of its spec, labels and annotations, then
    annotate `pods` with its name; the annotated come back as `PodsAnnotated`."""

    kind: Literal["ApplyPodGroup"] = "ApplyPodGroup"
    group: PodGroup | None  # None: it was applied as it is, only annotate
    group_name: str
    namespace: str
    pods: dict[str, str]  # name → uid


Own = ReadOwners | ApplyPodGroup
AnyEffect = Own | fx.StartTimer | fx.Finish
