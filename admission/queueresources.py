"""A Queue's `guarantee`, `deserved` and `capability`, alone and in its hierarchy: the queue
webhook's resource rules.

Alone: for every resource, guarantee ≤ deserved ≤ capability (a guaranteed resource must be
deserved too). In the hierarchy, below a parent other than root: the queue's capability does
not exceed the nearest ancestor's that names the resource; the children's guarantees and
deserved shares, this queue's included, sum to no more than the parent's own, resource by
resource (a parent that names none has none to give); and a queue with children has a
capability no smaller than any of its descendants'. As with Volcano's webhook, a sum is
checked against the parent's own figures only, and root is never checked.

Pure: quantities come parsed (`models.quantity`) in the `Shares` of each queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from models.quantity import format_quantity, parse_quantity
from models.scheduling import ROOT_QUEUE

Amounts = Mapping[str, Fraction]
GUARANTEE: Final = "spec.guarantee.resource"
DESERVED: Final = "spec.deserved"
CAPABILITY: Final = "spec.capability"


@dataclass(frozen=True)
class Shares:
    """The three resource lists of one queue; a resource a list does not name is absent."""

    guarantee: Amounts = field(default_factory=dict)
    deserved: Amounts = field(default_factory=dict)
    capability: Amounts = field(default_factory=dict)


def amounts(listed: object) -> Amounts:
    """A resource list as stored; values the schema would refuse are left out."""
    if not isinstance(listed, Mapping):
        return {}
    out: dict[str, Fraction] = {}
    for name, value in listed.items():
        if isinstance(name, str) and isinstance(value, int | float | str):
            try:
                out[name] = parse_quantity(value)
            except ValueError:
                continue
    return out


def shares(spec: Mapping[str, object]) -> Shares:
    guarantee = spec.get("guarantee")
    return Shares(
        guarantee=amounts(guarantee.get("resource") if isinstance(guarantee, Mapping) else None),
        deserved=amounts(spec.get("deserved")),
        capability=amounts(spec.get("capability")),
    )


_BINARY: Final = (
    ("Ei", 1024**6),
    ("Pi", 1024**5),
    ("Ti", 1024**4),
    ("Gi", 1024**3),
    ("Mi", 1024**2),
    ("Ki", 1024),
)


_BYTES: Final = ("memory", "ephemeral-storage", "storage")


def _q(value: Fraction, resource: str) -> str:
    """A quantity as people write it: memory 2Gi rather than 2147483648."""
    if resource in _BYTES or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if value >= size and (value / size).denominator == 1:
                return f"{value // size}{suffix}"
    return format_quantity(value)


def own_problems(own: Shares) -> list[str]:
    """guarantee ≤ deserved ≤ capability, resource by resource."""
    problems = []
    for name, guaranteed in sorted(own.guarantee.items()):
        deserved = own.deserved.get(name)
        if deserved is None:
            problems.append(
                f"{DESERVED}.{name}: Required value: deserved[{name}] must be >= "
                f"guarantee[{name}]={_q(guaranteed, name)}"
            )
        elif deserved < guaranteed:
            problems.append(
                f'{DESERVED}.{name}: Invalid value: "{_q(deserved, name)}": '
                f"deserved[{name}] must be >= guarantee[{name}]={_q(guaranteed, name)}"
            )
    for name, deserved in sorted(own.deserved.items()):
        capability = own.capability.get(name)
        if capability is not None and deserved > capability:
            problems.append(
                f'{DESERVED}.{name}: Invalid value: "{_q(deserved, name)}": '
                f"deserved[{name}] must be <= capability[{name}]={_q(capability, name)}"
            )
    return problems


def stated_problems(own: Shares) -> list[str]:
    """guarantee ≤ deserved ≤ capability for each resource both lists of a pair name: a
    NamespaceQueue's rule (Volcano's NamespaceQueue design compares only what is specified,
    where its Queue webhook also wants a guaranteed resource deserved). Guarantee is held to
    capability directly only where deserved does not name the resource."""
    lists = {GUARANTEE: own.guarantee, DESERVED: own.deserved, CAPABILITY: own.capability}
    pairs = ((GUARANTEE, DESERVED), (DESERVED, CAPABILITY), (GUARANTEE, CAPABILITY))
    problems = []
    for low, high in pairs:
        for name, value in sorted(lists[low].items()):
            limit = lists[high].get(name)
            implied = (low, high) == (GUARANTEE, CAPABILITY) and name in own.deserved
            if limit is not None and value > limit and not implied:
                problems.append(
                    f'{low}.{name}: Invalid value: "{_q(value, name)}": {_word(low)}[{name}] '
                    f"must be <= {_word(high)}[{name}]={_q(limit, name)}"
                )
    return problems


def _word(path: str) -> str:
    """`guarantee`, `deserved` or `capability`: how a message names the list at `path`."""
    return path.split(".")[1]


@dataclass(frozen=True)
class Member:
    """One queue of the hierarchy, as the webhook's lookup holds it."""

    name: str
    parent: str  # ROOT_QUEUE for a queue without spec.parent
    shares: Shares


