"""kube-scheduler's DynamicResources, for gangs: a pod's ResourceClaims get their devices on
the node the pod goes to, or the pod does not go there.

A claim already allocated (in its status, or by an assumption of an earlier session) pins the
pod to the nodes its allocation reaches. The pod's other claims are allocated together, by the
first-fit search of `scheduling/plugins/device_search.py`.

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
from scheduling.api.device_claims import Allocation, ClaimKey, ResourceClaim
from scheduling.api.device_slices import Device, DeviceId
from scheduling.api.devices import DeviceWorld, node_selector
from scheduling.api.snapshot import NodeInfo, NodeName, PodKey, TaskInfo
from scheduling.plugins import device_search

CANNOT_ALLOCATE: Final = "cannot allocate all claims"  # kube's Filter reason
NOT_ON_NODE: Final = "resourceclaim not available on the node"


@dataclass(frozen=True)
class _Decided:
    """What a pod's unallocated claims get on one node."""

    results: Mapping[ClaimKey, tuple[tuple[str, DeviceId], ...]]  # claim -> (request, device)


@dataclass
class _Held:
    """A claim allocated in this session, and the session's pods using it."""

    plan: ClaimPlan
    holders: set[PodKey] = field(default_factory=set)


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
        if (found := device_search.problem(self._world, task)) is not None:
            self.details[task.key] = found
            return found, None
        labels = self._labels.get(node, {})
        slots: list[device_search.Slot] = []
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
        search = device_search.DeviceSearch(self._world, self._devices_on(node), taken)
        if not search.run(slots):
            self.details[task.key] = search.error or device_search.shortage(slots)
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
