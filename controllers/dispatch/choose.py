"""Which worker cluster a job goes to: one of its queue's `extendClusters`, by weight and by
the room left for its gang. Pure.

The gang is what the job's `minAvailable` pods request (`controllers.job.podspec.min_resources`,
the PodGroup's minResources), the smallest a cluster must hold for the job to run at all.
A cluster is a candidate when it answered its probe, is not drained (`caldera.dev/drain` on
its Secret), holds no stale copy of this job (that copy is deleted first, before anything else
goes there), did not refuse the copy, and the queue a copy lands in there (the job's queue of
that name, else `default`) exists and is Open (Volcano admits no Job to a queue that is not).

The room for the job there (`room`) is the least of three: the cluster (allocatable; free),
the worker's queue (its capability; capability less what it has allocated) and the manager
queue's `extendClusters[].capacity` for that cluster, the most this queue's jobs may use there
(capacity; capacity less what that queue's unfinished pods there request, pending ones
included). A resource a capability or capacity does not name is not limited by it. Among
candidates, those whose free room fits the gang come first, then those whose total room does
(the job queues there, behind that cluster's own work). Among those where it fits now, each
gets the job with a chance proportional to `weight x headroom`, headroom being the share of
the tightest requested resource left once the gang is placed: the draw is the job's own (its
uid and generation), so a replay draws the same, and a burst of jobs that all read the same
probe spreads over the clusters by weight and room instead of all going to the one that
looked best (Karmada's weighted division does the same for replicas). Where it fits nowhere
now, the one least short per unit of weight wins, ties broken by name. A cluster whose total
room cannot hold the gang could never run it.

Why not MultiKueue's rule (a copy on every cluster, the first to admit keeps it, the others are
deleted): a Volcano Job has no suspend, so on a worker that serves only Volcano's API a copy
that is admitted starts its pods at once; copies on two clusters could both start, which the
dispatch must never let happen, and every job would cost a create and a delete per cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from controllers.job import podspec
from models.defaults import default_job
from models.dispatch import DRAIN_ANNOTATION, ClusterStatus, DispatchSettings
from models.quantity import parse_quantity
from models.scheduling import DEFAULT_QUEUE, QueueState
from models.vcjob import Job

PODS = "pods"  # a probe that does not count pods leaves them unbounded


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster: str = ""  # "": none
    reason: str = ""  # none: NoClusterReachable, NoQueueOpen or NoClusterFits
    message: str = ""


def gang(job: Job) -> dict[str, Fraction]:
    """What the job's minAvailable pods request together (with `pods`: their number)."""
    found = podspec.min_resources(default_job(job), {})
    return {name: parse_quantity(value) for name, value in found.items()}


def _amounts(resources: Mapping[str, str]) -> dict[str, Fraction]:
    out = {}
    for name, text in resources.items():
        try:
            out[name] = parse_quantity(text)
        except ValueError:
            continue  # a probe's quantity that does not parse counts as none
    return out


def _fits(need: Mapping[str, Fraction], have: Mapping[str, Fraction]) -> bool:
    return all(
        amount <= have.get(name, Fraction(0))
        for name, amount in need.items()
        if amount > 0 and not (name == PODS and PODS not in have)
    )


def _headroom(
    need: Mapping[str, Fraction], free: Mapping[str, Fraction], total: Mapping[str, Fraction]
) -> Fraction:
    """The share of the tightest requested resource left free once the gang is placed
    (negative: the gang does not fit now)."""
    shares = [
        (free.get(name, Fraction(0)) - amount) / total[name]
        for name, amount in need.items()
        if amount > 0
        and total.get(name, Fraction(0)) > 0
        and not (name == PODS and PODS not in free)
    ]
    return min(shares, default=Fraction(0))


def _rank(weight: int, headroom: Fraction) -> Fraction:
    """Larger is better: room times weight; out of room, the least short per unit of weight."""
    return headroom * weight if headroom >= 0 else headroom / weight


