"""kube-scheduler's DynamicResources, for gangs: a pod's ResourceClaims get their devices on
the node the pod goes to, or the pod does not go there.

A claim already allocated (in its status, or by an assumption of an earlier session) pins the
pod to the nodes its allocation reaches. The pod's other claims are allocated together: each
request takes devices reachable from the node that its class's and its own CEL selectors
accept and nobody holds, `count` of them or, for `All`, every matching one (none of them held);
a `firstAvailable` request takes the first of its subrequests that fits; every `matchAttribute`
constraint of a claim holds across its devices. The search is first fit in kube-scheduler's
device order with backtracking, so the same slices give the same devices on both schedulers.

`DeviceView` keeps the session's books, as `podview.PodView` does for pods: a task allocated
in the session takes its claims' devices, and a discarded statement gives them back, so a gang
that cannot get every member's devices holds none. A claim shared by several pods is allocated
once and freed when the last of its pods in the session leaves. `plans` is what the binding
carries out (`models.signals.scheduler.ClaimPlan`), and what the SchedulerWorkflow assumes
until the claims' status shows it.

Devices of pods being evicted are not counted free for the pods waiting on them: such pods
wait for the claims to be released (reclaim and preempt do not evict for devices).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from models.signals.scheduler import ClaimPlan, DeviceResult
from scheduling.api.devices import (
    Allocation,
    ClaimKey,
    Device,
    DeviceId,
    DeviceWorld,
    Option,
    ResourceClaim,
    accepts,
    compile_error,
    node_selector,
)
from scheduling.api.snapshot import NodeInfo, NodeName, PodKey, TaskInfo

CANNOT_ALLOCATE: Final = "cannot allocate all claims"  # kube's Filter reason
NOT_ON_NODE: Final = "resourceclaim not available on the node"
SEARCH_LIMIT: Final = 20_000  # devices tried per pod and node before giving up
_MISSING: Final = object()


@dataclass(frozen=True)
class _Decided:
    """What a pod's unallocated claims get on one node."""

    results: Mapping[ClaimKey, tuple[tuple[str, DeviceId], ...]]  # claim -> (request, device)


@dataclass
class _Held:
    """A claim allocated in this session, and the session's pods using it."""

    plan: ClaimPlan
    holders: set[PodKey] = field(default_factory=set)


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


class _Search:
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

    def run(self, slots: Sequence[tuple[ResourceClaim, int]]) -> bool:
        """Fill every (claim, request index) slot, in order; False when they cannot all be."""
        return self._slot(slots, 0)

    def _slot(self, slots: Sequence[tuple[ResourceClaim, int]], at: int) -> bool:
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
        slots: Sequence[tuple[ResourceClaim, int]],
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


