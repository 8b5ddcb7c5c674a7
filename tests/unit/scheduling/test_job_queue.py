"""`JobQueue` picks what `min` over the list would pick, each pick, including a job put back
with a new order (the allocate loop puts a gang back once part of it is placed)."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

from models.keys import JobKey
from scheduling.framework.ordering import JobOrder, JobQueue

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_picks_in_job_order_and_orders_a_job_put_back_afresh() -> None:
    orders: dict[JobKey, JobOrder] = {
        JobKey("ns/a"): (0, False, Fraction(1, 2), T0, "ns/a"),
        JobKey("ns/b"): (-1, False, Fraction(0), T0, "ns/b"),  # higher priority first
        JobKey("ns/c"): (0, False, Fraction(0), T0, "ns/c"),
        JobKey("ns/d"): (0, True, Fraction(0), T0, "ns/d"),  # ready: after the not-ready
    }
    queue = JobQueue(sorted(orders), orders.__getitem__)
    assert sorted(queue) == sorted(orders)
    picks = [queue.pop(), queue.pop()]
    assert picks == ["ns/b", "ns/c"]
    # `c` got a share while it was placed: back in the queue it now comes after `a`.
    orders[JobKey("ns/c")] = (0, False, Fraction(3, 4), T0, "ns/c")
    queue.push(JobKey("ns/c"))
    rest = []
    while queue:
        rest.append(queue.pop())
    assert rest == ["ns/a", "ns/c", "ns/d"]
