"""topology.volcano.sh/v1alpha1 HyperNode (cluster-scoped): a group of nodes, or of smaller
HyperNodes, that share a network tier (a rack's switch, a spine, an NVLink domain).

Field for field Volcano's type. A member selects nodes by exact name, name regex or labels
(regex and labels only for `Node` members); a `HyperNode` member names its child exactly. The
rules Volcano checks in the CRD are CEL rules here; the one its webhook adds (the regex
compiles) is not checked yet: a pattern that does not compile selects nothing.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from models.base import ApiModel, NonNegInt32
from models.meta import Condition, ObjectMeta

GROUP: Final = "topology.volcano.sh"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "HyperNode"
PLURAL: Final = "hypernodes"
# Set on the HyperNodes a discoverer made, with the source's name ("label").
SOURCE_LABEL: Final = "volcano.sh/network-topology-source"
_DNS1123: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class MemberType(StrEnum):
    NODE = "Node"
    HYPER_NODE = "HyperNode"


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None  # None: none (Exists, DoesNotExist)


class LabelSelector(ApiModel):
    """metav1.LabelSelector on the wire."""

    match_labels: dict[str, str] | None = None  # None: no label must equal a value
    match_expressions: list[LabelSelectorRequirement] | None = None  # None: no expression


class ExactMatch(ApiModel):
    name: Annotated[str, Field(min_length=1, max_length=253, pattern=_DNS1123)]


class RegexMatch(ApiModel):
    pattern: Annotated[str, Field(min_length=1)]


class MemberSelector(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)",
                    "message": "Either ExactMatch or RegexMatch or LabelMatch must be specified",
                },
                {
                    "rule": "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0) + "
                    "(has(self.labelMatch) ? 1 : 0) <= 1",
                    "message": "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified",
                },
            ]
        }
    )

    exact_match: ExactMatch | None = None  # None: not selected by name
    regex_match: RegexMatch | None = None  # None: not selected by a name pattern
    label_match: LabelSelector | None = None  # None: not selected by labels


class MemberSpec(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    # has(self.selector) first: without it an absent selector is an
                    # evaluation error, not this message.
                    "rule": "self.type == 'Node' || "
                    "(has(self.selector) && has(self.selector.exactMatch))",
                    "message": "a HyperNode member is selected by exactMatch only",
                    "fieldPath": ".selector",
                }
            ]
        }
    )

    type: MemberType
    selector: MemberSelector = Field(default_factory=MemberSelector)


class HyperNodeSpec(ApiModel):
    tier: NonNegInt32 = 0
    tier_name: Annotated[str, Field(max_length=253)] | None = None  # None: the tier has no name
    members: Annotated[list[MemberSpec], Field(min_length=1)] | None = None  # None: no members


class HyperNodeStatus(ApiModel):
    conditions: list[Condition] | None = None
    node_count: NonNegInt32 | None = None  # None: not counted yet


class HyperNode(ApiModel):
    """A Volcano HyperNode (`hn`): one tier of the network, the unit a gang may be kept in."""

    api_version: Literal["topology.volcano.sh/v1alpha1"] = "topology.volcano.sh/v1alpha1"
    kind: Literal["HyperNode"] = "HyperNode"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: HyperNodeSpec = Field(default_factory=HyperNodeSpec)
    status: HyperNodeStatus | None = None  # None: not counted yet


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


def _by_labels(selector: LabelSelector, nodes: Mapping[str, Mapping[str, str]]) -> set[str]:
    wanted = selector.match_labels or {}
    expressions = selector.match_expressions or []
    if not wanted and not expressions:
        return set()  # an empty selector selects no node here, not every node
    if not all(_valid(r) for r in expressions):
        return set()
    return {
        name
        for name, labels in nodes.items()
        if all(labels.get(k) == v for k, v in wanted.items())
        and all(_holds(r, labels) for r in expressions)
    }


def selected(selector: MemberSelector, nodes: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The names one member selects among `nodes` (labels by node name), as Volcano's
    GetMembers: an exact match names one member (a node or a child HyperNode, whether or not
    it exists), a regex (searched, as Go's MatchString) or a label selector picks nodes. A
    pattern that does not compile or a selector that is not valid selects nothing."""
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
        names |= {n for n in nodes if pattern.search(n)}
    if selector.label_match is not None:
        names |= _by_labels(selector.label_match, nodes)
    return names
