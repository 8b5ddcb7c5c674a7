"""What the Grafana dashboard (deploy/grafana/caldera-dashboard.json) queries: each panel's
PromQL, and the metric names and labels in it, for the tests that check them against the
metrics Caldera declares and the series a real worker and forwarder serve."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

DASHBOARD: Final = Path(__file__).parent.parent / "deploy" / "grafana" / "caldera-dashboard.json"
_METRIC: Final = re.compile(r"\b((?:caldera|volcano|temporal)_[a-z0-9_]+)\b")
_BY: Final = re.compile(r"\bby \(([^)]*)\)")


def panels() -> list[dict[str, Any]]:
    """The panels that query (rows hold none)."""
    found: list[dict[str, Any]] = json.loads(DASHBOARD.read_text())["panels"]
    return [p for p in found if p["type"] != "row"]


def expressions() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]


def metric_names() -> set[str]:
    """Every series name a panel reads (a histogram as its `_bucket` series)."""
    return {name for e in expressions() for name in _METRIC.findall(e)}


def grouped_labels(expr: str) -> set[str]:
    """The labels an expression sums by (`le` is the histogram's own)."""
    return {label.strip() for group in _BY.findall(expr) for label in group.split(",")} - {"le"}