def hierarchy_problems(queue: Member, others: Sequence[Member]) -> list[str]:
    """The queue against its ancestors, its siblings and its descendants (`others` holds every
    stored queue; a stored copy of `queue` itself is replaced by the new one)."""
    if queue.name == ROOT_QUEUE:
        return []
    tree = {m.name: m for m in others if m.name != queue.name}
    tree[queue.name] = queue
    problems = [*_against_ancestors(queue, tree)]
    if queue.parent != ROOT_QUEUE and queue.parent in tree:
        problems += _sums(tree[queue.parent], _children(queue.parent, tree))
    children = _children(queue.name, tree)
    if children:
        problems += _above_descendants(queue, children, tree)
        problems += _sums(queue, children)
    return problems


def _children(name: str, tree: Mapping[str, Member]) -> list[Member]:
    return sorted((m for m in tree.values() if m.parent == name), key=lambda m: m.name)


def _against_ancestors(queue: Member, tree: Mapping[str, Member]) -> list[str]:
    problems = []
    for name, value in sorted(queue.shares.capability.items()):
        ancestor = _nearest_capability(queue, name, tree)
        if ancestor is not None and value > ancestor[1]:
            problems.append(
                f'{CAPABILITY}.{name}: Invalid value: "{_q(value, name)}": queue "{queue.name}" '
                f'capability[{name}] exceeds its ancestor "{ancestor[0]}"\'s capability '
                f"{_q(ancestor[1], name)}"
            )
    return problems


def _nearest_capability(
    queue: Member, resource: str, tree: Mapping[str, Member]
) -> tuple[str, Fraction] | None:
    seen = {queue.name}
    current = queue.parent
    while current != ROOT_QUEUE and current in tree and current not in seen:
        seen.add(current)
        value = tree[current].shares.capability.get(resource)
        if value:
            return current, value
        current = tree[current].parent
    return None


def _subtree_capability(
    member: Member, resource: str, tree: Mapping[str, Member], seen: frozenset[str] = frozenset()
) -> Fraction:
    """The member's capability for `resource`, else the largest in its subtree (0: none)."""
    own = member.shares.capability.get(resource)
    if own:
        return own
    seen = seen | {member.name}
    below = [c for c in _children(member.name, tree) if c.name not in seen]
    return max((_subtree_capability(c, resource, tree, seen) for c in below), default=Fraction(0))


def _above_descendants(
    parent: Member, children: Sequence[Member], tree: Mapping[str, Member]
) -> list[str]:
    problems = []
    for name, value in sorted(parent.shares.capability.items()):
        largest = max(_subtree_capability(c, name, tree) for c in children)
        if value < largest:
            problems.append(
                f'{CAPABILITY}.{name}: Invalid value: "{_q(value, name)}": queue "{parent.name}" '
                f"capability[{name}] is smaller than its descendants' largest capability "
                f"{_q(largest, name)}"
            )
    return problems


def _total(listed: Sequence[Amounts]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for one in listed:
        for name, value in one.items():
            total[name] = total.get(name, Fraction(0)) + value
    return total


def _over(limit: Amounts, total: Amounts) -> list[str]:
    """Resources whose total exceeds the limit (an unnamed limit is 0)."""
    return sorted(n for n, v in total.items() if v > limit.get(n, Fraction(0)))


def _listed(of: Shares, what: str) -> Amounts:
    return of.guarantee if what == "guarantee" else of.deserved


def _sums(parent: Member, children: Sequence[Member]) -> list[str]:
    problems = []
    for path, what in ((GUARANTEE, "guarantee"), (DESERVED, "deserved")):
        total = _total([_listed(c.shares, what) for c in children])
        limit = _listed(parent.shares, what)
        for name in _over(limit, total):
            problems.append(
                f'{path}.{name}: the children of queue "{parent.name}" '
                f"({', '.join(c.name for c in children)}) have {what} {_q(total[name], name)} in "
                f"all, more than its own {what} {_q(limit.get(name, Fraction(0)), name)}"
            )
    return problems
