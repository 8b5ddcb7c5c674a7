"""Hierarchical drf: Volcano's drf plugin with `enableHierarchy: true` (docs/design/hdrf.md).

Queues hang in a tree by their `volcano.sh/hierarchy` path (`root/eng/dev`), each level with
its `volcano.sh/hierarchy-weights` weight (`models.hierarchy`); every job is a leaf under its
queue's node, a queue without the annotation puts its jobs right under `root`. Written from
drf.go at Volcano's HEAD (`buildHierarchy`, `updateHierarchicalShare`, `compareQueues` and the
reclaim function), with its rules kept:

- A job's leaf holds what the job is allocated and asks for in all (`TotalRequest`, every
  task). It is saturated when, on some resource it holds, it holds all it asks for, or it asks
  for a resource the cluster has none left of (no longer "demanding"). A job holding nothing
  is never saturated.
- An inner node sums its children bottom up: the non-saturated children that hold something
  are scaled so that their dominant share is the smallest among them (at most 1), saturated
  ones count as they are, empty ones not at all. Its share is the sum's dominant share, and it
  is saturated when every child is. A node's weight is its level's weight, raised to 1 when
  below 1; the node is built by the first job (by key) whose queue passes through it, so
  queues that disagree on a level's weight get that job's (Volcano: whichever job its map
  yields first).
- Two queues compare level by level down their paths from root: a saturated node comes after
  a demanding one, then the lower share/weight comes first; equal all the way down to the
  shorter path is a tie, left to the next queue order (`HdrfRank`).
- Reclaim: a candidate may go when, with the reclaimer's task placed and the candidate gone,
  the reclaimer's queue would come strictly before the candidate's. Each candidate is judged
  on its own against the same books.

The tree is rebuilt from the session's live job books whenever they moved (`Hdrf.moved`);
Volcano updates it on its allocate and deallocate events, which is the same tree.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import total_ordering

from models import hierarchy
from models.keys import JobKey, QueueName
from scheduling.api.snapshot import QueueInfo, Snapshot, TaskInfo
from scheduling.api.vectors import EMPTY, EPSILON, Resources, dominant_share, total

# One level of a queue's path: the node is saturated, and its share divided by its weight.
Level = tuple[bool, Fraction]


@dataclass
class _Node:
    weight: Fraction = Fraction(1)
    allocated: Resources = EMPTY
    request: Resources = EMPTY  # a job's total request (leaves)
    share: Fraction = Fraction(0)
    saturated: bool = False
    children: dict[str, _Node] = field(default_factory=dict)  # inner nodes by path name
    jobs: list[_Node] = field(default_factory=list)  # the jobs right under an inner node
    leaf: bool = False  # a job's leaf


@dataclass(frozen=True)
class JobBook:
    """One job as the tree sees it."""

    queue: QueueName
    allocated: Resources
    request: Resources


def _held(resources: Resources) -> set[str]:
    """Volcano's `ResourceNames`: the dimensions holding at least its minResource."""
    return {name for name, value in resources.dimensions() if value >= EPSILON}


def _saturated(allocated: Resources, request: Resources, demanding: set[str]) -> bool:
    """drf.go's resourceSaturated, over the resources the job holds."""
    for name in _held(allocated):
        held, asked = allocated.get(name), request.get(name)
        if held != 0 and asked != 0 and held >= asked:
            return True
        if name not in demanding and asked != 0:
            return True
    return False


def _level_weight(weights: Sequence[str], level: int) -> Fraction:
    """A level's weight, raised to 1 as Volcano does; 1 where it is missing or no number
    (admission refuses both; Volcano would fail on the first)."""
    parsed = hierarchy.weight(weights[level]) if level < len(weights) else None
    return max(parsed or Fraction(0), Fraction(1))


def _update(node: _Node, demanding: set[str], cluster: Resources) -> None:
    """updateHierarchicalShare: shares and saturation bottom up."""
    if node.leaf:
        node.saturated = _saturated(node.allocated, node.request, demanding)
        node.share = dominant_share(node.allocated, cluster)
        return
    kids = [*node.children.values(), *node.jobs]
    for kid in kids:
        _update(kid, demanding, cluster)
    smallest = min(
        (Fraction(1), *(kid.share for kid in kids if kid.share != 0 and not kid.saturated))
    )
    summed = EMPTY
    for kid in kids:
        if kid.share != 0:
            scaled = (
                kid.allocated if kid.saturated else kid.allocated.multiply(smallest / kid.share)
            )
            summed = summed.add(scaled)
    node.allocated = summed
    node.share = dominant_share(summed, cluster)
    node.saturated = all(kid.saturated for kid in kids)


