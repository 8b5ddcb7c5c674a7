"""The search for a pod's devices on one node: which devices its unallocated claims would get.

Each request takes devices reachable from the node that its class's and its own CEL selectors
accept and nobody holds, `count` of them or, for `All`, every matching one (none of them held);
a `firstAvailable` request takes the first of its subrequests that fits; every `matchAttribute`
constraint of a claim holds across its devices. The search is first fit in kube-scheduler's
device order with backtracking, so the same slices give the same devices on both schedulers,
and it gives up after `SEARCH_LIMIT` devices tried; `problem` first says why no node could
(a claim missing, a class unknown, a selector that does not compile). Apart from the
session's books (`scheduling/plugins/dynamicresources.py`) because it only reads: it decides
one pod on one node against a given set of taken devices, and keeps no state between pods.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from scheduling.api.device_claims import ClaimKey, Option, ResourceClaim
from scheduling.api.device_selectors import accepts, compile_error
from scheduling.api.device_slices import Device, DeviceId
from scheduling.api.devices import DeviceWorld
from scheduling.api.snapshot import TaskInfo

SEARCH_LIMIT: Final = 20_000  # devices tried per pod and node before giving up
_MISSING: Final = object()

Slot = tuple[ResourceClaim, int]  # a claim and the index of one of its requests


def problem(world: DeviceWorld, task: TaskInfo) -> str | None:
    """Why no node can take the task whatever the devices (a claim not made yet, or gone, a
    class that does not exist, a selector that does not compile), naming the field; None:
    the nodes decide."""
    for name in task.resource_claims:
        if not name:
            return "waiting for the pod's ResourceClaim to be created from its template"
        claim = world.claims.get((task.namespace, name))
        if claim is None:
            return f'resourceclaim "{name}" not found'
        if claim.deleting:
            return f'resourceclaim "{name}" is being deleted'
        if claim.owner_pod and claim.owner_pod != task.uid:
            return f'resourceclaim "{name}" was not created for this pod'
        if world.allocation_of(claim.key) is not None:
            continue
        for request in claim.requests:
            if not request.options:
                return f"resourceclaim {name}: request {request.name!r} has no devices to ask for"
            for option in request.options:
                device_class = world.classes.get(option.device_class)
                if device_class is None:
                    return (
                        f"resourceclaim {name}: {option.path}.deviceClassName: "
                        f'DeviceClass "{option.device_class}" not found'
                    )
                for i, expression in enumerate(device_class.selectors):
                    if error := compile_error(expression):
                        return f"DeviceClass {device_class.name}: spec.selectors[{i}]: {error}"
                for i, expression in enumerate(option.selectors):
                    if error := compile_error(expression):
                        return f"resourceclaim {name}: {option.path}.selectors[{i}]: {error}"
    return None


class DeviceSearch:
    """First fit with backtracking over the requests of a pod's unallocated claims."""

    def __init__(
        self, world: DeviceWorld, devices: Sequence[Device], taken: Mapping[DeviceId, object]
    ) -> None:
        self._world, self._devices, self._taken = world, devices, taken
        self._steps = 0
        self._used: set[DeviceId] = set()
        self._picks: list[tuple[ResourceClaim, str, Device]] = []
        self.error = ""  # the first selector that failed on a device, for the message

    def _matching(self, option: Option) -> list[Device]:
        device_class = self._world.classes[option.device_class]
        selectors = (*device_class.selectors, *option.selectors)
        out = []
        for device in self._devices:
            answer = accepts(selectors, device)
            if answer is True:
                out.append(device)
            elif answer is not False and not self.error:
                self.error = f"{option.path}: device {device.id}: {answer}"
        return out

    def _consistent(self, claim: ResourceClaim, request: str, device: Device) -> bool:
        for constraint in claim.constraints:
            if not constraint.covers(request):
                continue
            value = device.attributes.get(constraint.attribute, _MISSING)
            if value is _MISSING or value is None:
                return False
            for other, name, picked in self._picks:
                if (
                    other is claim
                    and constraint.covers(name)
                    and picked.attributes.get(constraint.attribute, _MISSING) != value
                ):
                    return False
        return True

    def _free(self, device: Device) -> bool:
        return device.id not in self._taken and device.id not in self._used

    def run(self, slots: Sequence[Slot]) -> bool:
        """Fill every (claim, request index) slot, in order; False when they cannot all be."""
        return self._slot(slots, 0)

    def _slot(self, slots: Sequence[Slot], at: int) -> bool:
        if at == len(slots):
            return True
        claim, index = slots[at]
        for option in claim.requests[index].options:
            matching = self._matching(option)
            if option.all:
                free = bool(matching) and all(self._free(d) for d in matching)
                if free and self._take(claim, option.name, matching, 0, len(matching), slots, at):
                    return True
                continue
            candidates = [d for d in matching if self._free(d)]
            if len(candidates) >= option.count and self._take(
                claim, option.name, candidates, 0, option.count, slots, at
            ):
                return True
        return False

    def _take(
        self,
        claim: ResourceClaim,
        request: str,
        candidates: Sequence[Device],
        start: int,
        remaining: int,
        slots: Sequence[Slot],
        at: int,
    ) -> bool:
        """Pick `remaining` of `candidates` from `start` on (in order: no permutation is
        tried twice), then fill the next slots."""
        if remaining == 0:
            return self._slot(slots, at + 1)
        for i in range(start, len(candidates) - remaining + 1):
            self._steps += 1
            if self._steps > SEARCH_LIMIT:
                return False
            device = candidates[i]
            if device.id in self._used or not self._consistent(claim, request, device):
                continue
            self._used.add(device.id)
            self._picks.append((claim, request, device))
            if self._take(claim, request, candidates, i + 1, remaining - 1, slots, at):
                return True
            self._picks.pop()
            self._used.discard(device.id)
        return False

    def results(self) -> dict[ClaimKey, tuple[tuple[str, DeviceId], ...]]:
        out: dict[ClaimKey, list[tuple[str, DeviceId]]] = {}
        for claim, request, device in self._picks:
            out.setdefault(claim.key, []).append((request, device.id))
        return {key: tuple(picks) for key, picks in out.items()}


def shortage(slots: Sequence[Slot]) -> str:
    """Which requests did not get their devices on the node, for the pod's message."""
    asked = []
    for claim, index in slots:
        request = claim.requests[index]
        option = request.options[0]
        count = "all" if option.all else str(option.count)
        asked.append(f"{claim.name}/{request.name} ({count} of class {option.device_class})")
    return "no free devices for " + ", ".join(asked)
