"""Where a NamespaceQueue hangs, and whether it may: Volcano's design, 3.4.1 to 3.4.3.

The parent chain is walked within the namespace (`queue_refs.parent` is the one grammar) up to
the cluster Queue it attaches to; the namespace must be in that Queue's `allowedNamespaces`
(a whole subtree is unauthorized with its attachment point); then the child must fit under its
parent: its capability not above the nearest ancestor's, for each resource; the guarantees
(and deserved) of a parent's direct children together not above the parent's; at most one
subtree of a namespace attached to a given cluster Queue. A parent that sets no value for a
resource imposes nothing; a child that sets none adds nothing.

Siblings that together overflow their parent are taken in creation order (then name): the
first ones fit, the one that tips the sum over is the one in violation. So a tenant adding a
queue never breaks the queues already working, and every workflow, reading the same objects,
comes to the same answer. Pure: no I/O; the activity reads the objects and `select`s here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import TypeVar

from controllers.namespacequeue.conditions import Check, Reason
from controllers.record import Record
from models import queue_refs
from models.meta import ObjectMeta
from models.namespacequeue import NamespaceQueue
from models.quantity import format_quantity, parse_quantity
from models.scheduling import Queue

_NEVER = datetime.max.replace(tzinfo=UTC)  # an object without a creation time sorts last
Amounts = Mapping[str, int | str]
QueueLike = TypeVar("QueueLike", NamespaceQueue, Queue)


class Surroundings(Record):
    """What a NamespaceQueue's conditions depend on, as read from the apiserver (specs and
    identities only: statuses are what the controllers write, not what they read)."""

    local: tuple[NamespaceQueue, ...] = ()  # every NamespaceQueue of its namespace, itself too
    queue: Queue | None = None  # the cluster Queue at the top of its chain; None: none found
    # When it hangs right under `queue`: the NamespaceQueues of other namespaces and the
    # cluster Queues hanging there too (its siblings beyond its namespace).
    attached: tuple[NamespaceQueue, ...] = ()
    cluster_children: tuple[Queue, ...] = ()


@dataclass(frozen=True)
class Chain:
    """Its ancestors within the namespace, nearest first, and the cluster Queue above them."""

    ancestors: tuple[NamespaceQueue, ...]
    top: str  # the cluster Queue's name; "" when the chain breaks
    broken: Check | None = None  # None: it reaches a cluster Queue


def _trimmed_meta(meta: ObjectMeta) -> ObjectMeta:
    return ObjectMeta(
        name=meta.name,
        namespace=meta.namespace,
        uid=meta.uid,
        generation=meta.generation,
        creation_timestamp=meta.creation_timestamp,
    )


def trimmed_namespace_queue(nq: NamespaceQueue) -> NamespaceQueue:
    """Identity and spec: what `evaluate` reads, and all a workflow's history needs to hold."""
    return NamespaceQueue(metadata=_trimmed_meta(nq.metadata), spec=nq.spec)


def trimmed_queue(q: Queue) -> Queue:
    return Queue(metadata=_trimmed_meta(q.metadata), spec=q.spec)


def name_of(obj: NamespaceQueue | Queue) -> str:
    return obj.metadata.name or ""


def namespace_of(obj: NamespaceQueue) -> str:
    return obj.metadata.namespace or ""


def parent_of(nq: NamespaceQueue) -> queue_refs.QueueTarget | None:
    """Its parent as the grammar reads it; None: a reference that names nothing."""
    try:
        return queue_refs.parent(namespace_of(nq), nq.spec.parent)
    except queue_refs.BadReference:
        return None


