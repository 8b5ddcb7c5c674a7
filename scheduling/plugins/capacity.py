"""Queue quotas from each queue's own numbers (the capacity plugin), flat or as a tree.

Where proportion water-fills the cluster by weight, capacity takes each queue's `deserved`
as given (capped by what the queue could ever reach, raised to its guarantee; a queue that
names none deserves nothing and is served last). A queue may then grow past its deserved
share up to its real capability (its capability, within the cluster less the other queues'
guarantees) while nobody else needs the room, and reclaim takes it back down to deserved once
somebody does. A queue's guarantee is never reclaimed.

With the hierarchy on, queues form a tree under `root` by their parent: a parent's capability
bounds everything its subtree holds, its guarantee is shared out among its children, a child
inherits whatever capability it leaves unset and its real capability is carved out of its
parent's. `root` itself is unbounded unless it sets a capability: the tree, not the current
cluster size, is the quota. Jobs belong in leaf queues; a job in a parent queue, a parent that
does not exist or a cycle leaves the tree unusable, and then nothing is admitted, placed or
reclaimed until it is fixed, so that no subtree outgrows a bound nobody can compute.
These rules are the cluster queues'; NamespaceQueues are grafted on afterwards, flat or tree,
and a tenant's broken chain stops only itself (`namespace_subtrees`).

Every attribute but the live allocation is fixed when the session opens (`build`); the
checks read the session's allocation and admission books, summed over a subtree. Where a queue
comes in queue order is `queuerank`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, model_validator

from models.keys import QueueName
from models.scheduling import ROOT_QUEUE, QueueState
from scheduling.api.snapshot import QueueInfo, Snapshot, TaskInfo
from scheduling.api.vectors import CPU, EMPTY, EPSILON, MEMORY, Missing, Resources, total
from scheduling.plugins import proportion
from scheduling.plugins.proportion import QueueDemand

# What an unset root capability stands for: more than any cluster has (exact arithmetic keeps
# it far above anything subtracted from it).
UNBOUNDED: Final = 2**100
ROOT: Final = QueueName(ROOT_QUEUE)


def dims(resources: Resources | None) -> Resources:
    """Pod slots are no quota dimension."""
    r = resources or EMPTY
    return Resources.of(r.milli_cpu, r.memory, 0, r.scalars)


class QueueAttr(BaseModel):
    """One queue's quota for the session; `subtree` names the queues whose books it sums."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: QueueName
    deserved: Resources = EMPTY
    guarantee: Resources = EMPTY
    real_capability: Resources = EMPTY
    elastic: Resources = EMPTY  # allocation beyond minResources, over the subtree
    ancestors: tuple[QueueName, ...] = ()  # root first; () when the hierarchy is off
    subtree: tuple[QueueName, ...] = ()  # itself and its descendants; () means itself
    leaf: bool = True

    @model_validator(mode="after")
    def _itself(self) -> QueueAttr:
        """A queue's books always include its own."""
        if not self.subtree:
            object.__setattr__(self, "subtree", (self.name,))
        return self


class Capacity(BaseModel):
    """The plugin's view of the session's queues."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attrs: dict[QueueName, QueueAttr]
    hierarchy: bool = False
    broken: str | None = None  # why the queue tree cannot be used; None: it can


def flat_attr(
    queue: QueueInfo | None, demand: QueueDemand, cluster: Resources, guaranteed: Resources
) -> QueueAttr:
    """A queue bounded by the cluster less the others' guarantees (`queue` None: not known)."""
    real = proportion.real_capability(cluster, guaranteed, demand)
    asked = dims(queue.deserved if queue else None)
    deserved = asked.min_dimension(real, Missing.INFINITY).max_dimension(demand.guarantee)
    return QueueAttr(
        name=demand.name,
        deserved=deserved,
        guarantee=demand.guarantee,
        real_capability=real,
        elastic=demand.elastic,
        subtree=(demand.name,),
    )


def _flat(snapshot: Snapshot, demands: Sequence[QueueDemand]) -> Capacity:
    """Cluster queues with jobs, each bounded by the cluster less the others' guarantees."""
    cluster = snapshot.total_resource
    guaranteed = proportion.total_guarantee(snapshot.queues)
    attrs = {
        d.name: flat_attr(snapshot.queue(d.name), d, cluster, guaranteed)
        for d in demands
        if not d.namespaced
    }
    return Capacity(attrs=attrs)