def _capped(base: Mapping[str, Fraction], limit: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """`base` no larger than `limit` where `limit` names a resource (one it leaves out is not
    limited); `pods` a probe did not count is as `limit` says."""
    out = {k: min(v, limit[k]) if k in limit else v for k, v in base.items()}
    if PODS in limit and PODS not in base:
        out[PODS] = limit[PODS]
    return out


def _left(limit: Mapping[str, Fraction], taken: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {k: max(Fraction(0), v - taken.get(k, Fraction(0))) for k, v in limit.items()}


class Room(BaseModel):
    """What a job may have on one cluster: `total`, the most it could ever get there (the
    tier-1 test: it could run there at all), `free`, what it could get now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    total: dict[str, Fraction]
    free: dict[str, Fraction]
    bound: str = ""  # what limits it below the cluster's allocatable ("": nothing)


def room(status: ClusterStatus, capacity: Mapping[str, str]) -> Room:
    """The least of: the cluster (allocatable, free), its queue there (capability, less what
    that queue has allocated) and this queue's `extendClusters` capacity there (less its use)."""
    total, free, bound = _amounts(status.allocatable), _amounts(status.free), ""
    queue = status.queue
    if queue is not None and queue.capability:
        cap = _amounts(queue.capability)
        total, free = _capped(total, cap), _capped(free, _left(cap, _amounts(queue.allocated)))
        bound = f"queue {queue.name} there is capped at {dict(queue.capability)}"
    if capacity:
        cap = _amounts(capacity)
        used = _amounts(queue.used) if queue is not None else {}
        total, free = _capped(total, cap), _capped(free, _left(cap, used))
        bound = f"extendClusters capacity {dict(capacity)}" + (f", {bound}" if bound else "")
    return Room(total=total, free=free, bound=bound)


def _closed(status: ClusterStatus) -> str:
    """Why the job's queue there takes no copy ("": it does, or it was not asked)."""
    queue = status.queue
    if queue is None or queue.error:
        return ""
    if not queue.name:
        return f"has no queue {queue.asked} nor {DEFAULT_QUEUE}"
    if queue.state not in ("", QueueState.OPEN):
        return f"queue {queue.name} there is {queue.state}"
    return ""


def draw(uid: str, generation: int) -> float:
    """The job's own number in [0, 1) for its `generation`'s choice: the same on every replay."""
    digest = hashlib.sha256(f"{uid}/{generation}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _drawn(ranked: list[tuple[int, Fraction, str]], at: float) -> str:
    """Among the clusters where the gang fits now, one by `at`, each with a share of
    weight x headroom (all equal when none has any headroom); else the best of the rest."""
    now = [(-negated, name) for tier, negated, name in sorted(ranked) if tier == 0]
    if not now:
        return min(ranked)[2]
    total = sum(share for share, _ in now)
    shares = now if total > 0 else [(Fraction(1), name) for _, name in now]
    total = sum(share for share, _ in shares)
    point, seen = Fraction(at) * total, Fraction(0)
    for share, name in shares:
        seen += share
        if point < seen:
            return name
    return shares[-1][1]


def choose(
    settings: DispatchSettings,
    statuses: list[ClusterStatus],
    need: Mapping[str, Fraction],
    excluded: Mapping[str, str],
    draw: float | None = None,
) -> Choice:
    """The cluster for the job's next copy; `excluded`: clusters left out, and why; `draw`:
    the job's number (`draw()`), None: the best ranked, as runs recorded before the draw."""
    probed = {s.name: s for s in statuses}
    ranked: list[tuple[int, Fraction, str]] = []
    why: list[str] = []
    elsewhere = False  # a cluster left out for now (unreachable, refused, holding a stale copy)
    closed = False  # a cluster whose queue takes no copy now
    for name in sorted(settings.clusters):
        weight = max(1, settings.clusters[name])
        status = probed.get(name)
        if name in excluded:
            elsewhere = True
            why.append(f"{name}: {excluded[name]}")
        elif status is None or not status.reachable:
            elsewhere = True
            why.append(f"{name}: unreachable ({status.error if status else 'not probed'})")
        elif status.drained:
            elsewhere = True
            why.append(f"{name}: drained ({DRAIN_ANNOTATION} on its Secret)")
        elif status.queue is not None and status.queue.error:
            elsewhere = True
            why.append(f"{name}: queue {status.queue.asked} unread ({status.queue.error})")
        elif shut := _closed(status):
            closed = True
            why.append(f"{name}: {shut}")
        elif not _fits(need, _amounts(status.allocatable)):
            why.append(f"{name}: its allocatable {dict(status.allocatable)} cannot hold the gang")
        elif not _fits(need, (there := room(status, settings.capacity.get(name, {}))).total):
            why.append(f"{name}: {there.bound} cannot hold the gang")
        else:
            tier = 0 if _fits(need, there.free) else 1
            ranked.append((tier, -_rank(weight, _headroom(need, there.free, there.total)), name))
    if ranked:
        return Choice(cluster=_drawn(ranked, draw) if draw is not None else min(ranked)[2])
    wants = ", ".join(f"{k} {v}" for k, v in sorted(need.items()) if v)
    return Choice(
        reason="NoClusterReachable" if elsewhere else "NoQueueOpen" if closed else "NoClusterFits",
        message=f"no worker cluster can take the gang ({wants}): " + "; ".join(why),
    )
