"""`bench.estimate`'s pure part: the workload it draws and the accuracy it reports."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from bench.estimate import accuracy
from bench.estimate.accuracy import Told

pytestmark = pytest.mark.unit
T0 = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def test_the_plan_is_seeded_ordered_and_around_its_mean() -> None:
    plan = accuracy.plan(400, mean_run=20.0, sigma=0.5, at_once=2, load=1.5, seed=7)
    assert plan == accuracy.plan(400, 20.0, 0.5, 2, 1.5, 7)  # the same seed, the same stream
    assert [p.at for p in plan] == sorted(p.at for p in plan) and plan[0].at == 0.0
    runs = [p.run_seconds for p in plan]
    assert min(runs) >= 1 and 17 <= sum(runs) / len(runs) <= 23
    gaps = plan[-1].at / (len(plan) - 1)
    assert 5.0 <= gaps <= 8.5  # 20 s / 2 at once / 1.5 = 6.7 s between arrivals


def test_accuracy_is_the_median_and_p90_of_the_absolute_errors() -> None:
    told = [
        Told(f"j{i}", T0, T0 + timedelta(seconds=60), T0 + timedelta(seconds=60 + e))
        for i, e in enumerate([-10, 0, 5, 5, 20, -30, 1, 2, 3, 4])
    ]
    found = accuracy.accuracy(told)
    assert found.estimated == 10
    assert found.median_error_s == 4.5  # |errors| 0 1 2 3 4 5 5 10 20 30
    assert found.p90_error_s == 20.0
    assert found.median_lead_s == 62.5
    assert math.isnan(accuracy.accuracy([]).median_error_s)


def test_the_relative_error_weighs_each_error_by_how_far_ahead_it_was_told() -> None:
    told = [  # 10 s off two minutes ahead, 60 s off ten minutes ahead, 1 s off 10 s ahead
        Told("near", T0, T0 + timedelta(seconds=130), T0 + timedelta(seconds=120)),
        Told("far", T0, T0 + timedelta(seconds=540), T0 + timedelta(seconds=600)),
        Told("now", T0, T0 + timedelta(seconds=11), T0 + timedelta(seconds=10)),
    ]
    assert accuracy.accuracy(told).median_relative == 0.1