def _ancestors(
    name: QueueName, parents: Mapping[QueueName, QueueName | None]
) -> tuple[tuple[QueueName, ...], str | None]:
    """The queue's ancestors, root first, or why there is no such chain."""
    chain: list[QueueName] = []
    seen = {name}
    current = name
    while current != ROOT:
        parent = parents[current] or ROOT
        if parent not in parents:
            return (), f"queue {current} has invalid parent queue {parent}"
        if parent in seen:
            return (), f"cycle detected in queue hierarchy for queue {name}"
        seen.add(parent)
        chain.append(parent)
        current = parent
    return tuple(reversed(chain)), None


def inherit(child: Resources, parent: Resources) -> Resources:
    """A child's capability takes its parent's value for whatever it leaves unset."""
    scalars = {**parent.scalars, **child.scalars}
    return Resources.of(
        child.milli_cpu if child.milli_cpu > 0 else parent.milli_cpu,
        child.memory if child.memory > 0 else parent.memory,
        0,
        scalars,
    )


def _broken(why: str) -> Capacity:
    return Capacity(attrs={}, hierarchy=True, broken=why)


def _tree(snapshot: Snapshot, demands: Sequence[QueueDemand]) -> Capacity:
    """Every cluster queue, bounded by its parent's attributes, from `root` down (the
    NamespaceQueues are grafted on after, `namespace_subtrees`: a tenant's tree never makes
    the cluster's unusable)."""
    queues: dict[QueueName, QueueInfo] = {q.name: q for q in snapshot.queues if not q.namespaced}
    if ROOT not in queues:
        return _broken(f"queue {ROOT} is missing")
    parents = {name: (None if name == ROOT else q.parent or ROOT) for name, q in queues.items()}
    ancestors: dict[QueueName, tuple[QueueName, ...]] = {}
    for name in sorted(queues):
        chain, why = _ancestors(name, parents)
        if why is not None:
            return _broken(why)
        ancestors[name] = chain
    children: dict[QueueName, list[QueueName]] = {name: [] for name in queues}
    for name in sorted(queues):
        if name != ROOT:
            children[parents[name] or ROOT].append(name)
    for job in snapshot.jobs:
        if children.get(job.queue):
            return _broken(f"queue {job.queue} of job {job.key} is not a leaf queue")

    by_demand = {d.name: d for d in demands}
    elastic = {name: EMPTY for name in queues}
    subtree: dict[QueueName, list[QueueName]] = {name: [name] for name in queues}
    for name in sorted(queues):
        for ancestor in ancestors[name]:
            subtree[ancestor].append(name)
        if name in by_demand:
            for holder in (name, *ancestors[name]):
                elastic[holder] = elastic[holder].add(by_demand[name].elastic)

    deserved = {name: dims(q.deserved) for name, q in queues.items()}
    guarantee = {name: dims(q.guarantee) for name, q in queues.items()}
    capability = {name: dims(q.capability) for name, q in queues.items()}
    if capability[ROOT].is_empty():
        cluster = snapshot.total_resource
        capability[ROOT] = Resources.of(
            UNBOUNDED, UNBOUNDED, 0, dict.fromkeys(cluster.scalars, UNBOUNDED)
        )
    real = {ROOT: capability[ROOT]}
    pending = [ROOT]
    while pending:
        parent = pending.pop(0)
        kids = children[parent]
        for kid in kids:
            deserved[kid] = deserved[kid].max_dimension(guarantee[kid])
            capability[kid] = inherit(capability[kid], capability[parent])
        shared = total(guarantee[kid] for kid in kids)
        if parent == ROOT:
            guarantee[ROOT] = shared
            deserved[ROOT] = total(deserved[kid] for kid in kids)
        for kid in kids:
            carved = real[parent].exceeded_part(shared).add(guarantee[kid])
            real[kid] = carved.min_dimension(capability[kid], Missing.INFINITY)
        pending.extend(kids)

    attrs = {
        name: QueueAttr(
            name=name,
            deserved=deserved[name],
            guarantee=guarantee[name],
            real_capability=real[name],
            elastic=elastic[name],
            ancestors=ancestors[name],
            subtree=tuple(sorted(subtree[name])),
            leaf=not children[name],
        )
        for name in sorted(queues)
    }
    return Capacity(attrs=attrs, hierarchy=True)


def build(snapshot: Snapshot, demands: Sequence[QueueDemand], hierarchy: bool) -> Capacity:
    """The queue attributes for one session, taken once when it opens."""
    return _tree(snapshot, demands) if hierarchy else _flat(snapshot, demands)


def subtree_total(books: Mapping[QueueName, Resources], names: Iterable[QueueName]) -> Resources:
    return total(books[n] for n in names if n in books)


