"""The network topology a session keeps gangs within: HyperNodes as a tree over the nodes.

Built once per session from the HyperNode objects and the nodes, as Volcano's scheduler cache
builds it: a `Node` member selects nodes by exact name, name regex or labels; a `HyperNode`
member makes that HyperNode a child; a HyperNode's nodes are its own members' and its
children's. Every HyperNode without a parent hangs under one virtual root holding every node,
a tier above the highest real one, so "anywhere in the cluster" is one more HyperNode to try.
A HyperNode claimed by two parents, or a cycle, makes the topology not ready: jobs with a
network topology then wait, as Volcano's do, instead of being placed on a broken tree.

What a job may cross is its `highestTierAllowed` (or the tier its `highestTierName` names).
Soft mode is hard mode up to the root: the job is tried in the lowest tier that holds it and
falls back, tier by tier, to the whole cluster.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import cached_property
from typing import Final

from pydantic import BaseModel, ConfigDict

from models.scheduling import NetworkTopologySpec
from models.topology import HyperNode, MemberType, selected

CLUSTER_TOP: Final = "<cluster-top-hypernode>"  # Volcano's name for the virtual root


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JobTopology(_Frozen):
    """A PodGroup's `networkTopology`."""

    hard: bool = True  # mode hard (the default) or soft
    highest_tier: int | None = None  # highestTierAllowed; None: not set
    highest_tier_name: str | None = None  # highestTierName; None: not set


class HyperNodeInfo(_Frozen):
    name: str
    tier: int
    tier_name: str = ""
    parent: str = CLUSTER_TOP
    nodes: tuple[str, ...] = ()  # every node under it, sorted


