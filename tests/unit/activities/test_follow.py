"""The long poll's lease rule: a lease that ran out is never pushed on (its cluster may be
aborting the copy that moment, and the answer must still show the lease that ran out)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from activities.dispatch.follow import lapsed

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def test_a_lease_ahead_is_renewed_and_one_run_out_is_not() -> None:
    assert not lapsed(NOW + 5 * S, None, NOW)
    assert lapsed(NOW - S, None, NOW)
    assert lapsed(NOW, None, NOW)  # its cluster's timer fires at that very time


def test_the_lease_this_poll_wrote_counts_though_the_copy_was_read_before_it() -> None:
    assert not lapsed(NOW - S, NOW + 9 * S, NOW)  # read before our renewal, then not re-read
    assert lapsed(NOW - 9 * S, NOW - S, NOW)  # the poll was away past its own renewal


def test_a_copy_without_a_lease_is_renewed() -> None:
    assert not lapsed(None, None, NOW)