def blocked(capacity: Capacity, name: QueueName) -> str | None:
    """Why the queue takes nothing at all this session; None: its quota decides."""
    if capacity.broken is not None:
        return f"queue hierarchy is not usable: {capacity.broken}"
    attr = capacity.attrs.get(name)
    if attr is not None and not attr.leaf:
        return f"queue {name} is not a leaf queue"
    return None


def _chain(capacity: Capacity, name: QueueName) -> list[QueueAttr]:
    """The queue and its ancestors, leaf first: each must have the room."""
    attr = capacity.attrs[name]
    return [attr, *(capacity.attrs[a] for a in reversed(attr.ancestors))]


def allocatable(
    capacity: Capacity,
    state: QueueState,
    books: Mapping[QueueName, Resources],
    name: QueueName,
    request: Resources,
) -> bool:
    """An Open leaf takes the task while it and each ancestor stay within real capability on
    the task's dimensions (deserved does not cap it: idle room may be borrowed)."""
    if state is not QueueState.OPEN or blocked(capacity, name) or name not in capacity.attrs:
        return False
    return limited_by(capacity, books, name, request) is None


def limited_by(
    capacity: Capacity, books: Mapping[QueueName, Resources], name: QueueName, request: Resources
) -> QueueName | None:
    """The queue, or the nearest ancestor, whose real capability the task would exceed."""
    for attr in _chain(capacity, name) if name in capacity.attrs else []:
        held = subtree_total(books, attr.subtree).add(request)
        if not held.less_equal_with_dimension(attr.real_capability, request):
            return attr.name
    return None


def preemptive(
    capacity: Capacity,
    state: QueueState,
    books: Mapping[QueueName, Resources],
    name: QueueName,
    request: Resources,
) -> bool:
    """The queue may reclaim for the task: it stays within its real capability, and on at
    least one of the task's dimensions it would still be within its deserved share."""
    if state is not QueueState.OPEN or capacity.broken or name not in capacity.attrs:
        return False
    attr = capacity.attrs[name]
    future = subtree_total(books, attr.subtree).add(request)
    if not future.less_equal_with_dimension(attr.real_capability, request):
        return False
    deserved = attr.deserved
    return any(
        wanted > 0
        and not (future.get(n) < EPSILON and deserved.get(n) < EPSILON)
        and future.get(n) - deserved.get(n) < EPSILON
        for n, wanted in request.dimensions()
    )


def _common(left: Resources, right: Resources) -> bool:
    """Some dimension is non-zero in both."""
    return any(v >= EPSILON and right.get(n) >= EPSILON for n, v in left.dimensions())


def _exceeds(held: Resources, deserved: Resources, request: Resources) -> bool:
    """Above deserved on one of the request's dimensions that deserved names."""
    for n, wanted in request.dimensions():
        if wanted <= 0:
            continue
        named = deserved.get(n) >= EPSILON if n in (CPU, MEMORY) else n in deserved.scalars
        if named and held.get(n) > deserved.get(n):
            return True
    return False


def gives_up(
    capacity: Capacity,
    held: Resources,
    queue: QueueName,
    victims: Sequence[TaskInfo],
    reclaimer: TaskInfo | None,
) -> bool:
    """The victim queue lets all of `victims` go, taken one by one from what it holds: each
    shares a dimension with the reclaimer, leaves the guarantee whole, and is taken while the
    queue is above deserved on the victim's dimensions (or the queue deserves none of them)."""
    if capacity.broken is not None:
        return False
    attr = capacity.attrs.get(queue)
    if attr is None:
        return False
    for task in victims:
        if reclaimer is not None and not _common(task.request, reclaimer.request):
            return False
        rest = held.sub(task.request)
        if not attr.guarantee.less_equal(dims(rest), Missing.ZERO):
            return False
        if _common(task.request, attr.deserved) and not _exceeds(held, attr.deserved, task.request):
            return False
        held = rest
    return True


def enqueueable(
    capacity: Capacity,
    state: QueueState,
    allocated: Mapping[QueueName, Resources],
    inqueue: Mapping[QueueName, Resources],
    name: QueueName,
    min_request: Resources,
) -> bool:
    """minReq + allocated + inqueue - elastic <= realCapability, for the queue and each of
    its ancestors, on minReq's dimensions."""
    if state is not QueueState.OPEN or blocked(capacity, name) or name not in capacity.attrs:
        return False
    for attr in _chain(capacity, name):
        held = subtree_total(allocated, attr.subtree).add(subtree_total(inqueue, attr.subtree))
        wanted = min_request.add(held).sub(attr.elastic)
        if not wanted.less_equal_with_dimension(attr.real_capability, min_request):
            return False
    return True
