"""Member resolution and nodeCount, as Volcano's GetMembers and actualNodeCnt count."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.hypernode.members import NodeLabels, node_count, resolve
from models.topology import HyperNode, MemberSelector

NODES = [
    NodeLabels(name="gpu-0", labels={"rack": "r1", "zone": "a"}),
    NodeLabels(name="gpu-1", labels={"rack": "r1", "zone": "b"}),
    NodeLabels(name="cpu-0", labels={"rack": "r2"}),
]


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        pytest.param({"exactMatch": {"name": "gpu-0"}}, {"gpu-0"}, id="exact"),
        pytest.param({"exactMatch": {"name": "absent"}}, {"absent"}, id="exact-absent-counts"),
        pytest.param({"regexMatch": {"pattern": "^gpu-"}}, {"gpu-0", "gpu-1"}, id="regex"),
        pytest.param({"regexMatch": {"pattern": "-0"}}, {"gpu-0", "cpu-0"}, id="regex-search"),
        pytest.param({"regexMatch": {"pattern": "(["}}, set(), id="regex-invalid"),
        pytest.param(
            {"labelMatch": {"matchLabels": {"rack": "r1"}}}, {"gpu-0", "gpu-1"}, id="labels"
        ),
        pytest.param({"labelMatch": {}}, set(), id="labels-empty-selects-none"),
        pytest.param(
            {"labelMatch": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
            {"gpu-0", "gpu-1"},
            id="exists",
        ),
        pytest.param(
            {"labelMatch": {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}},
            {"cpu-0"},
            id="does-not-exist",
        ),
        pytest.param(
            {
                "labelMatch": {
                    "matchLabels": {"rack": "r1"},
                    "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}],
                }
            },
            {"gpu-0"},
            id="labels-and-notin",
        ),
        pytest.param(
            {"labelMatch": {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}},
            set(),
            id="in-without-values-invalid",
        ),
        pytest.param(
            {
                "labelMatch": {
                    "matchExpressions": [{"key": "z", "operator": "Exists", "values": ["a"]}]
                }
            },
            set(),
            id="exists-with-values-invalid",
        ),
    ],
)
def test_resolve(selector: dict[str, Any], names: set[str]) -> None:
    assert resolve(MemberSelector.model_validate(selector), NODES) == names


def test_node_count_is_distinct_names_over_members() -> None:
    hn = HyperNode.model_validate(
        {
            "metadata": {"name": "hn"},
            "spec": {
                "tier": 1,
                "members": [
                    {"type": "Node", "selector": {"exactMatch": {"name": "gpu-0"}}},
                    {"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu"}}},
                    {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r2"}}}},
                ],
            },
        }
    )
    assert node_count(hn, NODES) == 3


def test_node_count_of_a_higher_tier_counts_child_hypernodes() -> None:
    hn = HyperNode.model_validate(
        {
            "metadata": {"name": "spine"},
            "spec": {
                "tier": 2,
                "members": [
                    {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-a"}}},
                    {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-b"}}},
                ],
            },
        }
    )
    assert node_count(hn, NODES) == 2


def test_node_count_without_members_is_zero() -> None:
    assert node_count(HyperNode.model_validate({"metadata": {"name": "x"}}), NODES) == 0
