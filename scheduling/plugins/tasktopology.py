"""Volcano's task-topology plugin: a job's roles placed together or apart, through buckets.

A job whose PodGroup carries a valid task topology (`api.taskaffinity`) and has pending tasks
gets `JobBuckets` once per session, before any of its tasks is placed (Volcano builds them at
session open; here allocate builds them as it starts, which is the same moment for the tasks it
places). Every task whose role some affinity or anti-affinity group names goes into a bucket,
a set of tasks meant for one node; the others stay out (`ConstructBucket`):

- tasks already on a node first, by node name: those on one node make one bucket;
- then the pending ones, the roles first in the task-order annotation first, then by the
  strongest kind of topology their role has (self anti-affinity, inter-role affinity, self
  affinity, inter-role anti-affinity), then by name. Each joins the bucket its role likes best:
  +1 per task there of a role it has affinity with, -1 per task of a role it must avoid; ties
  go to the bucket asking least (millicores + MiB + extended milli-units); when the best is
  below zero (or there is no bucket yet), a new bucket.

What the session then asks of them:

- `order`, the plugin's TaskOrder key: tasks in buckets before the others, bigger buckets (more
  pending tasks) first, then older buckets, and within a bucket the task-order and topology rank.
- `scores`, its NodeOrder: on each node, the bucket's tasks already there, less the tasks of
  roles the task must avoid there, plus the bucket's pending tasks, less one for each other
  pending task that would not fit the node with the rest (`calcBucketScore`); times the weight,
  times 100, divided by the largest bucket's size; 0 on a node the task cannot fit at all.

Where it differs from Volcano: the counts are read from the session's tasks each time rather
than kept by an allocation event handler, so a placement a discarded statement undid counts no
more (Volcano keeps it), and a job's pods already running on a node count against anti-affinity
there (Volcano counts only the pods placed in the same session). Ties are broken by name where
Volcano's map order is random.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from scheduling.api import taskaffinity
from scheduling.api.snapshot import (
    COMPLETED,
    JobInfo,
    NodeInfo,
    NodeName,
    PodKey,
    TaskInfo,
    TaskStatus,
)
from scheduling.api.vectors import Number, Resources, total
from scheduling.plugins.scoring import ScoringConfig

MAX_NODE_SCORE: Final = 100  # kube-scheduler's MaxNodeScore
_MIB: Final = 1024 * 1024
# The kinds of topology a role can have, by how strongly they order it (affinityPriority).
SELF_ANTI_AFFINITY: Final = 4
INTER_AFFINITY: Final = 3
SELF_AFFINITY: Final = 2
INTER_ANTI_AFFINITY: Final = 1

TaskOrder = tuple[int, int, int, int, int]
OUT_OF_BUCKET: Final[TaskOrder] = (1, 0, 0, 0, 0)


@dataclass(frozen=True)
class Relations:
    """Which roles like and avoid which (JobManager's matrices), and each role's rank."""

    affinity: Mapping[str, frozenset[str]]  # role -> roles (itself for self affinity)
    anti_affinity: Mapping[str, frozenset[str]]  # the same, apart
    kind: Mapping[str, int]  # role -> its strongest kind of topology; absent: no bucket
    order: Mapping[str, int]  # role -> its place from the end of the task order; absent: 0

    @classmethod
    def of(cls, topology: taskaffinity.TaskTopology) -> Relations:
        kind: dict[str, int] = {}

        def pairs(groups: taskaffinity.Groups, alone: int, among: int) -> dict[str, set[str]]:
            related: dict[str, set[str]] = {}
            for group in groups:
                for role in group:
                    kind[role] = max(kind.get(role, 0), alone if len(group) == 1 else among)
                    others = set(group) if len(group) == 1 else set(group) - {role}
                    related.setdefault(role, set()).update(others)
            return related

        liked = pairs(topology.affinity, SELF_AFFINITY, INTER_AFFINITY)
        avoided = pairs(topology.anti_affinity, SELF_ANTI_AFFINITY, INTER_ANTI_AFFINITY)
        size = len(topology.task_order)
        return cls(
            affinity={r: frozenset(s) for r, s in liked.items()},
            anti_affinity={r: frozenset(s) for r, s in avoided.items()},
            kind=kind,
            order={role: size - i for i, role in enumerate(topology.task_order)},
        )

    def rank(self, role: str) -> tuple[int, int]:
        """Higher first: the task order, then the strongest kind (taskAffinityOrder)."""
        return self.order.get(role, 0), self.kind.get(role, 0)

    def affinity_with(self, role: str, present: Mapping[str, int], only_anti: bool) -> int:
        """+1 per task of a liked role in `present`, -1 per avoided (checkTaskSetAffinity)."""
        if not role:
            return 0
        liked = frozenset() if only_anti else self.affinity.get(role, frozenset())
        avoided = self.anti_affinity.get(role, frozenset())
        return sum(
            count * ((other in liked) - (other in avoided)) for other, count in present.items()
        )


def _request_score(request: Resources) -> Fraction:
    """A bucket's size for balancing: 1 millicore, 1 MiB and 1 milli-unit weigh the same."""
    return request.milli_cpu + Fraction(request.memory, _MIB) + sum(request.scalars.values())


@dataclass
class Bucket:
    """Tasks meant for one node, as they were when the buckets were made."""

    index: int
    roles: Counter[str] = field(default_factory=Counter)  # every task put in, by role
    size: int = 0
    request_score: Fraction = Fraction(0)  # of its pending tasks

    def add(self, task: TaskInfo) -> None:
        self.roles[task.role] += 1
        self.size += 1
        if task.node_name is None:
            self.request_score += _request_score(task.request)


@dataclass(frozen=True)
class JobBuckets:
    """One job's buckets for a session: where each task went, and the session's questions."""

    relations: Relations
    bucket_of: Mapping[PodKey, int]  # tasks outside every bucket are absent
    pending: Mapping[int, int]  # per bucket, its pending tasks when made (the order's size)
    largest: int  # the biggest bucket's size (bucketMaxSize), which scales the scores

    def order(self, task: TaskInfo) -> TaskOrder:
        """The TaskOrder key: in a bucket first, bigger and older buckets first, then rank."""
        index = self.bucket_of.get(task.key)
        if index is None:
            return OUT_OF_BUCKET
        first, kind = self.relations.rank(task.role)
        return (0, -self.pending[index], index, -first, -kind)

    def scores(
        self,
        task: TaskInfo,
        nodes: Sequence[NodeInfo],
        job_tasks: Iterable[TaskInfo],
        weight: int,
    ) -> dict[NodeName, Number]:
        """The NodeOrder score of each node for `task` (absent: 0), `job_tasks` as they are now."""
        index = self.bucket_of.get(task.key)
        if index is None or not weight:
            return {}
        current = list(job_tasks)
        members = [t for t in current if self.bucket_of.get(t.key) == index]
        on_node = Counter(t.node_name for t in members if t.node_name is not None)
        waiting = sorted((t for t in members if t.node_name is None), key=lambda t: t.key)
        wanted = total(t.request for t in waiting)
        roles_on: dict[NodeName, Counter[str]] = {}
        for t in current:
            if t.node_name is not None and t.role and t.status not in COMPLETED:
                roles_on.setdefault(t.node_name, Counter())[t.role] += 1
        scale = Fraction(weight * MAX_NODE_SCORE, self.largest)
        out: dict[NodeName, Number] = {}
        for node in nodes:
            room = node.idle.add(node.releasing)
            if task.request.insufficient(room):
                continue
            score = on_node[node.name]
            present = roles_on.get(node.name)
            if present:
                score += min(0, self.relations.affinity_with(task.role, present, only_anti=True))
            score += len(waiting)
            if not wanted.less_equal(room):
                remains = wanted
                for other in waiting:
                    if other.key == task.key:
                        continue
                    remains, score = remains.sub(other.request), score - 1
                    if remains.less_equal(room):
                        break
            out[node.name] = score * scale
        return out

    def add_scores(
        self,
        task: TaskInfo,
        nodes: Sequence[NodeInfo],
        job_tasks: Iterable[TaskInfo],
        config: ScoringConfig,
        others: Mapping[NodeName, Number] | None,  # None: no other extra scores
    ) -> Mapping[NodeName, Number] | None:
        """`scores` with the configuration's weight, added to the other extra node scores
        allocate has for `task`."""
        mine = self.scores(task, nodes, job_tasks, config.task_topology)
        if not mine:
            return others
        base = others or {}
        return {n.name: base.get(n.name, 0) + mine.get(n.name, 0) for n in nodes}


def _construction_order(relations: Relations, task: TaskInfo) -> tuple[int, str, int, int, str]:
    """Placed tasks first by node name, then pending ones by rank, highest first, then name."""
    if task.node_name is not None:
        return (0, task.node_name, 0, 0, task.key)
    first, kind = relations.rank(task.role)
    return (1, "", -first, -kind, task.key)


def build(job: JobInfo, tasks: Sequence[TaskInfo]) -> JobBuckets | None:
    """The job's buckets (ConstructBucket); None: the plugin leaves the job alone (no task
    topology, no pending task, or a topology naming a task the job lacks: Volcano logs it)."""
    topology = job.task_topology
    if topology is None or not any(t.status is TaskStatus.PENDING for t in tasks):
        return None
    if taskaffinity.problems(topology, {t.role for t in tasks if t.role}):
        return None
    relations = Relations.of(topology)
    inside = [t for t in tasks if t.role and t.role in relations.kind]
    buckets: list[Bucket] = []
    by_node: dict[NodeName, Bucket] = {}
    bucket_of: dict[PodKey, int] = {}
    for task in sorted(inside, key=lambda t: _construction_order(relations, t)):
        chosen: Bucket | None = None
        best: int | None = 0  # the chosen bucket's liking; None: none looked at yet
        if task.node_name is not None:
            chosen = by_node.get(task.node_name)
        else:
            best = None
            for bucket in buckets:
                liking = relations.affinity_with(task.role, bucket.roles, only_anti=False)
                if best is None or liking > best:
                    best, chosen = liking, bucket
                elif liking == best and chosen and bucket.request_score < chosen.request_score:
                    chosen = bucket
        if chosen is None or (best is not None and best < 0):
            chosen = Bucket(index=len(buckets))
            buckets.append(chosen)
            if task.node_name is not None:
                by_node[task.node_name] = chosen
        chosen.add(task)
        bucket_of[task.key] = chosen.index
    pending = Counter(bucket_of[t.key] for t in inside if t.node_name is None)
    return JobBuckets(
        relations=relations,
        bucket_of=bucket_of,
        pending={b.index: pending[b.index] for b in buckets},
        largest=max((b.size for b in buckets), default=1),
    )
