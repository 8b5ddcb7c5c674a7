"""The workload's draws and the estimates' accuracy: pure, so both are unit-tested.

Run lengths are log-normal around a mean (jobs of one queue are alike, with a long tail);
arrivals are a Poisson stream that keeps the queue busy (the mean arrival gap is the mean run
divided by the jobs the queue runs at once, times `load`'s inverse).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple


class Planned(NamedTuple):
    name: str
    at: float  # seconds after the first submission
    run_seconds: int


def plan(
    jobs: int, mean_run: float, sigma: float, at_once: int, load: float, seed: int
) -> list[Planned]:
    """`jobs` jobs, their submission times and run lengths (whole seconds, at least 1)."""
    draw = random.Random(seed)
    mu = math.log(mean_run) - sigma**2 / 2  # the log-normal's mean is then `mean_run`
    gap = mean_run / at_once / load
    at, out = 0.0, []
    for i in range(jobs):
        out.append(Planned(f"est-{i:03d}", at, max(1, round(draw.lognormvariate(mu, sigma)))))
        at += draw.expovariate(1 / gap)
    return out


class Told(NamedTuple):
    name: str
    told_at: datetime  # when the first estimate was read
    estimate: datetime  # the start it gave
    started: datetime  # when the pod started


class Accuracy(NamedTuple):
    estimated: int  # jobs that were given an estimate before they started
    median_error_s: float
    p90_error_s: float
    median_lead_s: float  # how long before the start the first estimate came
    median_relative: float  # |estimate - start| over that lead: the error per second ahead


def accuracy(told: Sequence[Told]) -> Accuracy:
    """Median and 90th percentile (nearest rank) of |estimate - actual start|, and the median
    error as a share of how far ahead the estimate was given (an estimate two minutes ahead
    off by 20 s and one ten minutes ahead off by 100 s are as good)."""
    if not told:
        return Accuracy(0, math.nan, math.nan, math.nan, math.nan)
    errors = sorted(abs((t.estimate - t.started).total_seconds()) for t in told)
    leads = [(t.started - t.told_at).total_seconds() for t in told]
    relative = [
        abs((t.estimate - t.started).total_seconds()) / lead
        for t, lead in zip(told, leads, strict=True)
        if lead > 0
    ]
    p90 = errors[min(len(errors) - 1, math.ceil(0.9 * len(errors)) - 1)]
    return Accuracy(
        len(told),
        statistics.median(errors),
        p90,
        statistics.median(leads),
        statistics.median(relative) if relative else math.nan,
    )
