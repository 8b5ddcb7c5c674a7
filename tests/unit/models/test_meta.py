"""The one reading of an apiserver timestamp every translator, planner and CLI column uses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.meta import parse_time

pytestmark = pytest.mark.unit


def test_an_apiserver_stamp_reads_as_an_aware_utc_time() -> None:
    assert parse_time("2026-12-07T01:02:03Z") == datetime(2026, 12, 7, 1, 2, 3, tzinfo=UTC)
    assert parse_time("2026-12-07T01:02:03.5+00:00") == datetime(
        2026, 12, 7, 1, 2, 3, 500000, tzinfo=UTC
    )


def test_a_stamp_without_an_offset_is_utc() -> None:
    assert parse_time("2026-12-07T01:02:03") == datetime(2026, 12, 7, 1, 2, 3, tzinfo=UTC)


@pytest.mark.parametrize("text", [None, "", "yesterday", 1733533323, "2026-13-40T00:00:00Z"])
def test_an_absent_or_malformed_stamp_is_no_stamp(text: object) -> None:
    assert parse_time(text) is None