def walk(nq: NamespaceQueue, local: Iterable[NamespaceQueue]) -> Chain:
    by_name = {name_of(q): q for q in local}
    ancestors: list[NamespaceQueue] = []
    seen = {name_of(nq)}
    current = nq
    while True:
        whose = "" if current is nq else f"ancestor {name_of(current)}: "
        try:
            target = queue_refs.parent(namespace_of(nq), current.spec.parent)
        except queue_refs.BadReference as e:
            broken = Check(False, Reason(e.reason.value), f"{whose}{e}")
            return Chain(tuple(ancestors), "", broken)
        if not target.namespaced:
            return Chain(tuple(ancestors), target.name)
        if target.name in seen:
            cycle = " -> ".join([*(name_of(a) for a in [nq, *ancestors]), target.name])
            broken = Check(False, Reason.HIERARCHY_CYCLE, f"the parent chain loops: {cycle}")
            return Chain(tuple(ancestors), "", broken)
        found = by_name.get(target.name)
        if found is None:
            message = (
                f"{whose}parent {target.name}: no NamespaceQueue of that name in namespace "
                f"{namespace_of(nq)}"
            )
            broken = Check(False, Reason.PARENT_NOT_FOUND, message)
            return Chain(tuple(ancestors), "", broken)
        ancestors.append(found)
        seen.add(target.name)
        current = found


def select(
    namespace: str,
    name: str,
    namespace_queues: Iterable[NamespaceQueue],
    queues: Iterable[Queue],
) -> Surroundings:
    """Of every NamespaceQueue and Queue of the cluster, what `evaluate` needs for this one."""
    everything = [trimmed_namespace_queue(q) for q in namespace_queues]
    local = tuple(q for q in everything if namespace_of(q) == namespace)
    me = next((q for q in local if name_of(q) == name), None)
    if me is None:
        return Surroundings(local=local)
    chain = walk(me, local)
    by_name = {name_of(q): q for q in queues}
    top = by_name.get(chain.top) if chain.top else None
    if top is None or chain.ancestors or not (_guarantee(top) or _deserved(top)):
        # Siblings beyond the namespace count only in the sums of a cluster Queue that has a
        # guarantee or deserved to share out (every tenant's queue may hang under `default`).
        return Surroundings(local=local, queue=trimmed_queue(top) if top else None)
    attached = tuple(
        _shares_only(q)
        for q in everything
        if namespace_of(q) != namespace and _attached_to(q, chain.top)
    )
    children = tuple(
        _shares_only(trimmed_queue(q))
        for q in by_name.values()
        if (q.spec.parent or "") == chain.top
    )
    return Surroundings(
        local=local, queue=trimmed_queue(top), attached=attached, cluster_children=children
    )


def _shares_only(q: QueueLike) -> QueueLike:
    """A sibling beyond the namespace as the sums read it: identity, guarantee, deserved."""
    spec = q.spec.model_copy(
        update={
            k: None
            for k in type(q.spec).model_fields
            if k not in ("guarantee", "deserved", "parent")
        }
    )
    return q.model_copy(update={"spec": spec})


def _attached_to(nq: NamespaceQueue, queue: str) -> bool:
    target = parent_of(nq)
    return target is not None and not target.namespaced and target.name == queue


def evaluate(nq: NamespaceQueue, s: Surroundings) -> tuple[Check, Check]:
    """(Authorized, Ready) as far as the hierarchy goes (the lifecycle is the controller's)."""
    chain = walk(nq, s.local)
    if chain.broken is not None:
        return chain.broken, chain.broken
    if s.queue is None or name_of(s.queue) != chain.top:
        missing = Check(False, Reason.PARENT_NOT_FOUND, f"cluster Queue {chain.top} not found")
        return missing, missing
    namespace = namespace_of(nq)
    through = f" (through {name_of(chain.ancestors[-1])})" if chain.ancestors else ""
    if not queue_refs.authorizes(s.queue.spec.allowed_namespaces, namespace):
        message = (
            f'namespace "{namespace}" is not in the allowedNamespaces of Queue {chain.top}{through}'
        )
        refused = Check(False, Reason.NAMESPACE_NOT_ALLOWED, message)
        return refused, refused
    message = f'namespace "{namespace}" is authorized to use {chain.top}{through}'
    authorized = Check(True, Reason.NAMESPACE_ALLOWED, message)
    violations = _capability(nq, chain, s.queue) + _shares(nq, chain, s)
    if violations:
        return authorized, Check(False, Reason.PARENT_CONSTRAINT_VIOLATION, "; ".join(violations))
    return authorized, Check(True, Reason.READY, "NamespaceQueue is ready for scheduling")


