"""HyperNode discovery from node labels on the real stack: the HyperNodeDiscoveryWorkflow and
its real `discover_hypernodes` activity, hosted by this test on a task queue of its own against
the stack's Temporal, read a volcano-controller.conf naming this run's label keys only.

Four kwok nodes under two spines and three leaves become Volcano's HyperNodes (names, tiers,
tierName, members, labels, nodeCount); a node relabelled to another leaf moves there and the
leaf it left, now empty, is deleted; a node deleted takes its leaf and spine with it."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
from kubernetes import client
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from activities import kube
from activities.controllers import controller_conf, hypernodes
from cli.devstack import controlplane
from cli.devstack.nodes import NodeTemplate
from models import topology
from tests.e2e.conftest import E2EStack
from workflows import sandbox
from workflows.hypernode_discovery import (
    HyperNodeDiscoveryInput,
    HyperNodeDiscoveryWorkflow,
    NodesChanged,
)

T = TypeVar("T")
SOURCE = {topology.SOURCE_LABEL: "label"}


@dataclass(frozen=True)
class Topology:
    token: str
    leaf: str  # the leaf label key (tier 1)
    spine: str  # the spine label key (tier 2)
    nodes: dict[str, tuple[str, str]]  # node → (leaf, spine) values


@pytest.fixture
def labelled(api: client.ApiClient) -> Iterator[Topology]:
    token = uuid.uuid4().hex[:6]
    leaf, spine = f"e2e-{token}.caldera.dev/leaf", f"e2e-{token}.caldera.dev/spine"
    groups = {"a": (2, "l1", "s1"), "b": (1, "l2", "s1"), "c": (1, "l3", "s2")}
    nodes: dict[str, tuple[str, str]] = {}
    for group, (count, leaf_value, spine_value) in groups.items():
        template = NodeTemplate(
            count=count,
            prefix=f"hn-{token}-{group}",
            cpu="4",
            memory="8Gi",
            labels={leaf: leaf_value, spine: spine_value},
        )
        controlplane.ensure_nodes(api, template, timeout=60)
        nodes.update(dict.fromkeys(template.names(), (leaf_value, spine_value)))
    yield Topology(token, leaf, spine, nodes)
    core = client.CoreV1Api(api)
    for name in nodes:
        try:
            core.delete_node(name)
        except client.ApiException as e:
            if e.status != 404:
                raise
    custom = client.CustomObjectsApi(api)
    for hn in _ours(api, leaf, spine):
        custom.delete_cluster_custom_object(
            topology.GROUP, topology.VERSION, topology.PLURAL, hn.metadata.name or ""
        )


@pytest.fixture
def discovery_conf(
    labelled: Topology, e2e_stack: E2EStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A volcano-controller.conf naming this run's keys, and the activities pointed at the
    session's cluster (they read KUBECONFIG once per process)."""
    path = tmp_path / "volcano-controller.conf"
    path.write_text(
        "networkTopologyDiscovery:\n"
        "  - source: ufm\n    enabled: true\n    config: {endpoint: https://ufm:8080}\n"
        "  - source: label\n    enabled: true\n    config:\n      networkTopologyTypes:\n"
        f"        e2e{labelled.token}:\n"
        f"          - nodeLabel: {labelled.spine}\n"
        f"          - nodeLabel: {labelled.leaf}\n"
        "          - nodeLabel: kubernetes.io/hostname\n"
    )
    monkeypatch.setenv(controller_conf.ENV_FILE, str(path))
    monkeypatch.setenv("KUBECONFIG", e2e_stack.kubeconfig)
    kube.api.cache_clear()
    yield path
    kube.api.cache_clear()


@pytest_asyncio.fixture
async def discovering(
    e2e_stack: E2EStack, discovery_conf: Path, labelled: Topology
) -> AsyncIterator[WorkflowHandle[HyperNodeDiscoveryWorkflow, None]]:
    temporal = await Client.connect(
        e2e_stack.temporal_address, data_converter=pydantic_data_converter
    )
    queue = f"hypernodes-e2e-{labelled.token}"
    with ThreadPoolExecutor(max_workers=2) as pool:
        async with Worker(
            temporal,
            task_queue=queue,
            workflows=[HyperNodeDiscoveryWorkflow],
            activities=[hypernodes.discover_hypernodes],
            workflow_runner=sandbox.runner(),
            activity_executor=pool,
        ):
            handle = await temporal.start_workflow(
                HyperNodeDiscoveryWorkflow.run,
                HyperNodeDiscoveryInput(period_ms=1000),
                id=f"hypernode-discovery-e2e-{labelled.token}",
                task_queue=queue,
            )
            try:
                yield handle
            finally:
                await handle.terminate()


def _ours(api: client.ApiClient, leaf: str, spine: str) -> list[topology.HyperNode]:
    found = client.CustomObjectsApi(api).list_cluster_custom_object(
        topology.GROUP, topology.VERSION, topology.PLURAL
    )
    items = [topology.HyperNode.load(item) for item in found["items"]]  # type: ignore[index]
    return [
        hn
        for hn in items
        if leaf in (hn.metadata.labels or {}) or spine in (hn.metadata.labels or {})
    ]