class DeviceView:
    """The session's device books: who holds which device, and each placed pod's plans."""

    def __init__(self, world: DeviceWorld | None, nodes: Mapping[NodeName, NodeInfo]) -> None:
        self._world = world or DeviceWorld()
        self._labels = {name: node.labels for name, node in nodes.items()}
        self._taken: dict[DeviceId, object] = dict(self._world.taken)
        self._held: dict[ClaimKey, _Held] = {}
        self._placed: dict[PodKey, tuple[ClaimPlan, ...]] = {}
        # Devices of evicted pods' own claims: free for pods pipelined behind them only.
        self._releasing: dict[PodKey, tuple[DeviceId, ...]] = {}
        self._reachable: dict[NodeName, tuple[Device, ...]] = {}
        self._version = 0  # moves with every add and remove: a remembered verdict is stale
        self._verdicts: dict[
            tuple[PodKey, NodeName, bool], tuple[int, str | None, _Decided | None]
        ] = {}
        self.details: dict[PodKey, str] = {}  # why the devices failed, beyond kube's reason

    @property
    def world(self) -> DeviceWorld:
        return self._world

    def _devices_on(self, node: NodeName) -> tuple[Device, ...]:
        found = self._reachable.get(node)
        if found is None:
            found = self._world.reachable(node, self._labels.get(node, {}))
            self._reachable[node] = found
        return found

    def _allocation(self, key: ClaimKey) -> Allocation | None:
        held = self._held.get(key)
        if held is not None:
            plan = held.plan
            return Allocation(
                devices=tuple(DeviceId(r.driver, r.pool, r.device) for r in plan.devices),
                node_selector=node_selector(plan.node) if plan.node else None,
            )
        return self._world.allocation_of(key)

    def _decide(
        self, task: TaskInfo, node: NodeName, future: bool = False
    ) -> tuple[str | None, _Decided | None]:
        cached = self._verdicts.get((task.key, node, future))
        if cached is not None and cached[0] == self._version:
            return cached[1], cached[2]
        verdict = self._judge(task, node, future)
        self._verdicts[(task.key, node, future)] = (self._version, *verdict)
        return verdict

    def _judge(
        self, task: TaskInfo, node: NodeName, future: bool
    ) -> tuple[str | None, _Decided | None]:
        if (found := problem(self._world, task)) is not None:
            self.details[task.key] = found
            return found, None
        labels = self._labels.get(node, {})
        slots: list[tuple[ResourceClaim, int]] = []
        for name in dict.fromkeys(task.resource_claims):
            claim = self._world.claims[(task.namespace, name)]
            allocation = self._allocation(claim.key)
            if allocation is not None:
                if not allocation.reaches(node, labels):
                    return NOT_ON_NODE, None
                continue
            slots.extend((claim, i) for i in range(len(claim.requests)))
        if not slots:
            return None, _Decided({})
        taken: Mapping[DeviceId, object] = self._taken
        if future and self._releasing:
            freed = {
                d
                for devices in self._releasing.values()
                for d in devices
                if self._taken.get(d) == self._world.taken.get(d)  # no pipelined pod took it
            }
            taken = {d: k for d, k in self._taken.items() if d not in freed}
        search = _Search(self._world, self._devices_on(node), taken)
        if not search.run(slots):
            self.details[task.key] = search.error or _shortage(slots)
            return CANNOT_ALLOCATE, None
        return None, _Decided(search.results())

    def refusal(self, task: TaskInfo, node: NodeInfo, future: bool = False) -> str | None:
        """Why `node` cannot give `task` its claims' devices; None: it can. `future`: once
        the pods evicted in this session are gone (their own claims' devices free)."""
        if not task.resource_claims:
            return None
        return self._decide(task, node.name, future)[0]

    def add(self, task: TaskInfo, node: NodeName, future: bool = False) -> None:
        """`task` goes to `node`: its unallocated claims take the devices decided there;
        `future`: it is pipelined, waiting there for evicted pods to go."""
        if not task.resource_claims:
            return
        reason, decided = self._decide(task, node, future)
        if decided is None:
            raise ValueError(f"task {task.key}: no devices on {node}: {reason}")
        plans = []
        for name in dict.fromkeys(task.resource_claims):
            claim = self._world.claims[(task.namespace, name)]
            picks = decided.results.get(claim.key)
            if picks is not None:
                plan = self._plan(claim, picks, node)
                self._held[claim.key] = _Held(plan)
                self._taken.update(dict.fromkeys((d for _, d in picks), claim.key))
                plans.append(plan)
            elif (held := self._held.get(claim.key)) is not None:
                plans.append(held.plan.model_copy(update={"devices": [], "config": []}))
            else:
                plans.append(ClaimPlan(claim=claim.name, uid=claim.uid))
            if (held := self._held.get(claim.key)) is not None:
                held.holders.add(task.key)
        self._placed[task.key] = tuple(plans)
        self._version += 1

    def remove(self, task: TaskInfo, node: NodeName) -> None:
        """`task` leaves `node` (a discarded statement): claims no other pod of the session
        holds give their devices back."""
        if task.key not in self._placed:
            return
        del self._placed[task.key]
        for name in dict.fromkeys(task.resource_claims):
            key = (task.namespace, name)
            held = self._held.get(key)
            if held is None:
                continue
            held.holders.discard(task.key)
            if not held.holders:
                del self._held[key]
                for r in held.plan.devices:
                    device = DeviceId(r.driver, r.pool, r.device)
                    before = self._world.taken.get(device)  # an evicted pod's, pipelined over
                    if before is None:
                        self._taken.pop(device, None)
                    else:
                        self._taken[device] = before
        self._version += 1

    def evicted(self, task: TaskInfo, evicting: bool) -> None:
        """`task` is evicted (or that is undone): the devices of the claims made for it alone
        will be free once it is gone."""
        if not evicting:
            self._releasing.pop(task.key, None)
        else:
            own: list[DeviceId] = []
            for name in dict.fromkeys(task.resource_claims):
                claim = self._world.claims.get((task.namespace, name))
                allocation = self._world.allocation_of((task.namespace, name))
                if claim is None or allocation is None:
                    continue
                if claim.owner_pod == task.uid or claim.reserved_for == (task.uid,):
                    own.extend(allocation.devices)
            if not own:
                return
            self._releasing[task.key] = tuple(own)
        self._version += 1

    def explained(self, task: PodKey, message: str) -> str:
        """A fit error with, when nodes lacked devices, which of the pod's requests went
        without (kube's reason alone does not say)."""
        detail = self.details.get(task)
        if detail is None or CANNOT_ALLOCATE not in message:
            return message
        return f"{message}; {detail}"

    def plans(self, task: PodKey) -> tuple[ClaimPlan, ...]:
        """The claims a placed pod's binding allocates and reserves, in its spec order."""
        return self._placed.get(task, ())

    def _plan(
        self, claim: ResourceClaim, picks: Sequence[tuple[str, DeviceId]], node: NodeName
    ) -> ClaimPlan:
        """The allocation as kube-scheduler writes it: results, the classes' then the claim's
        config, and the node the devices are reached from (none for devices every node
        reaches)."""
        results = [
            DeviceResult(request=r, driver=d.driver, pool=d.pool, device=d.device) for r, d in picks
        ]
        config: list[dict[str, object]] = []
        by_class: dict[str, list[str]] = {}
        for request in claim.requests:
            for option in request.options:
                if any(r == option.name for r, _ in picks):
                    by_class.setdefault(option.device_class, []).append(option.name)
        for class_name, requests in by_class.items():
            for entry in self._world.classes[class_name].config:
                config.append({"source": "FromClass", "requests": requests, **entry})
        for entry in claim.config:
            config.append({"source": "FromClaim", **entry})
        reachable_everywhere = all(
            not self._world.by_id[d].node and self._world.by_id[d].reach is None for _, d in picks
        )
        return ClaimPlan(
            claim=claim.name,
            uid=claim.uid,
            devices=results,
            node="" if reachable_everywhere else node,
            config=config,
        )


def _shortage(slots: Sequence[tuple[ResourceClaim, int]]) -> str:
    """Which requests did not get their devices on the node, for the pod's message."""
    asked = []
    for claim, index in slots:
        request = claim.requests[index]
        option = request.options[0]
        count = "all" if option.all else str(option.count)
        asked.append(f"{claim.name}/{request.name} ({count} of class {option.device_class})")
    return "no free devices for " + ", ".join(asked)
