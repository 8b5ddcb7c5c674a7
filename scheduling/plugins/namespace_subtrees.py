"""NamespaceQueues in the capacity plugin: each tenant's queues as a subtree of a cluster queue.

Volcano's NamespaceQueue design (§3.5.4) supports NamespaceQueues in the capacity plugin only:
they partition their cluster parent's share by `deserved`, `capability` and `guarantee`, each
bounded by its own capability and by every ancestor's, its cluster parent's included. The
cluster queues' quotas are built first, exactly as without NamespaceQueues
(`capacity.build`); each NamespaceQueue chain that reaches a cluster queue is then grafted
under it: its real capability carved out of its parent's (less its siblings' guarantees, plus
its own, within its capability), its books summed into every ancestor's subtree.

This holds whether or not the cluster queues' hierarchy mode is on. Flat, a cluster queue
stands alone, bounded by the cluster less the other queues' guarantees: its NamespaceQueues
then hang under it alone and it bounds them (it gets a quota of its own for that, jobs or
not). In the tree, they hang under it and its ancestors up to `root`. The cluster queue keeps
its own jobs (the `default` Queue takes NamespaceQueues from every namespace and must not
stop scheduling its jobs because a tenant attached one): its subtree counts both.

The scheduler checks the last word itself (design §3.6.4): a chain whose cluster queue does
not list the namespace in `allowedNamespaces` places nothing, whatever its Ready condition
says (its running jobs still count against its ancestors). A tenant's mistake stays in its
subtree: a chain that finds no parent, or loops, is refused for that queue alone, never the
cluster's tree; a NamespaceQueue with children places no job
of its own (jobs belong in leaves, `capacity.blocked`), and one that places nothing holds
its whole subtree. Without the capacity plugin nothing
in a NamespaceQueue is placed, and its jobs are told so (`refusals`).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from models import queue_refs
from models.keys import QueueName
from scheduling.api.snapshot import QueueInfo, Snapshot
from scheduling.api.vectors import EMPTY, Missing, Resources, total
from scheduling.plugins import capacity, proportion
from scheduling.plugins.capacity import Capacity, QueueAttr
from scheduling.plugins.proportion import QueueDemand

NEEDS_CAPACITY: Final = (
    "NamespaceQueues need the capacity plugin, which this scheduler's configuration does not run"
)


def _chain(
    name: QueueName, tenants: Mapping[QueueName, QueueInfo], clusters: Mapping[QueueName, object]
) -> tuple[tuple[QueueName, ...], str | None]:
    """The queue's ancestors up to its cluster queue, that one first; or why none."""
    path: list[QueueName] = []
    seen, current = {name}, name
    while True:
        parent = tenants[current].parent
        if parent is None:
            return (), f"NamespaceQueue {current} has no parent the scheduler can resolve"
        if parent in clusters:
            return (parent, *reversed(path)), None
        if parent not in tenants:
            return (), f"parent {parent} of NamespaceQueue {current} does not exist"
        if parent in seen:
            return (), f"NamespaceQueue {name}: its parents form a cycle through {parent}"
        seen.add(parent)
        path.append(parent)
        current = parent


def _cluster_attr(
    base: Capacity, snapshot: Snapshot, name: QueueName, guaranteed: Resources
) -> QueueAttr:
    """The cluster queue's quota; flat and without jobs of its own it had none, so it gets
    the one it would have with jobs (its guarantee and capability over the cluster)."""
    found = base.attrs.get(name)
    if found is not None:
        return found
    queue = snapshot.queue(name)
    empty = QueueDemand(
        name=name,
        capability=queue.capability if queue else None,
        guarantee=capacity.dims(queue.guarantee if queue else None),
    )
    return capacity.flat_attr(queue, empty, snapshot.total_resource, guaranteed)


