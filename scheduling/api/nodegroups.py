"""Node groups: what Volcano's nodegroup plugin reads of a queue's `spec.affinity`.

A node belongs to the group its `volcano.sh/nodegroup-name` label names; a queue lists the
groups its pods must run in, prefer, should avoid and must avoid. The lists are kept on
`QueueInfo` at snapshot time; the session, which knows whether the plugin runs and with which
arguments, hands each task its queue's `NodeGroupRule`, because predicates and scores see only a
task and a node (`scheduling.plugins.nodegroup` decides with it).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from functools import cached_property
from typing import Final

from pydantic import BaseModel, ConfigDict

from models.scheduling import NodeGroupAffinity, QueueAffinity

NODE_GROUP_LABEL: Final = "volcano.sh/nodegroup-name"  # Volcano's NodeGroupNameKey


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class QueueGroups(_Frozen):
    """The four lists of a queue's `spec.affinity`, as group names."""

    required: frozenset[str] = frozenset()  # nodeGroupAffinity required
    # nodeGroupAffinity preferred, in list order: enablePreferredOrder scores earlier ones higher.
    preferred: tuple[str, ...] = ()
    anti_required: frozenset[str] = frozenset()  # nodeGroupAntiAffinity required
    anti_preferred: frozenset[str] = frozenset()  # nodeGroupAntiAffinity preferred

    @property
    def unset(self) -> bool:
        """No list names a group: the plugin treats the queue as having no affinity."""
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    @cached_property
    def positions(self) -> dict[str, int]:
        """Each preferred group's index; a repeated one keeps its last, as Volcano's map does."""
        return {group: i for i, group in enumerate(self.preferred)}


def _lists(terms: NodeGroupAffinity | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, preferred) of one side of the affinity."""
    if terms is None:
        return (), ()
    return (
        tuple(terms.required_during_scheduling_ignored_during_execution or ()),
        tuple(terms.preferred_during_scheduling_ignored_during_execution or ()),
    )


def queue_groups(affinity: QueueAffinity | None) -> QueueGroups | None:
    """None when the queue has no `spec.affinity` (a child may then inherit its ancestor's);
    an empty `affinity: {}` is kept, as Volcano keeps it, and stops that inheritance."""
    if affinity is None:
        return None
    required, preferred = _lists(affinity.node_group_affinity)
    anti_required, anti_preferred = _lists(affinity.node_group_anti_affinity)
    return QueueGroups(
        required=frozenset(required),
        preferred=preferred,
        anti_required=frozenset(anti_required),
        anti_preferred=frozenset(anti_preferred),
    )


class NodeGroupConfig(_Frozen):
    """The nodegroup plugin's entry in the scheduler configuration."""

    strict: bool = True  # `strict`: a queue without affinity may not use unlabelled nodes either
    preferred_order: bool = False  # `enablePreferredOrder`: preferred groups scored by position
    hierarchy: bool = False  # `enableHierarchy`: a queue without affinity takes its ancestor's
    predicate: bool = True  # `enablePredicate`
    node_order: bool = True  # `enableNodeOrder`


class NodeGroupRule(_Frozen):
    """What the nodegroup plugin asks of one task's nodes: its queue's groups (None: neither
    the queue nor, with hierarchy, an ancestor sets `spec.affinity`) and the plugin's settings."""

    groups: QueueGroups | None = None
    config: NodeGroupConfig = NodeGroupConfig()
