"""When a waiting job starts (`scheduling.api.estimate`): the queue replayed forward, running
jobs ending as the queue's record says, the line's gangs starting in order as they fit."""

from __future__ import annotations

import pytest

from scheduling.api.estimate import KEPT, NEVER, Running, RunRecord, Started, Waiting, forecast
from scheduling.api.vectors import Resources

pytestmark = pytest.mark.unit


def cpu(cores: int) -> Resources:
    return Resources.of(milli_cpu=cores * 1000)


RECORD = RunRecord(seconds=(100.0,) * 9 + (300.0,))  # median 100 s, 90th percentile 100, max 300


def test_a_gang_that_fits_starts_now_and_one_that_never_can_says_so() -> None:
    line = [Waiting("ns/small", cpu(2)), Waiting("ns/huge", cpu(64))]
    assert forecast(cpu(4), [Running(cpu(4), ran=10.0)], line, RECORD) == [
        Started("ns/small", 0.0, 0),
        Started("ns/huge", NEVER, 0),  # more than the room and everything running together
    ]


def test_a_job_behind_a_running_one_starts_when_the_record_says_it_ends() -> None:
    (started,) = forecast(cpu(0), [Running(cpu(4), ran=40.0)], [Waiting("ns/a", cpu(4))], RECORD)
    assert started == Started("ns/a", 60.0, 1)  # the median run is 100 s; it ran 40


def test_past_the_median_a_run_is_expected_to_the_longest_then_any_moment() -> None:
    assert RECORD.remaining(40.0) == 60.0
    assert RECORD.remaining(150.0) == 150.0  # past the median and the 90th: to the longest
    assert RECORD.remaining(400.0) == 0.0  # past every run recorded: any moment
    assert RunRecord().remaining(10.0) is None


def test_a_gang_that_does_not_fit_is_passed_over_and_the_ones_behind_go_first() -> None:
    line = [Waiting("ns/big", cpu(8)), Waiting("ns/small", cpu(2))]
    running = [Running(cpu(6), ran=90.0)]
    assert forecast(cpu(2), running, line, RECORD) == [
        # Not at 10 s, when the running job gives its 6 back: small took the idle 2 now, so
        # big waits for small's own median run too (allocate would pass it over the same way).
        Started("ns/big", 100.0, 2),
        Started("ns/small", 0.0, 0),
    ]


def test_jobs_started_by_the_replay_hold_their_gang_for_a_median_run() -> None:
    line = [Waiting("ns/first", cpu(4)), Waiting("ns/second", cpu(4))]
    first, second = forecast(cpu(0), [Running(cpu(4), ran=70.0)], line, RECORD)
    assert first == Started("ns/first", 30.0, 1)
    assert second == Started("ns/second", 130.0, 2)  # after first's own median run


def test_a_deadline_sooner_than_the_record_ends_the_run_then() -> None:
    running = [Running(cpu(4), ran=0.0, deadline=20.0)]
    (started,) = forecast(cpu(0), running, [Waiting("ns/a", cpu(4))], RECORD)
    assert started.start_in == 20.0


def test_without_a_record_only_what_fits_now_has_a_start() -> None:
    line = [Waiting("ns/now", cpu(1)), Waiting("ns/later", cpu(4))]
    assert [s.start_in for s in forecast(cpu(1), [Running(cpu(4), 5.0)], line, RunRecord())] == [
        0.0,
        NEVER,
    ]


def test_jobs_ending_together_give_their_room_back_at_once() -> None:
    running = [Running(cpu(2), ran=50.0), Running(cpu(2), ran=50.0)]
    (started,) = forecast(cpu(0), running, [Waiting("ns/a", cpu(4))], RECORD)
    assert started == Started("ns/a", 50.0, 2)


def test_the_record_keeps_the_latest_runs_only() -> None:
    record = RunRecord()
    for i in range(KEPT + 5):
        record = record.add(float(i))
    assert len(record.seconds) == KEPT and record.seconds[0] == 5.0
    assert record.add(-3.0).seconds[-1] == 0.0  # a clock step back is no negative run
    assert RECORD.quantile(0.5) == 100.0 and RECORD.quantile(1.0) == 300.0


def test_an_admitted_job_the_session_could_not_place_waits_for_something_to_end() -> None:
    # The room holds it, yet allocate left it unplaced (no single node fits it, a predicate):
    # it is expected once room comes back, not now; with nothing running, not at all.
    held = [Waiting("ns/a", cpu(2), held=True)]
    assert forecast(cpu(8), [Running(cpu(4), ran=90.0)], held, RECORD) == [Started("ns/a", 10.0, 1)]
    assert forecast(cpu(8), [], held, RECORD) == [Started("ns/a", NEVER, 0)]