def graft(
    base: Capacity, snapshot: Snapshot, demands: Sequence[QueueDemand]
) -> tuple[Capacity, dict[QueueName, str]]:
    """The cluster queues' quotas with every NamespaceQueue subtree grafted on, and why each
    NamespaceQueue that could not be is left out (its jobs place nothing)."""
    tenants = {q.name: q for q in snapshot.queues if q.namespaced and q.listed}
    if not tenants or base.broken is not None:
        return base, {}  # a broken cluster tree blocks every queue already
    clusters = {q.name: q for q in snapshot.queues if not q.namespaced}
    refused: dict[QueueName, str] = {}
    chains: dict[QueueName, tuple[QueueName, ...]] = {}
    for name in sorted(tenants):
        chain, why = _chain(name, tenants, clusters)
        if why is not None:
            refused[name] = why
            continue
        chains[name] = chain  # grafted even if refused below: what its jobs hold still counts
        cluster, namespace = clusters[chain[0]], tenants[name].namespace
        if not queue_refs.authorizes(cluster.allowed_namespaces, namespace):
            refused[name] = (
                f"NamespaceQueue {name}: queue {cluster.name} does not allow namespace {namespace} "
                "(its spec.allowedNamespaces)"
            )
    attrs = dict(base.attrs)
    guaranteed = proportion.total_guarantee(snapshot.queues)
    for top in sorted({chain[0] for chain in chains.values()}):
        attrs[top] = _cluster_attr(base, snapshot, top, guaranteed)
    # Parents before children: a chain is one longer than its parent's.
    order = sorted(chains, key=lambda n: (len(chains[n]), n))
    kids: dict[QueueName, list[QueueName]] = {}
    for name in order:
        kids.setdefault(chains[name][-1], []).append(name)
    bound = {top: attrs[top].real_capability for top in {c[0] for c in chains.values()}}
    real = dict(bound)
    for name in order:
        queue, parent = tenants[name], chains[name][-1]
        guarantee = capacity.dims(queue.guarantee)
        bound[name] = capacity.inherit(capacity.dims(queue.capability), bound[parent])
        shared = total(capacity.dims(tenants[k].guarantee) for k in kids[parent])
        carved = real[parent].exceeded_part(shared).add(guarantee)
        real[name] = carved.min_dimension(bound[name], Missing.INFINITY)
        attrs[name] = QueueAttr(
            name=name,
            deserved=capacity.dims(queue.deserved).max_dimension(guarantee),
            guarantee=guarantee,
            real_capability=real[name],
            ancestors=(*attrs[chains[name][0]].ancestors, *chains[name]),
            leaf=name not in kids,
        )
    return Capacity(attrs=_summed(attrs, order, demands), hierarchy=base.hierarchy), refused


def _summed(
    attrs: dict[QueueName, QueueAttr], grafted: Sequence[QueueName], demands: Sequence[QueueDemand]
) -> dict[QueueName, QueueAttr]:
    """Every grafted queue's books counted in each ancestor's subtree and elastic room."""
    below: dict[QueueName, list[QueueName]] = {}
    elastic: dict[QueueName, Resources] = {}
    by_demand = {d.name: d.elastic for d in demands}
    for name in grafted:
        for holder in (name, *attrs[name].ancestors):
            below.setdefault(holder, []).append(name)
            elastic[holder] = elastic.get(holder, EMPTY).add(by_demand.get(name, EMPTY))
    out = dict(attrs)
    for holder, names in below.items():
        attr = out[holder]
        out[holder] = attr.model_copy(
            update={
                "subtree": tuple(sorted({*attr.subtree, *names})),
                "elastic": attr.elastic.add(elastic[holder]),
            }
        )
    return dict(sorted(out.items()))


def refusals(
    snapshot: Snapshot, plugin: Capacity | None, grafting: Mapping[QueueName, str]
) -> dict[QueueName, str]:
    """Why each NamespaceQueue places nothing this session, by id: its own state (not Open
    and Ready, or not there at all), the capacity plugin not running (`plugin` None), or its
    chain not reaching a cluster queue (`grafting`, from `graft`)."""
    out: dict[QueueName, str] = {}
    for queue in snapshot.queues:
        if not queue.namespaced:
            continue
        if queue.refusal is not None:
            out[queue.name] = queue.refusal
        elif plugin is None:
            out[queue.name] = f"NamespaceQueue {queue.name} is not scheduled: {NEEDS_CAPACITY}"
        elif queue.name in grafting:
            out[queue.name] = grafting[queue.name]
    return _inherited(snapshot, out)


def _inherited(snapshot: Snapshot, own: Mapping[QueueName, str]) -> dict[QueueName, str]:
    """`own` with every NamespaceQueue below a refused one refused too: a parent that places
    nothing (Closed, not Ready, not allowed) holds its whole subtree, as a closed cluster
    queue holds its children."""
    tenants = {q.name: q for q in snapshot.queues if q.namespaced}
    out = dict(own)
    for name in sorted(tenants):
        if name in out:
            continue
        seen, parent = {name}, tenants[name].parent
        while parent in tenants and parent not in seen:
            if parent in own:
                out[name] = f"NamespaceQueue {name} is held by its parent: {own[parent]}"
                break
            seen.add(parent)
            parent = tenants[parent].parent
    return out
