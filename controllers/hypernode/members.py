"""A HyperNode's members resolved to names, and its `status.nodeCount`.

Volcano's GetMembers, as its HyperNode controller counts with it: an exact match names one
member (a node or a child HyperNode, whether or not it exists), a regex or a label selector
selects among the cluster's nodes. The count is of distinct names, so a child HyperNode counts
once however many nodes it holds. A pattern that does not compile or a selector that is not
valid selects nothing, as Volcano's logs-and-returns-empty does.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from models.topology import HyperNode, LabelSelector, LabelSelectorRequirement, MemberSelector


class NodeLabels(BaseModel):
    """What discovery and counting read of a node: its name and labels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    labels: dict[str, str] = Field(default_factory=dict)


def _valid(requirement: LabelSelectorRequirement) -> bool:
    """LabelSelectorAsSelector's checks: In/NotIn need values, Exists/DoesNotExist none."""
    values = requirement.values or []
    return bool(values) if requirement.operator in ("In", "NotIn") else not values


def _holds(requirement: LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = requirement.key in labels
    values = requirement.values or []
    match requirement.operator:
        case "In":
            return present and labels[requirement.key] in values
        case "NotIn":
            return not present or labels[requirement.key] not in values
        case "Exists":
            return present
        case "DoesNotExist":
            return not present


def _by_labels(selector: LabelSelector, nodes: Sequence[NodeLabels]) -> set[str]:
    wanted = selector.match_labels or {}
    expressions = selector.match_expressions or []
    if not wanted and not expressions:
        return set()  # an empty selector selects no node here, not every node
    if not all(_valid(r) for r in expressions):
        return set()
    return {
        n.name
        for n in nodes
        if all(n.labels.get(k) == v for k, v in wanted.items())
        and all(_holds(r, n.labels) for r in expressions)
    }


def resolve(selector: MemberSelector, nodes: Sequence[NodeLabels]) -> set[str]:
    """The names one member selects."""
    names: set[str] = set()
    if selector.exact_match is not None:
        if not selector.exact_match.name:
            return names
        names.add(selector.exact_match.name)
    if selector.regex_match is not None:
        try:
            pattern = re.compile(selector.regex_match.pattern)
        except re.error:
            return set()
        names |= {n.name for n in nodes if pattern.search(n.name)}  # Go's MatchString: search
    if selector.label_match is not None:
        names |= _by_labels(selector.label_match, nodes)
    return names


def node_count(hyper_node: HyperNode, nodes: Sequence[NodeLabels]) -> int:
    """Volcano's actualNodeCnt: the distinct names the members resolve to."""
    names: set[str] = set()
    for member in hyper_node.spec.members or []:
        names |= resolve(member.selector, nodes)
    return len(names)
