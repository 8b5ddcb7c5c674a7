"""The pod and node fields the predicates read: taints, tolerations, node selector terms.

Parsed straight from the Kubernetes wire form (camelCase, unknown fields ignored, as for any
object read from the cluster) so the snapshot builder does no field-by-field copying, and kept
frozen so a snapshot can be shared by every step of a session. The matching rules themselves
live in `scheduling.predicates`; this module only holds the data.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class _Kube(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class Taint(_Kube):
    key: str
    value: str = ""
    effect: str = TaintEffect.NO_SCHEDULE


class Toleration(_Kube):
    key: str = ""  # "": any key (only with operator Exists)
    operator: str = "Equal"  # Equal or Exists; "" reads as Equal
    value: str = ""
    effect: str = ""  # "": any effect


class NodeSelectorRequirement(_Kube):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


class NodeSelectorTerm(_Kube):
    """One term: all of its expressions and fields must match (an empty term matches nothing)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class PreferredSchedulingTerm(_Kube):
    """preferredDuringSchedulingIgnoredDuringExecution: a matching term adds its weight."""

    weight: int = 0  # 1-100 on the wire; 0 or an empty term adds nothing
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


class NodeSelector(_Kube):
    """requiredDuringSchedulingIgnoredDuringExecution: any one term must match."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = Field(default=())
