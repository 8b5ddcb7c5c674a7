"""How the job and queue commands print: aligned tables for people, JSON or YAML for scripts.

Pure formatting (no clients): every command builds plain rows or mappings and hands them here,
so the three formats always carry the same fields.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import yaml

from cli.history import Entry
from models.meta import parse_time

HISTORY_HEADERS: Final = ("TIME", "EVENT", "DETAIL")


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


def add_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--output",
        type=Format,
        choices=list(Format),
        default=Format.TABLE,
        help="table (default), json or yaml",
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """kubectl-style columns: left-aligned, three spaces apart, no trailing blanks."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = []
    for row in [list(headers), *cells]:
        padded = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append("   ".join(padded).rstrip())
    return "\n".join(lines)


def records(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[dict[str, object]]:
    """The same rows for JSON/YAML: keys are the headers in lower snake case."""
    keys = [h.lower().replace(" ", "_") for h in headers]
    return [dict(zip(keys, row, strict=True)) for row in rows]


def dump(data: object, fmt: Format) -> str:
    """JSON (indented) or YAML (block style, keys in the order given)."""
    if fmt is Format.JSON:
        return json.dumps(data, indent=2, default=str)
    if fmt is Format.YAML:
        text: str = yaml.safe_dump(_plain(data), sort_keys=False, allow_unicode=True)
        return text.rstrip("\n")
    raise ValueError(f"dump takes json or yaml, got {fmt}")


def history(entries: Sequence[Entry], workflow_id: str, url: str, fmt: Format) -> str:
    """A workflow's timeline and its UI link; JSON/YAML carry both."""
    if fmt is Format.TABLE:
        rows = [(_millis(e.time), e.kind, e.detail) for e in entries]
        return f"{table(HISTORY_HEADERS, rows)}\n\nworkflow {workflow_id}: {url}"
    data = {"workflow_id": workflow_id, "url": url, "events": [e.model_dump() for e in entries]}
    return dump(data, fmt)


def fields(pairs: Sequence[tuple[str, object]]) -> str:
    """`key:   value` lines for a detail view, keys aligned."""
    width = max((len(k) for k, _ in pairs), default=0) + 1
    return "\n".join(f"{(k + ':').ljust(width)}  {_cell(v)}".rstrip() for k, v in pairs)


def age(created: str | None, now: datetime) -> str:
    """kubectl's AGE column: 45s, 12m, 5h, 3d; `<unknown>` without a timestamp."""
    then = parse_time(created)
    if then is None:
        return "<unknown>"
    return span((now - then).total_seconds())


def span(seconds: float) -> str:
    """A length of time as kubectl's AGE column writes it: 45s, 12m, 5h, 3d."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 120 * 60:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _millis(time: str) -> str:
    """Temporal writes nanoseconds; a timeline reads better to the millisecond."""
    return re.sub(r"(\.\d{3})\d+Z$", r"\1Z", time)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def _plain(data: Any) -> Any:
    """YAML's safe dumper knows only builtins: turn enums and other scalars into strings."""
    if isinstance(data, Mapping):
        return {str(k): _plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(v) for v in data]
    if data is None or isinstance(data, bool | int | float):
        return data
    return str(data)
