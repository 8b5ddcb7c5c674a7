"""Completion indexes as ordered intervals: `status.completedIndexes` / `failedIndexes` ("1,3-5").

The built-in controller's orderedIntervals, reproduced: parsing stops at the first index at or
beyond `completions` (and clips the last interval), two adjacent indexes print as "3,4" and
three or more as "3-5". Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

Interval = tuple[int, int]  # first, last (inclusive)
Intervals = tuple[Interval, ...]  # sorted, disjoint, never adjacent


def parse(text: str | None, completions: int) -> Intervals:
    """Intervals of `text`; malformed parts are skipped, as the controller skips them."""
    if not text:
        return ()
    out: list[Interval] = []
    for part in text.split(","):
        bounds = part.split("-")
        try:
            first = int(bounds[0])
        except ValueError:
            continue
        if first >= completions:
            break
        last = first
        if len(bounds) > 1:
            try:
                last = min(int(bounds[1]), completions - 1)
            except ValueError:
                continue
        if out and out[-1][1] == first - 1:
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return tuple(out)


def merge(a: Intervals, b: Intervals) -> Intervals:
    """The union of two interval lists, adjacent intervals joined."""
    out: list[Interval] = []
    for first, last in sorted((*a, *b)):
        if out and first <= out[-1][1] + 1:
            if last > out[-1][1]:
                out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return tuple(out)


def with_indexes(a: Intervals, indexes: Iterable[int]) -> Intervals:
    return merge(a, tuple((i, i) for i in sorted(set(indexes))))


def total(a: Intervals) -> int:
    return sum(last - first + 1 for first, last in a)


def has(a: Intervals, index: int) -> bool:
    return any(first <= index <= last for first, last in a)


def text(a: Intervals) -> str:
    parts = []
    for first, last in a:
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts.append(f"{first},{last}")
        else:
            parts.append(f"{first}-{last}")
    return ",".join(parts)


def overlap(a: Intervals, b: Intervals) -> int:
    """How many indexes both lists hold."""
    return sum(max(0, min(l1, l2) - max(f1, f2) + 1) for f1, l1 in a for f2, l2 in b)