@total_ordering
class HdrfRank:
    """Where a queue comes by hierarchical share: its path's levels from root, compared as
    `compareQueues` does (a tie when one path ends first); then the next queue order."""

    __slots__ = ("levels",)

    def __init__(self, levels: tuple[Level, ...]) -> None:
        self.levels = levels

    def _cmp(self, other: HdrfRank) -> int:
        # Down to the shorter path only: `strict=False` is Volcano's min(len(l), len(r)).
        for (mine_full, mine), (theirs_full, theirs) in zip(
            self.levels, other.levels, strict=False
        ):
            if mine_full != theirs_full:
                return 1 if mine_full else -1
            if mine != theirs:
                return -1 if mine < theirs else 1
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HdrfRank) and self._cmp(other) == 0

    def __lt__(self, other: HdrfRank) -> bool:
        return self._cmp(other) < 0

    def __repr__(self) -> str:
        return f"HdrfRank({self.levels!r})"

    __hash__ = None  # type: ignore[assignment]


class Tree:
    """The hierarchy over a set of job books."""

    def __init__(
        self,
        cluster: Resources,
        queues: Mapping[QueueName, QueueInfo],
        books: Mapping[JobKey, JobBook],
    ) -> None:
        self._queues = queues
        self.root = _Node()
        allocated = total(b.allocated for b in books.values())
        demanding = {
            name
            for name, value in cluster.dimensions()
            if value >= EPSILON and allocated.get(name) < value
        }
        for key in sorted(books):
            self._add(books[key])
        _update(self.root, demanding, cluster)

    def _path(self, queue: QueueName) -> tuple[list[str], list[str]]:
        info = self._queues.get(queue)
        if info is None:
            return [""], []
        return info.hierarchy.split("/"), info.hierarchy_weights.split("/")

    def _add(self, book: JobBook) -> None:
        """buildHierarchy: the queue's nodes below root as needed, then the job's leaf."""
        names, weights = self._path(book.queue)
        node = self.root
        for level, name in enumerate(names[1:], start=1):
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _Node(weight=_level_weight(weights, level))
            node = child
        node.jobs.append(_Node(allocated=book.allocated, request=book.request, leaf=True))

    def rank(self, queue: QueueName) -> HdrfRank:
        """The queue's levels from root; a node no job built counts as empty and demanding."""
        names, _ = self._path(queue)
        node: _Node | None = self.root
        levels = [_level(self.root)]
        for name in names[1:]:
            node = node.children.get(name) if node is not None else None
            levels.append(_level(node))
        return HdrfRank(tuple(levels))


def _level(node: _Node | None) -> Level:
    return (False, Fraction(0)) if node is None else (node.saturated, node.share / node.weight)


class Hdrf:
    """The session's tree over its live job books, built again only after they moved."""

    def __init__(self, snapshot: Snapshot, allocated: Mapping[JobKey, Resources]) -> None:
        self._cluster = snapshot.total_resource
        self._queues = {q.name: q for q in snapshot.queues}
        self._job_queue = {j.key: j.queue for j in snapshot.jobs}
        self._requests = {
            j.key: total(t.request for t in snapshot.tasks_of(j.key)) for j in snapshot.jobs
        }
        self._allocated = allocated  # the session's job books, which move as it decides
        self._tree: Tree | None = None  # None: the books moved since it was built

    def moved(self) -> None:
        self._tree = None

    def _build(self, allocated: Mapping[JobKey, Resources]) -> Tree:
        books = {
            key: JobBook(
                queue=queue, allocated=allocated.get(key, EMPTY), request=self._requests[key]
            )
            for key, queue in self._job_queue.items()
        }
        return Tree(self._cluster, self._queues, books)

    def rank(self, queue: QueueName) -> HdrfRank:
        if self._tree is None:
            self._tree = self._build(self._allocated)
        return self._tree.rank(queue)

    def yields(self, reclaimer: TaskInfo, victims: Iterable[TaskInfo]) -> bool:
        """With the reclaimer's task placed and `victims` (one job's) gone, the reclaimer's
        queue comes strictly before the victims' by hierarchical share."""
        gone = list(victims)
        if not gone or reclaimer.job not in self._job_queue:
            return False
        held = dict(self._allocated)
        held[reclaimer.job] = held.get(reclaimer.job, EMPTY).add(reclaimer.request)
        for task in gone:
            held[task.job] = held.get(task.job, EMPTY).sub(task.request)
        tree = self._build(held)
        return tree.rank(self._job_queue[reclaimer.job]) < tree.rank(self._job_queue[gone[0].job])

    def victims(self, reclaimer: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
        """drf's reclaimableFn with the hierarchy: each candidate judged on its own."""
        return [t for t in found if t.job in self._job_queue and self.yields(reclaimer, [t])]
