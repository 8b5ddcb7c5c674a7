"""Go-style durations ("90s", "5m", "1h30m") as Volcano accepts them in policy timeouts.

They stay strings on the wire so a Job round-trips unchanged; `parse_duration` turns them into
`timedelta` at the edge, where the workflow needs a timer.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Final

from pydantic import Field

_UNIT_SECONDS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART: Final = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)"
DURATION_PATTERN: Final = rf"^(0|({_PART})+)$"

GoDuration = Annotated[str, Field(pattern=DURATION_PATTERN, max_length=64)]


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration; raises ValueError naming the text when it is not one."""
    if not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"invalid duration {text!r}: expected e.g. '90s', '5m', '1h30m'")
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in re.findall(_PART, text))
    return timedelta(seconds=seconds)


def whole_seconds(text: str) -> int | None:
    """Whole seconds, from `90` or a Go duration (`90s`, `3m`); None: not one. Caldera's own
    duration annotations read this way, at admission and where they are used."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        return int(parse_duration(text).total_seconds())
    except ValueError:
        return None


def positive_duration(text: str) -> timedelta | None:
    """A Go duration above zero, or None for anything else: how Volcano reads its optional
    durations (an sla waiting time), dropping a value it cannot use."""
    try:
        duration = parse_duration(text.strip())
    except ValueError:
        return None
    return duration if duration > timedelta(0) else None
