"""The pod and node fields the predicates read: taints, tolerations, node selector terms.

Parsed straight from the Kubernetes wire form (camelCase, unknown fields ignored, as for any
object read from the cluster) so the snapshot builder does no field-by-field copying, and kept
frozen so a snapshot can be shared by every step of a session. Matching a node selector against
a node's name and labels is here too (kube's nodeaffinity helpers, which Volcano's api uses):
the predicates plugin and the cache's volume binder (a PV's node affinity) both need it; the
predicates themselves live in `scheduling.plugins.predicates`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
_NAME_FIELD: Final = "metadata.name"


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


def _int(text: str) -> int | None:
    """The label or value as an integer for Gt/Lt; None: not one, so the term fails."""
    try:
        return int(text)
    except ValueError:
        return None


def matches(requirement: NodeSelectorRequirement, values: Mapping[str, str]) -> bool:
    """One matchExpressions entry against node labels (or the node's fields)."""
    op, key, wanted = requirement.operator, requirement.key, requirement.values
    present = key in values
    if op == "In":
        return present and values[key] in wanted
    if op == "NotIn":
        return not present or values[key] not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(wanted) == 1:
        have, bound = _int(values[key]), _int(wanted[0])
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_holds(term: NodeSelectorTerm, name: str, node_labels: Mapping[str, str]) -> bool:
    """All expressions and fields of the term against a node's name and labels; an empty term
    matches no node."""
    if not term.match_expressions and not term.match_fields:
        return False
    fields = {_NAME_FIELD: name}
    return all(matches(r, node_labels) for r in term.match_expressions) and all(
        r.key == _NAME_FIELD and r.operator in ("In", "NotIn") and matches(r, fields)
        for r in term.match_fields
    )


def selector_matches(selector: NodeSelector, name: str, node_labels: Mapping[str, str]) -> bool:
    """Any one term of a required node selector (a pod's, or a PV's node affinity)."""
    return any(term_holds(t, name, node_labels) for t in selector.node_selector_terms)
