"""Short builders for scheduler inputs as Kubernetes dicts (after kueue's wrappers).

`make_node("n1", cpu="4").taint("gpu", "yes").obj()`, `make_pod("a-w-0", group="a").obj()`,
`make_podgroup("a", min_member=3).obj()`, `make_queue("q", weight=3).obj()`; `gang(...)` makes
a PodGroup and its identical pending pods at once, `running(...)` one whose pods run on given
nodes, and `snapshot(...)` runs the real builder over them. The eviction tests (capacity,
preempt, reclaim, victims) share their cluster: `make_nodes(3, cpu="8")`, the `LIGHT_HEAVY`
queues (weights 1:3), the `low`/`high` `PRIORITY_CLASSES`, and `session_state(...)`, a
session's books opened over such a snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Self

from models.keys import JobKey
from scheduling.api.snapshot import NodeInfo, Snapshot, TaskInfo
from scheduling.cache.objects import node_info, snapshot_from_objects
from scheduling.cache.tasks import task_info
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState

Obj = dict[str, Any]


class NodeBuilder:
    def __init__(self, name: str, cpu: str, memory: str, pods: int) -> None:
        self._meta: Obj = {"name": name, "labels": {"kubernetes.io/hostname": name}}
        self._spec: Obj = {}
        self._allocatable: Obj = {"cpu": cpu, "memory": memory, "pods": str(pods)}

    def label(self, key: str, value: str) -> Self:
        self._meta["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._spec.setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def cordon(self) -> Self:
        self._spec["unschedulable"] = True
        return self

    def resource(self, name: str, quantity: str) -> Self:
        self._allocatable[name] = quantity
        return self

    def obj(self) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": self._meta,
            "spec": self._spec,
            "status": {"allocatable": dict(self._allocatable)},
        }

    def info(self, *pods: TaskInfo) -> NodeInfo:
        return node_info(self.obj(), pods)


def make_node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110) -> NodeBuilder:
    return NodeBuilder(name, cpu, memory, pods)


class PodBuilder:
    def __init__(self, name: str, namespace: str, group: str | None) -> None:
        annotations = {"scheduling.k8s.io/group-name": group} if group else {}
        self._meta: Obj = {"name": name, "namespace": namespace, "annotations": annotations}
        self._requests: Obj = {}
        self._spec: Obj = {"schedulerName": "volcano"}
        self._status: Obj = {"phase": "Pending"}

    def request(self, **quantities: str) -> Self:
        self._requests.update(quantities)
        return self

    def role(self, role: str) -> Self:
        self._meta["annotations"]["volcano.sh/task-spec"] = role
        return self

    def priority(self, value: int) -> Self:
        self._spec["priority"] = value
        return self

    def on(self, node: str, phase: str = "Running") -> Self:
        self._spec["nodeName"] = node
        self._status["phase"] = phase
        return self

    def phase(self, phase: str) -> Self:
        self._status["phase"] = phase
        return self

    def tolerate(self, key: str = "", value: str = "", **fields: str) -> Self:
        toleration = {"key": key, "value": value, **fields}
        self._spec.setdefault("tolerations", []).append(toleration)
        return self

    def node_selector(self, **labels: str) -> Self:
        self._spec["nodeSelector"] = labels
        return self

    def require(self, *terms: Obj) -> Self:
        required = {"nodeSelectorTerms": list(terms)}
        self._spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
        return self

    def spec(self, **fields: Any) -> Self:
        self._spec.update(fields)
        return self

    def annotate(self, key: str, value: str) -> Self:
        self._meta["annotations"][key] = value
        return self

    def deleting(self) -> Self:
        self._meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def obj(self) -> Obj:
        container: Obj = {"name": "main", "image": "busybox"}
        if self._requests:
            container["resources"] = {"requests": dict(self._requests)}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": self._meta,
            "spec": {"containers": [container], **self._spec},
            "status": self._status,
        }

    def info(self, job: str = "default/pg") -> TaskInfo:
        return task_info(self.obj(), JobKey(job))


def make_pod(
    name: str, group: str | None = "pg", namespace: str = "default", cpu: str = "1"
) -> PodBuilder:
    builder = PodBuilder(name, namespace, group)
    return builder.request(cpu=cpu, memory="1Gi") if cpu else builder


def make_podgroup(
    name: str,
    min_member: int = 1,
    queue: str = "default",
    namespace: str = "default",
    phase: str = "Inqueue",
    **spec: Any,
) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, "queue": queue, **spec},
        "status": {"phase": phase},
    }


def make_queue(name: str = "default", weight: int = 1, state: str = "Open", **spec: Any) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, **spec},
        "status": {"state": state},
    }


def gang(
    name: str,
    size: int,
    cpu: str = "1",
    min_member: int | None = None,
    queue: str = "default",
    **spec: Any,
) -> tuple[Obj, list[Obj]]:
    """A PodGroup and `size` identical pending pods `<name>-worker-<i>`."""
    group = make_podgroup(name, size if min_member is None else min_member, queue, **spec)
    pods = [make_pod(f"{name}-worker-{i}", group=name, cpu=cpu).obj() for i in range(size)]
    return group, pods


def running(
    name: str,
    on: Sequence[str],
    cpu: str = "1",
    min_member: int | None = None,
    queue: str = "default",
    **spec: Any,
) -> tuple[Obj, list[Obj]]:
    """A Running PodGroup with one running pod `<name>-worker-<i>` on each node of `on`."""
    group = make_podgroup(name, len(on) if min_member is None else min_member, queue, **spec)
    group["status"]["phase"] = "Running"
    pods = [
        make_pod(f"{name}-worker-{i}", group=name, cpu=cpu).on(node).obj()
        for i, node in enumerate(on)
    ]
    return group, pods


def snapshot(
    nodes: list[Obj],
    gangs: Sequence[tuple[Obj, list[Obj]]] = (),
    pods: Sequence[Obj] = (),
    queues: list[Obj] | None = None,
    **options: Any,
) -> Snapshot:
    """The real snapshot builder over these objects; queues default to `default` alone."""
    return snapshot_from_objects(
        nodes,
        [*pods, *(p for _, members in gangs for p in members)],
        [group for group, _ in gangs],
        queues if queues is not None else [make_queue()],
        **options,
    )


def make_nodes(count: int, cpu: str, memory: str = "32Gi") -> list[Obj]:
    """`count` identical nodes `n0`, `n1`, ..."""
    return [make_node(f"n{i}", cpu=cpu, memory=memory).obj() for i in range(count)]


# Two queues sharing the cluster 1:3, the reclaim and victim tests' usual pair.
LIGHT_HEAVY: Final = [make_queue("light", weight=1), make_queue("heavy", weight=3)]
# PriorityClasses `low` (1) and `high` (9), for jobs that name them.
PRIORITY_CLASSES: Final = [
    {"metadata": {"name": "low"}, "value": 1},
    {"metadata": {"name": "high"}, "value": 9},
]


def session_state(
    nodes: list[Obj],
    gangs: Sequence[tuple[Obj, list[Obj]]] = (),
    config: SessionConfig | None = None,  # None: the default configuration
    **options: Any,
) -> SessionState:
    """A session's books opened over `snapshot(nodes, gangs, **options)`, before any action."""
    return SessionState(snapshot(nodes, gangs, **options), config)


def make_pdb(
    name: str,
    allowed: int,
    desired: int | None = None,
    disrupted: tuple[str, ...] = (),
    namespace: str = "default",
    **match: str,
) -> Obj:
    """A policy/v1 PodDisruptionBudget selecting `match`, its status as the controller wrote
    it (`desired` None: not computed yet)."""
    status: Obj = {"disruptionsAllowed": allowed}
    if desired is not None:
        status["desiredHealthy"] = desired
    if disrupted:
        status["disruptedPods"] = dict.fromkeys(disrupted, "2026-01-01T00:00:00Z")
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match}},
        "status": status,
    }


def make_resource_quota(
    name: str,
    hard: Mapping[str, str],
    used: Mapping[str, str] | None = None,  # None: the controller has not counted any
    namespace: str = "default",
    synced: bool = True,  # False: the resourcequota controller has not written its status
) -> Obj:
    """A core/v1 ResourceQuota with `hard`, its status as the controller writes it."""
    status: Obj = {"hard": dict(hard), "used": dict(used or {})} if synced else {}
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": dict(hard)},
        "status": status,
    }
