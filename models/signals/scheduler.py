"""What passes between the SchedulerWorkflow and the job workflows: placements to bind, binds
that failed, and the nudge that work arrived.

Signal and workflow type names are stored in histories: they never change. Pure: pydantic only.
"""

from __future__ import annotations

from pydantic import Field

from models.signals import common


class VolumePlan(common.Payload):
    """What binding a pod's claims on its node takes (the scheduler's volume decision)."""

    static: list[tuple[str, str]] = Field(default_factory=list)  # (pvc, pv) pairs to claim
    provision: list[str] = Field(default_factory=list)  # PVCs to provision on the node


class PlacedPod(common.Payload):
    pod: str
    uid: str = ""
    node: str
    volumes: VolumePlan = Field(default_factory=VolumePlan)

    @property
    def binds_volumes(self) -> bool:
        """Its claims are bound on its node first (which may wait minutes for a provisioner)."""
        return bool(self.volumes.static or self.volumes.provision)


class PodsPlaced(common.Payload):
    """Sent by the SchedulerWorkflow to a JobWorkflow: bind these pods (a whole gang)."""

    session: int
    placements: list[PlacedPod]


class BindFailed(common.Payload):
    """Sent by a JobWorkflow to the SchedulerWorkflow: drop these assumptions, retry later."""

    pods: dict[str, str]  # "<ns>/<pod>" → why


class WorkArrived(common.Payload):
    """Something may be schedulable now (pods created, a PodGroup changed)."""

    reason: str = ""


# Workflow type and message names: histories and the forwarder use these strings.
SCHEDULER_WORKFLOW = "SchedulerWorkflow"
SIGNAL_PODS_PLACED = "pods_placed"
SIGNAL_BIND_FAILED = "bind_failed"
SIGNAL_WORK_ARRIVED = "work_arrived"
