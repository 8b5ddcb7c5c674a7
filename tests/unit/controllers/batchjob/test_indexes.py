"""completedIndexes / failedIndexes as the controller prints and parses them."""

from __future__ import annotations

import pytest

from controllers.batchjob import indexes


@pytest.mark.parametrize(
    ("given", "completions", "intervals"),
    [
        pytest.param("", 5, (), id="empty"),
        pytest.param("0", 5, ((0, 0),), id="one"),
        pytest.param("1,3-5", 10, ((1, 1), (3, 5)), id="mixed"),
        pytest.param("1,2", 10, ((1, 2),), id="adjacent-joined"),
        pytest.param("1,3-7,9", 5, ((1, 1), (3, 4)), id="clipped-at-completions"),
        pytest.param("x,2", 5, ((2, 2),), id="malformed-part-skipped"),
    ],
)
def test_parse(given: str, completions: int, intervals: indexes.Intervals) -> None:
    assert indexes.parse(given, completions) == intervals


@pytest.mark.parametrize(
    ("members", "text"),
    [
        pytest.param([], "", id="none"),
        pytest.param([3], "3", id="single"),
        pytest.param([3, 4], "3,4", id="pair-with-comma"),
        pytest.param([3, 4, 5], "3-5", id="run-with-dash"),
        pytest.param([5, 1, 3, 4], "1,3-5", id="unordered-input"),
        pytest.param([0, 2, 4, 6], "0,2,4,6", id="gaps"),
    ],
)
def test_text(members: list[int], text: str) -> None:
    assert indexes.text(indexes.with_indexes((), members)) == text


def test_merge_joins_overlapping_and_adjacent() -> None:
    merged = indexes.merge(((0, 2), (6, 6)), ((3, 4), (8, 9)))
    assert merged == ((0, 4), (6, 6), (8, 9))
    assert indexes.total(merged) == 8
    assert indexes.has(merged, 4) and not indexes.has(merged, 5)


def test_overlap_counts_shared_indexes() -> None:
    assert indexes.overlap(((0, 4),), ((2, 3), (4, 9))) == 3
