"""Which worker cluster a job goes to: one of its queue's `extendClusters`, by weight and by
the room left for its gang. Pure.

The gang is what the job's `minAvailable` pods request (`controllers.job.podspec.min_resources`,
the PodGroup's minResources), the smallest a cluster must hold for the job to run at all.
A cluster is a candidate when it answered its probe, holds no stale copy of this job (that
copy is deleted first, before anything else goes there) and did not refuse the copy. Among
candidates, those whose free capacity fits the gang come first, then those whose allocatable
does (the job queues there, behind that cluster's own work); within each, the highest
`weight x headroom` wins, headroom being the share of the tightest requested resource left
once the gang is placed (so weight 2 takes twice the load of weight 1 before they tie), ties
broken by name. A cluster whose allocatable cannot hold the gang could never run it.

The one alternative, MultiKueue's (copy to every cluster, keep the first to admit, delete the
rest), would start sooner on busy clusters at the cost of a copy per cluster per job, each
needing a delete; it is a later measurement, not this choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from pydantic import BaseModel, ConfigDict

from controllers.job import podspec
from models.defaults import default_job
from models.dispatch import ClusterStatus, DispatchSettings
from models.quantity import parse_quantity
from models.vcjob import Job

PODS = "pods"  # a probe that does not count pods leaves them unbounded


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster: str = ""  # "": none
    reason: str = ""  # none: NoClusterReachable or NoClusterFits, as the condition says
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


def choose(
    settings: DispatchSettings,
    statuses: list[ClusterStatus],
    need: Mapping[str, Fraction],
    excluded: Mapping[str, str],
) -> Choice:
    """The cluster for the job's next copy; `excluded`: clusters left out, and why."""
    probed = {s.name: s for s in statuses}
    ranked: list[tuple[int, Fraction, str]] = []
    why: list[str] = []
    elsewhere = False  # a cluster left out for now (unreachable, refused, holding a stale copy)
    for name in sorted(settings.clusters):
        weight = max(1, settings.clusters[name])
        status = probed.get(name)
        if name in excluded:
            elsewhere = True
            why.append(f"{name}: {excluded[name]}")
        elif status is None or not status.reachable:
            elsewhere = True
            why.append(f"{name}: unreachable ({status.error if status else 'not probed'})")
        elif not _fits(need, total := _amounts(status.allocatable)):
            why.append(f"{name}: its allocatable {dict(status.allocatable)} cannot hold the gang")
        else:
            free = _amounts(status.free)
            tier = 0 if _fits(need, free) else 1
            ranked.append((tier, -_rank(weight, _headroom(need, free, total)), name))
    if ranked:
        return Choice(cluster=min(ranked)[2])
    wants = ", ".join(f"{k} {v}" for k, v in sorted(need.items()) if v)
    return Choice(
        reason="NoClusterReachable" if elsewhere else "NoClusterFits",
        message=f"no worker cluster can take the gang ({wants}): " + "; ".join(why),
    )
