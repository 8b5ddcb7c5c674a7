"""Queue order under the capacity plugin: a queue's rank among the others, flat or in the tree.

The capacity plugin's QueueOrderFn. Flat, a queue ranks by its share of what it deserves. With
the hierarchy on, leaves come before parents and two leaves compare where their paths part:
siblings by their subtrees' shares, so a subtree that has taken more than it deserves yields to
one that has not. The framework's queue order (`framework.ordering`) puts this after a queue's
priority; under proportion, the plain share (`proportion.queue_share`) stands in its place.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import total_ordering

from models.keys import QueueName
from scheduling.api.vectors import EPSILON, Resources, share
from scheduling.plugins.capacity import ROOT, Capacity, subtree_total


def queue_share(allocated: Resources, deserved: Resources) -> Fraction:
    """Largest allocated/deserved over the dimensions it deserves; 1 for a queue deserving
    nothing, so such best-effort queues come after every queue still below its share."""
    named = [(n, v) for n, v in deserved.dimensions() if v >= EPSILON]
    if not named:
        return Fraction(1)
    return max(share(allocated.get(n), v) for n, v in named)


# A queue's place among its siblings: lower share first, then one that deserves something.
Level = tuple[Fraction, bool]


def _level(capacity: Capacity, books: Mapping[QueueName, Resources], name: QueueName) -> Level:
    attr = capacity.attrs.get(name)
    if attr is None:
        return (Fraction(1), True)
    held = subtree_total(books, attr.subtree)
    return (queue_share(held, attr.deserved), attr.deserved.is_empty())


@total_ordering
class QueueRank:
    """Where a queue comes in queue order, after its priority; equal ranks fall back to age.

    Flat: its own level. In the tree, leaves come before parents, and two leaves compare by
    the two children of their deepest common ancestor on their paths (siblings by their own
    levels), so a subtree that has taken more than it deserves yields to one that has not.
    """

    __slots__ = ("leaf", "path")

    def __init__(self, leaf: bool, path: tuple[tuple[QueueName, Level], ...]) -> None:
        self.leaf = leaf
        self.path = path  # ancestors below root, then the queue itself

    def _cmp(self, other: QueueRank) -> int:
        if self.leaf != other.leaf:
            return -1 if self.leaf else 1
        mine, theirs = self.path, other.path
        at = 0
        while at < min(len(mine), len(theirs)) - 1 and mine[at][0] == theirs[at][0]:
            at += 1
        left, right = mine[at][1], theirs[at][1]
        if not self.leaf:
            left, right = mine[-1][1], theirs[-1][1]
        return (left > right) - (left < right)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QueueRank) and self._cmp(other) == 0

    def __lt__(self, other: QueueRank) -> bool:
        return self._cmp(other) < 0

    __hash__ = None  # type: ignore[assignment]


def rank(capacity: Capacity, books: Mapping[QueueName, Resources], name: QueueName) -> QueueRank:
    """The queue's rank from the live allocation books."""
    attr = capacity.attrs.get(name)
    if attr is None or not capacity.hierarchy:
        return QueueRank(True, ((name, _level(capacity, books, name)),))
    below_root = [a for a in attr.ancestors if a != ROOT]
    path = tuple((q, _level(capacity, books, q)) for q in (*below_root, name))
    return QueueRank(attr.leaf, path)
