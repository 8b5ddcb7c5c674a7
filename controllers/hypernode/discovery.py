"""Label-based HyperNode discovery as a plan: `plan(config, nodes, existing, random) -> Plan`.

Volcano's label discoverer and the HyperNode controller's reconcile and status sync, in one
pure pass:
- per topology type, a node's labels from tier 1 up name its HyperNodes: tier 1 holds the node
  (a `Node` member), each tier above holds the one below (a `HyperNode` member); a node
  without a tier's label stops there;
- one HyperNode per label key=value (shared by every type listing that key, as Volcano keys
  its cache); an existing one labelled key=value and `volcano.sh/network-topology-source=label`
  whose name starts `hypernode-<type>-tier<N>` is reused, else a new name
  `hypernode-<type>-tier<N>-<5 random>` is drawn;
- what is discovered and absent is created, what differs is updated (spec replaced, labels
  merged), and the label source's HyperNodes no longer discovered are deleted;
- every HyperNode left, whatever made it, gets `status.nodeCount` when its count changed.

Nodes and types are taken in sorted order, so the plan depends only on its inputs and on the
`random` it is given: the same seed draws the same names, which is what lets an activity retry
(or a workflow replay) reach the same plan. Label discovery not enabled plans counts only:
Volcano stops a removed source's discoverer and leaves its HyperNodes.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from controllers.hypernode.config import DiscoveryConfig, LabelDiscovery, Source, clean_type_name
from controllers.hypernode.members import NodeLabels, node_count
from models.meta import ObjectMeta
from models.topology import (
    SOURCE_LABEL,
    ExactMatch,
    HyperNode,
    HyperNodeSpec,
    MemberSelector,
    MemberSpec,
    MemberType,
)

NAME_ATTEMPTS: Final = 20  # Volcano's loopCount
SUFFIX_LENGTH: Final = 5
# k8s.io/apimachinery's rand.String alphabet: no vowels, no look-alike digits.
ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


class DiscoveryError(ValueError):
    """No unused HyperNode name after NAME_ATTEMPTS draws (Volcano gives up the same way)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Update(_Model):
    """A discovered HyperNode that exists and differs: its spec replaced, these labels set."""

    name: str
    spec: HyperNodeSpec
    labels: dict[str, str]


class NodeCount(_Model):
    name: str
    node_count: int


class Plan(_Model):
    creates: tuple[HyperNode, ...] = ()
    updates: tuple[Update, ...] = ()
    deletes: tuple[str, ...] = ()  # names
    counts: tuple[NodeCount, ...] = ()
    discovered: int = 0  # HyperNodes the label source names this round


class _Found(_Model):
    """What one HyperNode collects while the nodes are walked."""

    tier: int
    tier_name: str
    labels: dict[str, str]
    members: frozenset[str] = frozenset()


def _draw(random: _random.Random) -> str:
    return "".join(random.choice(ALPHABET) for _ in range(SUFFIX_LENGTH))


def _name(
    type_name: str,
    key: str,
    value: str,
    tier: int,
    existing: Sequence[HyperNode],
    taken: set[str],
    random: _random.Random,
) -> str:
    """Volcano's buildHyperNodeName: reuse the label source's HyperNode for key=value, else draw
    a name no HyperNode has and this round has not drawn."""
    prefix = f"hypernode-{clean_type_name(type_name)}-tier{tier}"
    wanted = {key: value, SOURCE_LABEL: Source.LABEL.value}
    for hn in sorted(existing, key=lambda h: h.metadata.name or ""):
        labels = hn.metadata.labels or {}
        name = hn.metadata.name or ""
        if all(labels.get(k) == v for k, v in wanted.items()) and name.startswith(prefix):
            return name
    for _ in range(NAME_ATTEMPTS):
        name = f"{prefix}-{_draw(random)}"
        if name not in taken:
            return name
    raise DiscoveryError(
        f"no unused HyperNode name for {key}={value} after {NAME_ATTEMPTS} attempts"
    )