@dataclass(frozen=True)
class Seen:
    """A HyperNode as the test compares it."""

    name: str
    tier: int
    tier_name: str
    member_type: str
    members: tuple[str, ...]
    node_count: int | None


def _by_label(api: client.ApiClient, t: Topology) -> dict[str, Seen]:
    """This run's HyperNodes by their `<leaf|spine>=<value>` label."""
    out = {}
    for hn in _ours(api, t.leaf, t.spine):
        labels = dict(hn.metadata.labels or {})
        assert labels.pop(topology.SOURCE_LABEL) == "label", hn.metadata.name
        ((key, value),) = labels.items()
        members = hn.spec.members or []
        out[f"{'leaf' if key == t.leaf else 'spine'}={value}"] = Seen(
            name=hn.metadata.name or "",
            tier=hn.spec.tier,
            tier_name=hn.spec.tier_name or "",
            member_type=",".join(sorted({str(m.type) for m in members})),
            members=tuple(m.selector.exact_match.name for m in members if m.selector.exact_match),
            node_count=hn.status.node_count if hn.status is not None else None,
        )
    return out


async def _eventually(probe: Callable[[], T | None], what: str, timeout: float = 60) -> T:
    """Poll without blocking the event loop the test's worker runs on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: T | None = None
    while loop.time() < deadline:
        last = await asyncio.to_thread(probe)
        if last:
            return last
        await asyncio.sleep(0.3)
    raise AssertionError(f"not within {timeout:.0f}s: {what} (last: {last!r})")


def _settled(api: client.ApiClient, t: Topology, want: set[str]) -> Callable[[], Any]:
    """A probe: this run's HyperNodes are exactly `want`, each counted."""

    def probe() -> dict[str, Seen] | None:
        seen = _by_label(api, t)
        ok = set(seen) == want and all(s.node_count == len(s.members) for s in seen.values())
        return seen if ok else None

    return probe


async def test_label_discovery_creates_moves_and_deletes_hypernodes(
    api: client.ApiClient,
    labelled: Topology,
    discovering: WorkflowHandle[HyperNodeDiscoveryWorkflow, None],
) -> None:
    t = labelled
    name = re.compile(rf"^hypernode-e2e{t.token}-tier([12])-[bcdfghjklmnpqrstvwxz2456789]{{5}}$")
    seen: dict[str, Seen] = await _eventually(
        _settled(api, t, {"leaf=l1", "leaf=l2", "leaf=l3", "spine=s1", "spine=s2"}),
        "five HyperNodes discovered and counted",
    )
    for key, hn in seen.items():
        tier = 1 if key.startswith("leaf") else 2
        match = name.match(hn.name)
        assert match is not None and int(match.group(1)) == tier, hn.name
        assert (hn.tier, hn.tier_name) == (tier, t.leaf if tier == 1 else t.spine)
        assert hn.member_type == ("Node" if tier == 1 else "HyperNode")
    a0, a1, b0, c0 = (f"hn-{t.token}-{n}" for n in ("a-0", "a-1", "b-0", "c-0"))
    assert seen["leaf=l1"].members == (a0, a1) and seen["leaf=l1"].node_count == 2
    assert seen["leaf=l2"].members == (b0,)
    assert seen["leaf=l3"].members == (c0,)
    assert seen["spine=s1"].members == tuple(sorted([seen["leaf=l1"].name, seen["leaf=l2"].name]))
    assert seen["spine=s2"].members == (seen["leaf=l3"].name,)
    last = await discovering.query(HyperNodeDiscoveryWorkflow.last_round)
    assert last is not None and last.enabled and last.unsupported == ["ufm"]

    # b-0 moves to leaf l1: l1 holds it, l2 is empty and goes, s1 holds l1 alone. Names stay.
    client.CoreV1Api(api).patch_node(b0, {"metadata": {"labels": {t.leaf: "l1"}}})
    await discovering.signal(HyperNodeDiscoveryWorkflow.nodes_changed, NodesChanged(why="e2e"))
    moved: dict[str, Seen] = await _eventually(
        _settled(api, t, {"leaf=l1", "leaf=l3", "spine=s1", "spine=s2"}),
        "the relabelled node moved and its old leaf deleted",
    )
    assert moved["leaf=l1"].name == seen["leaf=l1"].name
    assert moved["leaf=l1"].members == (a0, a1, b0) and moved["leaf=l1"].node_count == 3
    assert moved["spine=s1"].members == (seen["leaf=l1"].name,)
    assert moved["spine=s1"].name == seen["spine=s1"].name
    assert moved["spine=s2"] == seen["spine=s2"]

    # c-0 deleted: nothing backs l3 or s2 any more.
    client.CoreV1Api(api).delete_node(c0)
    left: dict[str, Seen] = await _eventually(
        _settled(api, t, {"leaf=l1", "spine=s1"}), "the HyperNodes of the deleted node deleted"
    )
    assert left["leaf=l1"] == moved["leaf=l1"]
