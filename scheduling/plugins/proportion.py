"""Weighted fair shares of the cluster between queues (the proportion plugin).

Each queue with jobs gets a `deserved` vector by water-filling: the unclaimed remainder is
split by weight, each queue capped by its real capability and by what it asks for and raised
to its guarantee, until nobody wants more or nothing is left. Allocation then keeps every
queue within its deserved share, and queues are served lowest share first, which is how
weights 1:3 under contention end up with a quarter and three quarters of the cluster.

Pod slots are not shared out (`pods` is dropped on the way in), and the arithmetic is exact.

NamespaceQueues are not proportion's (Volcano's design supports them in the capacity plugin
only, §3.5.4): their demands are kept, so the books balance, but they get no share of the
cluster and their guarantees are reserved from their parent's, never from the cluster's.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from models.keys import JobKey, QueueName
from models.scheduling import QueueState
from scheduling.api.job_facts import JobFacts, job_facts
from scheduling.api.snapshot import QueueInfo, Snapshot
from scheduling.api.vectors import EMPTY, Missing, Resources, dominant_share, total


def _dims(resources: Resources) -> Resources:
    return Resources.of(resources.milli_cpu, resources.memory, 0, resources.scalars)


class QueueDemand(BaseModel):
    """The proportion plugin's per-queue attributes, taken when the session opens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: QueueName
    weight: int = 1
    capability: Resources | None = None  # None: no upper limit
    guarantee: Resources = EMPTY
    allocated: Resources = EMPTY  # Allocated-class requests of its jobs
    request: Resources = EMPTY  # allocated plus pending requests
    inqueue: Resources = EMPTY  # reservations of admitted jobs (jobs.inqueue)
    elastic: Resources = EMPTY  # allocation beyond the jobs' minResources
    namespaced: bool = False  # a NamespaceQueue's: no share of the cluster here


def demands(
    snapshot: Snapshot,
    facts: Mapping[JobKey, JobFacts] | None = None,  # None: made here from the snapshot
) -> list[QueueDemand]:
    """One demand per queue that has at least one job in the session, by name."""
    if facts is None:
        facts = {j.key: job_facts(j, snapshot.tasks_of(j.key)) for j in snapshot.jobs}
    result = []
    by_queue: dict[str, list[JobFacts]] = {}
    for job in snapshot.jobs:
        by_queue.setdefault(job.queue, []).append(facts[job.key])
    for queue in snapshot.queues:
        members = by_queue.get(queue.name)
        if not members:
            continue
        held = total(f.allocated for f in members)
        pending = total(f.pending for f in members)
        reserved = total(f.inqueue for f in members)
        lendable = total(f.elastic for f in members)
        result.append(
            QueueDemand(
                name=queue.name,
                weight=queue.weight,
                capability=queue.capability,
                guarantee=_dims(queue.guarantee or EMPTY),
                allocated=_dims(held),
                request=_dims(held.add(pending)),
                inqueue=_dims(reserved),
                elastic=_dims(lendable),
                namespaced=queue.namespaced,
            )
        )
    return result


def total_guarantee(queues: Iterable[QueueInfo]) -> Resources:
    """Guarantees of all cluster queues, with jobs or not: reserved room nobody else may
    reach (a NamespaceQueue's is carved out of its parent's, so it is not counted twice)."""
    return _dims(total(q.guarantee for q in queues if q.guarantee is not None and not q.namespaced))


def real_capability(cluster: Resources, guaranteed: Resources, demand: QueueDemand) -> Resources:
    """What the queue could ever reach: the unguaranteed rest plus its own guarantee, capped.

    A capability's cpu or memory of 0 means unlimited, and an absent scalar too.
    """
    real = _dims(cluster).exceeded_part(guaranteed).add(demand.guarantee)
    cap = demand.capability
    if cap is None:
        return real
    return Resources.of(
        min(real.milli_cpu, cap.milli_cpu) if cap.milli_cpu > 0 else real.milli_cpu,
        min(real.memory, cap.memory) if cap.memory > 0 else real.memory,
        0,
        {n: min(v, cap.scalars[n]) if n in cap.scalars else v for n, v in real.scalars.items()},
    )


def water_fill(
    cluster: Resources, queue_demands: Sequence[QueueDemand], guaranteed: Resources = EMPTY
) -> dict[QueueName, Resources]:
    """Deserved shares by weighted water-filling, by queue name (cluster queues only)."""
    ordered = sorted((d for d in queue_demands if not d.namespaced), key=lambda d: d.name)
    caps = {d.name: real_capability(cluster, guaranteed, d) for d in ordered}
    deserved = {d.name: EMPTY for d in ordered}
    met: set[QueueName] = set()
    remaining = _dims(cluster)
    while True:
        weight = sum(d.weight for d in ordered if d.name not in met)
        if weight == 0:
            break
        increased, decreased = EMPTY, EMPTY
        for demand in ordered:
            if demand.name in met:
                continue
            old = deserved[demand.name]
            new = old.add(remaining.multiply(Fraction(demand.weight, weight)))
            new = new.min_dimension(caps[demand.name], Missing.INFINITY)
            new = new.min_dimension(demand.request, Missing.ZERO)
            new = new.max_dimension(demand.guarantee)
            deserved[demand.name] = new
            if demand.request.less_equal(new, Missing.ZERO) or new == old:
                met.add(demand.name)
            increased = increased.add(new.exceeded_part(old))
            decreased = decreased.add(old.exceeded_part(new))
        previous = remaining
        remaining = remaining.add(decreased).exceeded_part(increased)
        if remaining.is_empty() or remaining == previous:
            break
    return deserved


def queue_share(allocated: Resources, deserved: Resources) -> Fraction:
    """max over deserved's dimensions of allocated/deserved; the queue order's key."""
    return dominant_share(allocated, deserved)


def overused(allocated: Resources, deserved: Resources) -> bool:
    """Deserved is used up in every dimension: skip the queue in allocate."""
    return deserved.less_equal(_dims(allocated), Missing.ZERO)


def allocatable(
    state: QueueState, allocated: Resources, deserved: Resources, request: Resources
) -> bool:
    """An Open queue may take the task while it stays within deserved on the task's dims."""
    if state is not QueueState.OPEN:
        return False
    return allocated.add(request).less_equal_with_dimension(deserved, request)


def enqueueable(
    state: QueueState,
    demand: QueueDemand,
    inqueue: Resources,
    real: Resources,
    min_request: Resources,
) -> bool:
    """minReq + allocated + inqueue - elastic <= realCapability on minReq's dimensions."""
    if state is not QueueState.OPEN:
        return False
    wanted = min_request.add(demand.allocated).add(inqueue).sub(demand.elastic)
    return wanted.less_equal_with_dimension(real, min_request)


def deserved_of(snapshot: Snapshot) -> Mapping[QueueName, Resources]:
    """The session's deserved shares straight from a snapshot."""
    return water_fill(snapshot.total_resource, demands(snapshot), total_guarantee(snapshot.queues))
