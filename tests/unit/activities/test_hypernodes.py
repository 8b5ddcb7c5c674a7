"""discover_hypernodes against a recording fake apiserver: what it writes, and that a retry
with the same seed after a partial round reaches the same HyperNodes."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.controllers import controller_conf, hypernodes
from activities.controllers.hypernodes import DiscoverHyperNodesInput, DiscoverHyperNodesResult
from models import topology

pytestmark = pytest.mark.unit

CONF = (
    "networkTopologyDiscovery:\n"
    "  - {source: roce, enabled: true}\n"
    "  - source: label\n    enabled: true\n    interval: 30s\n    config:\n"
    "      networkTopologyTypes:\n"
    "        rack: [{nodeLabel: tor}, {nodeLabel: kubernetes.io/hostname}]\n"
)


class Cluster:
    """Nodes and HyperNodes, and every write made to them."""

    def __init__(self, nodes: dict[str, dict[str, str]]) -> None:
        self.nodes = nodes
        self.hypernodes: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str, Any]] = []

    def core(self) -> Any:
        cluster = self

        class Core:
            def list_node(self) -> SimpleNamespace:
                return SimpleNamespace(
                    items=[
                        SimpleNamespace(metadata=SimpleNamespace(name=n, labels=labels))
                        for n, labels in cluster.nodes.items()
                    ]
                )

        return Core()

    def custom(self) -> Any:
        cluster = self

        class Custom:
            def list_cluster_custom_object(
                self, group: str, version: str, plural: str
            ) -> dict[str, Any]:
                assert (group, version, plural) == (
                    topology.GROUP,
                    topology.VERSION,
                    topology.PLURAL,
                )
                return {"items": [copy.deepcopy(h) for h in cluster.hypernodes.values()]}

            def create_cluster_custom_object(
                self, group: str, version: str, plural: str, body: dict[str, Any]
            ) -> None:
                cluster.writes.append(("create", body["metadata"]["name"], body))
                cluster.hypernodes[body["metadata"]["name"]] = copy.deepcopy(body)

            def patch_cluster_custom_object(
                self,
                group: str,
                version: str,
                plural: str,
                name: str,
                patch: dict[str, Any],
                **kw: Any,
            ) -> None:
                assert kw["_content_type"] == "application/merge-patch+json"
                cluster.writes.append(("patch", name, patch))
                hn = cluster.hypernodes[name]
                hn["metadata"]["labels"].update(patch["metadata"]["labels"])
                hn["spec"] = patch["spec"]

            def patch_cluster_custom_object_status(
                self,
                group: str,
                version: str,
                plural: str,
                name: str,
                patch: dict[str, Any],
                **kw: Any,
            ) -> None:
                cluster.writes.append(("status", name, patch))
                cluster.hypernodes[name]["status"] = patch["status"]

            def delete_cluster_custom_object(
                self, group: str, version: str, plural: str, name: str
            ) -> None:
                cluster.writes.append(("delete", name, None))
                del cluster.hypernodes[name]

        return Custom()


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    path = tmp_path / "volcano-controller.conf"
    path.write_text(CONF)
    monkeypatch.setenv(controller_conf.ENV_FILE, str(path))
    found = Cluster({"n0": {"tor": "t1"}, "n1": {"tor": "t1"}, "n2": {"tor": "t2"}})
    monkeypatch.setattr(kube, "core", found.core)
    monkeypatch.setattr(kube, "custom", found.custom)
    return found


def discover(seed: int = 11) -> DiscoverHyperNodesResult:
    return ActivityEnvironment().run(
        hypernodes.discover_hypernodes, DiscoverHyperNodesInput(seed=seed)
    )


def test_first_round_creates_and_counts(cluster: Cluster) -> None:
    result = discover()
    assert result == DiscoverHyperNodesResult(
        enabled=True, discovered=2, created=2, counted=2, interval_ms=30_000, unsupported=["roce"]
    )
    kinds = [
        (w[0], w[2]["metadata"]["labels"]["tor"] if w[0] == "create" else w[2])
        for w in cluster.writes
    ]
    assert [k for k, _ in kinds] == ["create", "create", "status", "status"]
    by_tor = {h["metadata"]["labels"]["tor"]: h for h in cluster.hypernodes.values()}
    t1 = by_tor["t1"]
    assert t1["apiVersion"] == topology.API_VERSION and t1["kind"] == "HyperNode"
    assert t1["metadata"]["labels"] == {"tor": "t1", topology.SOURCE_LABEL: "label"}
    assert t1["spec"] == {
        "tier": 1,
        "tierName": "tor",
        "members": [
            {"type": "Node", "selector": {"exactMatch": {"name": "n0"}}},
            {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}},
        ],
    }
    assert t1["status"] == {"nodeCount": 2} and by_tor["t2"]["status"] == {"nodeCount": 1}


def test_a_settled_cluster_is_not_written(cluster: Cluster) -> None:
    discover()
    cluster.writes.clear()
    assert discover(seed=12).created == 0
    assert cluster.writes == []


def test_relabel_updates_with_a_merge_patch_and_deletes_the_empty_one(cluster: Cluster) -> None:
    discover()
    names = {h["metadata"]["labels"]["tor"]: n for n, h in cluster.hypernodes.items()}
    cluster.hypernodes[names["t1"]]["metadata"]["labels"]["team"] = "a"  # a user's label stays
    cluster.nodes["n2"] = {"tor": "t1"}
    cluster.writes.clear()
    result = discover(seed=12)
    assert (result.created, result.updated, result.deleted, result.counted) == (0, 1, 1, 1)
    assert [(w[0], w[1]) for w in cluster.writes] == [
        ("patch", names["t1"]),
        ("status", names["t1"]),
        ("delete", names["t2"]),
    ]
    patch = cluster.writes[0][2]
    assert patch["metadata"] == {"labels": {"tor": "t1", topology.SOURCE_LABEL: "label"}}
    assert [m["selector"]["exactMatch"]["name"] for m in patch["spec"]["members"]] == [
        "n0",
        "n1",
        "n2",
    ]
    assert cluster.hypernodes[names["t1"]]["metadata"]["labels"]["team"] == "a"


def test_a_retry_after_a_partial_round_reuses_what_it_created(cluster: Cluster) -> None:
    """The first attempt created one HyperNode and died; the retry keeps it and adds the other."""
    discover(seed=5)
    complete = {h["metadata"]["labels"]["tor"]: h["spec"] for h in cluster.hypernodes.values()}
    first = sorted(cluster.hypernodes)[0]
    cluster.hypernodes = {first: cluster.hypernodes[first]}
    cluster.hypernodes[first].pop("status")
    cluster.writes.clear()
    assert discover(seed=5).created == 1
    assert first in cluster.hypernodes and len(cluster.hypernodes) == 2
    assert {
        h["metadata"]["labels"]["tor"]: h["spec"] for h in cluster.hypernodes.values()
    } == complete