class Topology(_Frozen):
    """The session's HyperNodes (without the root) over `nodes`; `problem` "" means ready."""

    hyper_nodes: tuple[HyperNodeInfo, ...] = ()
    nodes: tuple[str, ...] = ()
    problem: str = ""

    @property
    def ready(self) -> bool:
        return not self.problem

    @cached_property
    def top_tier(self) -> int:
        """One above the highest real tier, at least 1 (Volcano's root tier)."""
        return max([1, *(h.tier + 1 for h in self.hyper_nodes)])

    @cached_property
    def by_name(self) -> dict[str, HyperNodeInfo]:
        root = HyperNodeInfo(name=CLUSTER_TOP, tier=self.top_tier, parent="", nodes=self.nodes)
        return {CLUSTER_TOP: root, **{h.name: h for h in self.hyper_nodes}}

    @cached_property
    def children(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {name: [] for name in self.by_name}
        for h in self.hyper_nodes:
            out[h.parent].append(h.name)
        return {name: tuple(sorted(kids)) for name, kids in out.items()}

    @cached_property
    def tier_names(self) -> dict[str, int]:
        """tierName -> tier, for jobs that name the highest tier they may cross."""
        return {h.tier_name: h.tier for h in self.hyper_nodes if h.tier_name}

    @cached_property
    def _node_sets(self) -> dict[str, frozenset[str]]:
        return {name: frozenset(h.nodes) for name, h in self.by_name.items()}

    @cached_property
    def tiers(self) -> tuple[int, ...]:
        """Every tier, the root's included, lowest first."""
        return tuple(sorted({h.tier for h in self.by_name.values()}))

    def holds(self, hyper_node: str, node: str) -> bool:
        return node in self._node_sets.get(hyper_node, frozenset())

    def ancestors(self, name: str) -> list[str]:
        """`name` and every HyperNode above it, up to the root."""
        chain: list[str] = []
        while name and name in self.by_name and name not in chain:
            chain.append(name)
            name = self.by_name[name].parent
        return chain

    def lca(self, first: str, second: str) -> str:
        """The lowest HyperNode above both; "" stands for none known (the other is returned)."""
        if not first:
            return second
        if not second:
            return first
        above = set(self.ancestors(first))
        return next((a for a in self.ancestors(second) if a in above), "")

    @cached_property
    def _lowest(self) -> dict[str, str]:
        lowest: dict[str, str] = {}
        for h in sorted(self.by_name.values(), key=lambda h: (h.tier, h.name)):
            for node in h.nodes:
                lowest.setdefault(node, h.name)
        return lowest

    def lowest_of(self, node: str) -> str:
        """The lowest-tier HyperNode holding `node`, the root if no other does ("": no such
        node)."""
        return self._lowest.get(node, "")

    def lowest_holding(self, nodes: Iterable[str]) -> str:
        """The lowest-tier HyperNode holding every one of `nodes`; "": no node given."""
        wanted = set(nodes)
        if not wanted:
            return ""
        holding = [h for h in self.by_name.values() if wanted <= self._node_sets[h.name]]
        return min(holding, key=lambda h: (h.tier, h.name)).name

    def tier_limit(self, job: JobTopology) -> int | None:
        """The highest tier the job may cross; None: nothing to keep it within. Soft mode may
        cross them all (it only prefers low tiers); a tier name no HyperNode has is no limit,
        as Volcano logs it and goes on."""
        if not job.hard:
            return self.top_tier
        if job.highest_tier is not None:
            return job.highest_tier
        if job.highest_tier_name is not None:
            return self.tier_names.get(job.highest_tier_name)
        return None

    def search_root(self, limit: int, allocated: str) -> str | None:
        """Where a job's search starts: the root, or for a job already holding nodes in
        `allocated`, its highest ancestor within the limit (None: it is already beyond it)."""
        if not allocated:
            return CLUSTER_TOP
        within = [a for a in self.ancestors(allocated) if self.by_name[a].tier <= limit]
        return within[-1] if within else None

    def gradients(
        self, root: str, limit: int, fits: Mapping[str, bool] | None = None
    ) -> list[list[str]]:
        """HyperNodes under `root` (itself included) within the limit, grouped by tier, lowest
        tier first and by name within one; `fits` False drops one whose room is too small
        for the job's minimum (None: none dropped, a job already placed in part)."""
        by_tier: dict[int, list[str]] = {}
        queue, seen = [root], {root}
        while queue:
            name = queue.pop(0)
            info = self.by_name[name]
            if info.tier <= limit and (fits is None or fits.get(name, True)):
                by_tier.setdefault(info.tier, []).append(name)
            for child in self.children.get(name, ()):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return [sorted(by_tier[t]) for t in sorted(by_tier)]

    def tier_score(self, tier: int) -> Fraction:
        """Volcano's (maxTier - tier) / (maxTier - minTier) over the tiers: 1 for the lowest,
        0 for the root's."""
        if self.tiers[0] == self.tiers[-1]:
            return Fraction(1)
        low, high = self.tiers[0], self.tiers[-1]
        if low <= tier <= high:
            return Fraction(high - tier, high - low)
        return Fraction(0)

    def closeness(self, node: str, allocated: str) -> Fraction:
        """How near `node` is to the job's HyperNode: 1 inside it, else the tier score of
        their lowest common HyperNode (network-topology-aware's node score)."""
        own = self.lowest_of(node)
        if not own or not allocated:
            return Fraction(0)
        if own == allocated:
            return Fraction(1)
        common = self.lca(own, allocated)
        return self.tier_score(self.by_name[common].tier) if common else Fraction(0)


def build(hyper_nodes: Iterable[HyperNode], nodes: Mapping[str, Mapping[str, str]]) -> Topology:
    """The session's tree from the HyperNodes and the nodes' labels; deleting ones left out."""
    live = {
        h.metadata.name: h
        for h in hyper_nodes
        if h.metadata.name and h.metadata.deletion_timestamp is None
    }
    parent: dict[str, str] = {}
    own: dict[str, set[str]] = {}
    problem = ""
    for name, h in sorted(live.items()):
        own[name] = set()
        for member in h.spec.members or []:
            if member.type is MemberType.NODE:
                own[name] |= selected(member.selector, nodes) & nodes.keys()
                continue
            child = member.selector.exact_match.name if member.selector.exact_match else ""
            if child not in live:
                continue  # not created yet: its nodes join once it is
            if child in parent and parent[child] != name and not problem:
                problem = (
                    f"HyperNode {child} already has a parent {parent[child]}, "
                    f"and cannot set another parent {name}"
                )
            parent.setdefault(child, name)
    for name in sorted(live):
        chain = [name]
        while (up := parent.get(chain[-1])) is not None:
            if up in chain:
                problem = problem or f"cyclic dependency detected at HyperNode {up}"
                break
            chain.append(up)
    kids: dict[str, list[str]] = {}
    for child, up in parent.items():
        kids.setdefault(up, []).append(child)

    def under(name: str, path: tuple[str, ...]) -> set[str]:
        found = set(own.get(name, set()))
        for child in kids.get(name, []):
            if child not in path:
                found |= under(child, (*path, child))
        return found

    infos = tuple(
        HyperNodeInfo(
            name=name,
            tier=h.spec.tier,
            tier_name=h.spec.tier_name or "",
            parent=parent.get(name, CLUSTER_TOP),
            nodes=tuple(sorted(under(name, (name,)))),
        )
        for name, h in sorted(live.items())
    )
    return Topology(hyper_nodes=infos, nodes=tuple(sorted(nodes)), problem=problem)


def job_topology(spec: NetworkTopologySpec | None) -> JobTopology | None:
    """A PodGroup's networkTopology; None: it has none."""
    if spec is None:
        return None
    return JobTopology(
        hard=spec.mode != "soft",
        highest_tier=spec.highest_tier_allowed,
        highest_tier_name=spec.highest_tier_name,
    )
