"""What passes between the SchedulerWorkflow and the job workflows: placements to bind, binds
that failed, and the nudge that work arrived.

Signal and workflow type names are stored in histories: they never change. Pure: pydantic only.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from models.signals import common


class VolumePlan(common.Payload):
    """What binding a pod's claims on its node takes (the scheduler's volume decision)."""

    static: list[tuple[str, str]] = Field(default_factory=list)  # (pvc, pv) pairs to claim
    provision: list[str] = Field(default_factory=list)  # PVCs to provision on the node


class DeviceResult(common.Payload):
    """One device given to a claim's request (`status.allocation.devices.results[]`)."""

    request: str  # the claim's request name ("<request>/<subrequest>" for firstAvailable)
    driver: str
    pool: str
    device: str


class ClaimPlan(common.Payload):
    """What binding a pod takes for one of its ResourceClaims (the scheduler's device
    decision): allocate the claim's devices unless it is already allocated, then reserve
    the claim for the pod (`status.reservedFor`), both before the pod is bound."""

    claim: str  # the claim's name, in the pod's namespace
    uid: str = ""  # the claim's uid: a claim deleted and made again is not the one decided on
    devices: list[DeviceResult] = Field(default_factory=list)  # empty: already allocated
    node: str = ""  # the node the devices sit on ("": reachable from every node)
    # `status.allocation.devices.config[]`: the class's and the claim's configs, as written.
    config: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def allocates(self) -> bool:
        return bool(self.devices)


class PlacedPod(common.Payload):
    pod: str
    uid: str = ""
    node: str
    volumes: VolumePlan = Field(default_factory=VolumePlan)
    claims: list[ClaimPlan] = Field(default_factory=list)  # its ResourceClaims, in spec order

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
