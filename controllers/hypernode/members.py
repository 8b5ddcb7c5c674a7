"""A HyperNode's members resolved to names (`models.topology.selected`, as the scheduler
resolves them), and its `status.nodeCount`: the distinct names, so a child HyperNode counts
once however many nodes it holds, as Volcano's HyperNode controller counts.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from models.topology import HyperNode, MemberSelector, selected


class NodeLabels(BaseModel):
    """What discovery and counting read of a node: its name and labels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    labels: dict[str, str] = Field(default_factory=dict)


def resolve(selector: MemberSelector, nodes: Sequence[NodeLabels]) -> set[str]:
    """The names one member selects."""
    return selected(selector, {n.name: n.labels for n in nodes})


def node_count(hyper_node: HyperNode, nodes: Sequence[NodeLabels]) -> int:
    """Volcano's actualNodeCnt: the distinct names the members resolve to."""
    names: set[str] = set()
    labels = {n.name: n.labels for n in nodes}
    for member in hyper_node.spec.members or []:
        names |= selected(member.selector, labels)
    return len(names)
