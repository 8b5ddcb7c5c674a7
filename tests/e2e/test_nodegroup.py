"""The nodegroup plugin on the real stack: a queue's pods stay in the node groups its
`spec.affinity` allows, fill the preferred group first, and wait rather than use a group the
queue refuses, while a queue without affinity gets no labelled node at all (`strict`).

Volcano has no e2e for the plugin; this follows its user guide
(`docs/user-guide/how_to_use_nodegroup_plugin.md`, tip 1: "soft constraints are a subset of hard
constraints") and the unit case it is drawn from (`pkg/scheduler/plugins/nodegroup/
nodegroup_test.go`, TestNodeGroup, "case: soft constraints is subset of hard constraints").
The stack's volcano-scheduler.conf gains `nodegroup` for the test and is restored afterwards;
its 3 kwok nodes of 8 CPUs become one group each, their labels restored afterwards.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduling.api.nodegroups import NODE_GROUP_LABEL
from scheduling.framework.conf import CALDERA_DEFAULT
from tests.builders import make_job
from tests.e2e.conftest import NODES, eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
NODEGROUP = CALDERA_DEFAULT + "  - name: nodegroup\n"
_G, _V = "scheduling.volcano.sh", "v1beta1"


@pytest.fixture
def groups(api: client.ApiClient) -> Iterator[dict[str, str]]:
    """Each node in a group of its own, `<a|b|c>-<suffix>`, by group; labels restored after."""
    core = client.CoreV1Api(api)
    suffix = uuid.uuid4().hex[:5]
    names = NODES.names()
    nodes: list[Any] = [core.read_node(n) for n in names]
    before = {n.metadata.name: (n.metadata.labels or {}).get(NODE_GROUP_LABEL) for n in nodes}
    by_group = {f"{g}-{suffix}": node for g, node in zip("abc", names, strict=True)}
    try:
        for group, node in by_group.items():
            core.patch_node(node, {"metadata": {"labels": {NODE_GROUP_LABEL: group}}})
        yield by_group
    finally:
        for node, value in before.items():
            core.patch_node(node, {"metadata": {"labels": {NODE_GROUP_LABEL: value}}})


@pytest.fixture
def queue(api: client.ApiClient, groups: dict[str, str]) -> Iterator[str]:
    """A queue requiring groups a and b, preferring b, refusing c; removed afterwards."""
    a, b, c = sorted(groups)
    name = f"ng-{a.partition('-')[2]}"
    affinity = {
        "nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [a, b],
            "preferredDuringSchedulingIgnoredDuringExecution": [b],
        },
        "nodeGroupAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [c]},
    }
    custom = client.CustomObjectsApi(api)
    body = {
        "apiVersion": f"{_G}/{_V}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "parent": "root", "reclaimable": True, "affinity": affinity},
    }
    custom.create_cluster_custom_object(_G, _V, "queues", body)
    yield name
    custom.delete_cluster_custom_object(_G, _V, "queues", name)


@pytest.fixture
def nodegroup_conf(scheduler_conf: Path, groups: dict[str, str]) -> Path:
    """The plugin on, once the nodes carry their groups (restored before the labels are)."""
    scheduler_conf.write_text(NODEGROUP)
    return scheduler_conf


def _submit(api: client.ApiClient, ns: str, name: str, queue: str, replicas: int) -> None:
    """A gang of `replicas` pods of 2 CPUs that run until deleted."""
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
            ],
        }
    }
    doc = make_job(name, namespace=ns).task("w", replicas=replicas, template=template)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc.spec(queue=queue).manifest()
    )


def _pods(api: client.ApiClient, ns: str) -> list[Any]:
    pods: list[Any] = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return pods


def _nodes_of(api: client.ApiClient, ns: str, job: str) -> Counter[str]:
    """The job's running pods by node."""
    return Counter(
        p.spec.node_name
        for p in _pods(api, ns)
        if p.metadata.name.startswith(f"{job}-")
        and p.spec.node_name
        and p.status.phase == "Running"
    )


def _unschedulable(api: client.ApiClient, ns: str, job: str) -> str | None:
    """The message of the job's PodGroup's Unschedulable condition saying where its pods do
    not fit; None: it has none."""
    listed: Any = client.CustomObjectsApi(api).list_namespaced_custom_object(
        _G, _V, ns, "podgroups"
    )
    for group in listed["items"]:
        if not group["metadata"]["name"].startswith(job):
            continue
        for condition in (group.get("status") or {}).get("conditions") or []:
            message = str(condition.get("message"))
            # Only a placement's reason: a queue briefly full is no answer about node groups.
            if condition.get("type") == "Unschedulable" and "nodes are available" in message:
                return message
    return None


def test_a_queue_fills_its_preferred_group_then_its_other_and_never_the_refused_one(
    api: client.ApiClient,
    namespace: str,
    groups: dict[str, str],
    queue: str,
    nodegroup_conf: Path,
) -> None:
    a, b, c = (groups[g] for g in sorted(groups))
    # A queue without affinity gets no labelled node while the plugin is strict.
    _submit(api, namespace, "plain", "default", replicas=1)
    message = eventually(lambda: _unschedulable(api, namespace, "plain"), 120, "Unschedulable")
    assert "0/3 nodes are available: 3 node group affinity not specified" in message, message
    # Preferred while room allows: one pod goes to b, though all three nodes are empty.
    _submit(api, namespace, "first", queue, replicas=1)
    eventually(lambda: _nodes_of(api, namespace, "first") == {b: 1}, 120, "first on b")
    # Seven more: b's remaining 6 CPUs take three, the required group a the other four.
    _submit(api, namespace, "more", queue, replicas=7)
    eventually(lambda: _nodes_of(api, namespace, "more") == {b: 3, a: 4}, 120, "3 on b, 4 on a")
    # a and b are full; c is empty but refused: the next gang waits and says why.
    _submit(api, namespace, "refused", queue, replicas=1)
    message = eventually(lambda: _unschedulable(api, namespace, "refused"), 120, "Unschedulable")
    assert "1 node does not satisfy the node group affinity" in message, message
    assert "2 Insufficient cpu" in message, message
    assert not _nodes_of(api, namespace, "refused") and not _nodes_of(api, namespace, "plain")
    assert c not in {p.spec.node_name for p in _pods(api, namespace)}