def _walk(
    label: LabelDiscovery,
    nodes: Sequence[NodeLabels],
    existing: Sequence[HyperNode],
    random: _random.Random,
) -> dict[str, _Found]:
    """Volcano's generateHyperNodeInfo: HyperNode name → tier, labels and member names."""
    found: dict[str, _Found] = {}
    by_label: dict[tuple[str, str], str] = {}  # (key, value) → HyperNode name
    taken = {hn.metadata.name or "" for hn in existing}
    tiers = label.tiers()
    for node in sorted(nodes, key=lambda n: n.name):
        for type_name, keys in tiers.items():
            member = node.name
            for i, key in enumerate(keys):
                if key not in node.labels:
                    break
                value = node.labels[key]
                tier = i + 1
                name = by_label.get((key, value))
                if name is None:
                    name = _name(type_name, key, value, tier, existing, taken, random)
                    by_label[(key, value)] = name
                    taken.add(name)
                entry = found.get(name) or _Found(tier=tier, tier_name=key, labels={key: value})
                found[name] = entry.model_copy(update={"members": entry.members | {member}})
                member = name
    return found


def _hyper_node(name: str, f: _Found) -> HyperNode:
    kind = MemberType.NODE if f.tier == 1 else MemberType.HYPER_NODE
    members = [
        MemberSpec(type=kind, selector=MemberSelector(exact_match=ExactMatch(name=m)))
        for m in sorted(f.members)
    ]
    return HyperNode(
        metadata=ObjectMeta(name=name, labels={**f.labels, SOURCE_LABEL: Source.LABEL.value}),
        spec=HyperNodeSpec(tier=f.tier, tier_name=f.tier_name, members=members),
    )


def _spec(spec: HyperNodeSpec) -> tuple[object, ...]:
    """What discovery owns of a spec, comparable by value."""
    members = [
        m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in spec.members or []
    ]
    return spec.tier, spec.tier_name, members


def _differs(current: HyperNode, wanted: HyperNode) -> bool:
    labels = current.metadata.labels or {}
    missing = any(labels.get(k) != v for k, v in (wanted.metadata.labels or {}).items())
    return missing or _spec(current.spec) != _spec(wanted.spec)


def _counts(final: Sequence[HyperNode], nodes: Sequence[NodeLabels]) -> tuple[NodeCount, ...]:
    """Volcano's syncHyperNodeStatus for each HyperNode; an uncounted one reads as 0."""
    out = []
    for hn in sorted(final, key=lambda h: h.metadata.name or ""):
        count = node_count(hn, nodes)
        recorded = hn.status.node_count if hn.status is not None else None
        if count != (recorded or 0):
            out.append(NodeCount(name=hn.metadata.name or "", node_count=count))
    return tuple(out)


def plan(
    config: DiscoveryConfig,
    nodes: Sequence[NodeLabels],
    existing: Sequence[HyperNode],
    random: _random.Random,
) -> Plan:
    """One discovery round against the cluster's nodes and HyperNodes (all of them)."""
    label = config.label()
    if label is None:
        return Plan(counts=_counts(existing, nodes))
    wanted = {
        name: _hyper_node(name, f) for name, f in _walk(label, nodes, existing, random).items()
    }
    by_name = {hn.metadata.name or "": hn for hn in existing}
    ours = {
        name
        for name, hn in by_name.items()
        if (hn.metadata.labels or {}).get(SOURCE_LABEL) == Source.LABEL.value
    }
    creates = [wanted[n] for n in sorted(wanted) if n not in by_name]
    updates = [
        Update(name=n, spec=wanted[n].spec, labels=wanted[n].metadata.labels or {})
        for n in sorted(wanted)
        if n in by_name and _differs(by_name[n], wanted[n])
    ]
    deletes = sorted(ours - set(wanted))
    final: list[HyperNode] = list(creates)
    for name, hn in by_name.items():
        if name in deletes:
            continue
        final.append(hn.model_copy(update={"spec": wanted[name].spec}) if name in wanted else hn)
    return Plan(
        creates=tuple(creates),
        updates=tuple(updates),
        deletes=tuple(deletes),
        counts=_counts(final, nodes),
        discovered=len(wanted),
    )
