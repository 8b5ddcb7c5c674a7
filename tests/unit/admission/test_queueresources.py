"""A Queue's guarantee, deserved and capability, alone and against its hierarchy."""

from __future__ import annotations

from typing import Any

import pytest

from admission import queueresources as qr
from admission.queueresources import Member


def _shares(**lists: dict[str, Any]) -> qr.Shares:
    spec: dict[str, Any] = {k: v for k, v in lists.items() if k != "guarantee"}
    if "guarantee" in lists:
        spec["guarantee"] = {"resource": lists["guarantee"]}
    return qr.shares(spec)


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        ({"guarantee": {"cpu": "2"}, "deserved": {"cpu": "4"}, "capability": {"cpu": "8"}}, []),
        ({"deserved": {"cpu": "4000m"}, "capability": {"cpu": "4"}}, []),  # equal is fine
        ({"capability": {"cpu": "1"}}, []),
        (
            {"guarantee": {"cpu": "2"}},
            ["spec.deserved.cpu: Required value: deserved[cpu] must be >= guarantee[cpu]=2"],
        ),
        (
            {"guarantee": {"memory": "2Gi"}, "deserved": {"memory": "1Gi"}},
            [
                'spec.deserved.memory: Invalid value: "1Gi": deserved[memory] must be >= '
                "guarantee[memory]=2Gi"
            ],
        ),
        (
            {"deserved": {"cpu": "8", "memory": "1Gi"}, "capability": {"cpu": "4"}},
            ['spec.deserved.cpu: Invalid value: "8": deserved[cpu] must be <= capability[cpu]=4'],
        ),
    ],
    ids=["ordered", "equal", "capability-only", "guarantee-undeserved", "under", "over"],
)
def test_a_queue_keeps_guarantee_below_deserved_below_capability(
    lists: dict[str, dict[str, Any]], expected: list[str]
) -> None:
    assert qr.own_problems(_shares(**lists)) == expected


def _member(name: str, parent: str = "root", **lists: dict[str, Any]) -> Member:
    return Member(name=name, parent=parent, shares=_shares(**lists))


# root ── org (capability cpu 16, guarantee cpu 4, deserved cpu 10) ─┬─ a (deserved cpu 6)
#                                                                      └─ b (guarantee cpu 3)
ORG = _member("org", capability={"cpu": "16"}, guarantee={"cpu": "4"}, deserved={"cpu": "10"})
TREE = [
    ORG,
    _member("a", "org", deserved={"cpu": "6"}),
    _member("b", "org", guarantee={"cpu": "3"}, deserved={"cpu": "3"}),
    _member("loose"),  # under root: no limits from above
]


@pytest.mark.parametrize(
    ("queue", "expected"),
    [
        (_member("c", "org", capability={"cpu": "16"}, deserved={"cpu": "1"}), []),
        (_member("loose", capability={"cpu": "1000"}), []),
        (
            _member("c", "org", capability={"cpu": "32"}),
            [
                'spec.capability.cpu: Invalid value: "32": queue "c" capability[cpu] exceeds its '
                'ancestor "org"\'s capability 16'
            ],
        ),
        (
            _member("c", "org", guarantee={"cpu": "2"}),
            [
                'spec.guarantee.resource.cpu: the children of queue "org" (a, b, c) have '
                "guarantee 5 in all, more than its own guarantee 4"
            ],
        ),
        (
            _member("a", "org", deserved={"cpu": "8"}),  # a grows: 8 + 3 > 10
            [
                'spec.deserved.cpu: the children of queue "org" (a, b) have deserved 11 in all, '
                "more than its own deserved 10"
            ],
        ),
        (
            _member("c", "org", deserved={"memory": "1Gi"}),
            [
                'spec.deserved.memory: the children of queue "org" (a, b, c) have deserved 1Gi '
                "in all, more than its own deserved 0"
            ],
        ),
        (
            _member("org", capability={"cpu": "8"}, guarantee={"cpu": "4"}, deserved={"cpu": "9"}),
            [],
        ),
        (
            _member("org", capability={"cpu": "4"}, guarantee={"cpu": "4"}, deserved={"cpu": "10"}),
            [],
        ),
        (
            _member("org", guarantee={"cpu": "2"}, deserved={"cpu": "10"}),
            [
                'spec.guarantee.resource.cpu: the children of queue "org" (a, b) have guarantee '
                "3 in all, more than its own guarantee 2"
            ],
        ),
    ],
    ids=[
        "child-fits",
        "under-root-unbounded",
        "child-capability-over-ancestor",
        "siblings-guarantee-over-parent",
        "grown-child-deserved-over-parent",
        "unnamed-parent-resource",
        "parent-shrinks-and-still-fits",
        "parent-capability-without-capped-children",
        "parent-guarantee-below-children",
    ],
)
def test_a_queue_fits_its_hierarchy(queue: Member, expected: list[str]) -> None:
    assert qr.hierarchy_problems(queue, TREE) == expected


def test_a_parent_capability_must_cover_its_descendants_largest() -> None:
    tree = [
        _member("org", capability={"cpu": "16"}),
        _member("team", "org"),
        _member("squad", "team", capability={"cpu": "12"}),
    ]
    smaller = _member("org", capability={"cpu": "8"})
    assert qr.hierarchy_problems(smaller, tree) == [
        'spec.capability.cpu: Invalid value: "8": queue "org" capability[cpu] is smaller than '
        "its descendants' largest capability 12"
    ]
    assert qr.hierarchy_problems(_member("org", capability={"cpu": "12"}), tree) == []


def test_root_is_never_checked_and_unparsable_amounts_are_left_to_the_schema() -> None:
    assert qr.hierarchy_problems(_member("root", capability={"cpu": "1"}), TREE) == []
    assert qr.shares({"capability": {"cpu": "lots", "memory": "1Gi"}}).capability == {
        "memory": 1024**3
    }
