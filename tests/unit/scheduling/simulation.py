"""A small simulated cluster that plays the parts around `run_session`, session after session.

What the scheduler shell, the apiserver, kwok and the job controller would do with a session's
result, reduced to what fairness depends on: PodGroup phases are written back, except (with
`hold`) those the shell holds back, of gangs placed in this session or bound in it (placed in
the last one), whose next session writes them; placed pods run from the next session on;
evicted pods carry a deletionTimestamp for `lag` sessions and are then gone; a job whose
PodGroup is out of Pending gets its missing pod (re)created pending, as Volcano's job
controller does on PodEvicted with no policy (SyncJob). Jobs are single-pod gangs with
minResources, so the enqueue gate is in play as it is on a real cluster.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scheduling.actions.registry import run_session
from scheduling.api.result import SessionResult
from scheduling.cache.objects import snapshot_from_objects
from tests.unit.scheduling.builders import make_node, make_pod, make_podgroup, make_queue

Obj = dict[str, Any]


@dataclass
class Cluster:
    nodes: list[Obj]
    queues: list[Obj]
    lag: int = 0  # sessions an evicted pod takes to go away
    hold: bool = False  # the shell's held status writes (activities.scheduler.sessions._held)
    groups: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)
    cpu: dict[str, str] = field(default_factory=dict)  # job -> its pod's request
    leaving: dict[str, int] = field(default_factory=dict)  # pod -> sessions left
    evicted: int = 0
    binding: set[str] = field(default_factory=set)  # jobs placed last session, bound in this one

    def submit(self, queue: str, count: int, cpu: str = "2") -> None:
        """`count` single-pod jobs `<queue>-<i>` (numbered on from the queue's last one)."""
        start = sum(1 for name in self.groups if name.rsplit("-", 1)[0] == queue)
        for i in range(start, start + count):
            name = f"{queue}-{i}"
            self.groups[name] = make_podgroup(
                name, 1, queue=queue, phase="Pending", minResources={"cpu": cpu}
            )
            self.cpu[name] = cpu

    def _sync(self) -> None:
        """The job controller: a pod for every admitted job that has none."""
        for name, group in self.groups.items():
            pod = f"{name}-w-0"
            if group["status"]["phase"] != "Pending" and pod not in self.pods:
                self.pods[pod] = make_pod(pod, group=name, cpu=self.cpu[name]).obj()

    def step(self) -> SessionResult:
        self._sync()
        groups, pods = list(self.groups.values()), list(self.pods.values())
        snap = snapshot_from_objects(self.nodes, pods, groups, self.queues)
        result = run_session(snap)
        placed = {p.job.split("/")[1] for p in result.placements}
        held = placed | self.binding if self.hold else set()
        self.binding = placed
        for update in result.phase_updates:
            if (name := update.job.split("/")[1]) not in held:
                self.groups[name]["status"]["phase"] = str(update.new)
        for placement in result.placements:
            pod = self.pods[placement.pod.split("/")[1]]
            pod["spec"]["nodeName"], pod["status"]["phase"] = placement.node, "Running"
        for name, left in list(self.leaving.items()):
            if left <= 1:
                del self.pods[name], self.leaving[name]
            else:
                self.leaving[name] = left - 1
        for eviction in result.evictions:
            name = eviction.pod.split("/")[1]
            assert self.pods[name]["metadata"].get("uid", "") == eviction.uid
            self.evicted += 1
            if self.lag:
                self.pods[name]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                self.leaving[name] = self.lag
            else:
                del self.pods[name]
        self._sync()
        return result

    def running(self) -> Counter[str]:
        """Pods on a node and not being deleted, by queue."""
        return Counter(
            self.groups[p["metadata"]["annotations"]["scheduling.k8s.io/group-name"]]["spec"][
                "queue"
            ]
            for p in self.pods.values()
            if p["spec"].get("nodeName") and "deletionTimestamp" not in p["metadata"]
        )


def two_queues(light_first: bool = True, lag: int = 0, hold: bool = False) -> Cluster:
    """3 nodes of 8 CPUs (12 slots of 2 CPUs); queues `light` (weight 1) and `heavy` (3)."""
    light, heavy = make_queue("light", weight=1), make_queue("heavy", weight=3)
    first, second = (light, heavy) if light_first else (heavy, light)
    first["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    second["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    nodes = [make_node(f"n{i}", cpu="8", memory="32Gi").obj() for i in range(3)]
    return Cluster(nodes=nodes, queues=[light, heavy], lag=lag, hold=hold)