# --- resource constraints ---------------------------------------------------------------------


def _amount(value: int | str) -> Fraction | None:
    """None: not a quantity (the CRD's pattern refuses those; an old object may hold one)."""
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def _capability(nq: NamespaceQueue, chain: Chain, queue: Queue) -> list[str]:
    """Each resource's capability against the nearest ancestor that sets one."""
    above: list[tuple[str, Mapping[str, int | str]]] = [
        (name_of(a), a.spec.capability or {}) for a in chain.ancestors
    ]
    above.append((f"cluster/{name_of(queue)}", queue.spec.capability or {}))
    out: list[str] = []
    for resource, value in sorted((nq.spec.capability or {}).items()):
        mine = _amount(value)
        for who, limits in above:
            if resource in limits:
                limit = _amount(limits[resource])
                if mine is not None and limit is not None and mine > limit:
                    out.append(
                        f"capability {resource} {value} is above the {limits[resource]} of {who}"
                    )
                break
    return out


def _guarantee(obj: NamespaceQueue | Queue) -> Amounts:
    g = obj.spec.guarantee
    return (g.resource if g is not None else None) or {}


def _deserved(obj: NamespaceQueue | Queue) -> Amounts:
    return obj.spec.deserved or {}


def _order(obj: NamespaceQueue | Queue) -> tuple[datetime, str, str]:
    made = obj.metadata.creation_timestamp or _NEVER
    if made.tzinfo is None:  # never from the apiserver; compared with aware times below
        made = made.replace(tzinfo=UTC)
    return (made, obj.metadata.namespace or "", name_of(obj))


def _key(obj: NamespaceQueue | Queue) -> tuple[str, str]:
    return (obj.metadata.namespace or "", name_of(obj))


def _shares(nq: NamespaceQueue, chain: Chain, s: Surroundings) -> list[str]:
    """The sums over direct children, counted up to this one in creation order."""
    parent: NamespaceQueue | Queue
    siblings: list[NamespaceQueue | Queue]
    out: list[str] = []
    mine = _order(nq)
    if chain.ancestors:
        parent = chain.ancestors[0]
        siblings = [q for q in s.local if _child_of(q, name_of(parent))]
        who = name_of(parent)
    else:
        assert s.queue is not None  # evaluate checked it
        parent, who = s.queue, f"cluster/{chain.top}"
        roots = [q for q in s.local if _attached_to(q, chain.top) and _key(q) != _key(nq)]
        siblings = [*roots, *s.attached, *s.cluster_children]
        earlier = sorted((q for q in roots if _order(q) < mine), key=_order)
        if earlier:
            out.append(
                f"namespace {namespace_of(nq)} already attaches {name_of(earlier[0])} to {who}: "
                "a namespace hangs one subtree under a cluster Queue"
            )
    before = [q for q in siblings if _key(q) != _key(nq) and _order(q) < mine]
    for field, read in (("guarantee", _guarantee), ("deserved", _deserved)):
        out += _sum_within(field, read, [*before, nq], parent, who)
    return out


def _child_of(q: NamespaceQueue, parent: str) -> bool:
    target = parent_of(q)
    return target is not None and target.namespaced and target.name == parent


def _sum_within(
    field: str,
    read: Callable[[NamespaceQueue | Queue], Amounts],
    counted: Sequence[NamespaceQueue | Queue],  # the earlier siblings, then this queue
    parent: NamespaceQueue | Queue,
    who: str,
) -> list[str]:
    limits, mine = read(parent), read(counted[-1])
    out: list[str] = []
    for resource, value in sorted(mine.items()):
        if resource not in limits:
            continue  # a parent that sets no value imposes nothing
        limit = _amount(limits[resource])
        amounts = [_amount(read(q).get(resource, 0)) for q in counted]
        if limit is None or any(a is None for a in amounts):
            continue
        total = sum((a for a in amounts if a is not None), Fraction(0))
        if total > limit:
            out.append(
                f"{field} {resource}: {value} with its earlier siblings comes to "
                f"{format_quantity(total)}, more than the {limits[resource]} of {who}"
            )
    return out
