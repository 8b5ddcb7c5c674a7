"""The Grafana dashboard reads only metrics Caldera declares (its own and Volcano's), by labels
they carry, and shows every one of them; `tests/e2e/test_metrics.py` checks its names against a
real scrape."""

from __future__ import annotations

from collections import Counter

from service import metrics
from tests import grafana

SDK_LABELS = {"namespace", "task_queue", "workflow_type", "activity_type", "service_name"}


def _series(metric: metrics.Metric) -> set[str]:
    if metric.kind == "histogram":
        return {f"{metric.name}_{suffix}" for suffix in ("bucket", "sum", "count")}
    return {metric.name}


def _declared() -> dict[str, metrics.Metric]:
    return {series: m for m in metrics.ALL for series in _series(m)}


def test_every_caldera_series_a_panel_reads_is_declared() -> None:
    ours = {n for n in grafana.metric_names() if n.startswith(("caldera_", "volcano_"))}
    assert ours and ours <= set(_declared()), ours - set(_declared())


def test_the_queues_row_reads_volcanos_queue_series_by_queue() -> None:
    """A Volcano dashboard's series, one value per queue however many workers serve them."""
    queues = [e for e in grafana.expressions() if "volcano_queue_" in e]
    assert queues and all("max by (queue_name" in e for e in queues), queues


def test_every_declared_metric_has_a_panel() -> None:
    read = grafana.metric_names()
    missing = [m.name for m in metrics.ALL if not _series(m) & read]
    assert missing == []


def test_panels_group_caldera_series_by_their_own_labels() -> None:
    declared = _declared()
    for expr in grafana.expressions():
        for name in grafana.metric_names() & set(declared):
            if name in expr:
                extra = grafana.grouped_labels(expr) - set(declared[name].labels) - SDK_LABELS
                assert not extra, (expr, extra)


def test_panel_ids_are_unique_and_every_panel_queries() -> None:
    panels = grafana.panels()
    ids = Counter(p["id"] for p in panels)
    assert [i for i, n in ids.items() if n > 1] == []
    assert all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in panels)
