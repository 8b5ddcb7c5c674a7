"""The metrics declared (`service/metrics.py`): names, labels, Volcano's buckets, the activity
meter, and the docs table that documents every metric (stale docs fail here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from service import metrics

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
# The table of metrics: searched in README.md and docs/, wherever the text has moved.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_activity_meter_outside_an_activity_is_a_noop() -> None:
    metrics.PODS_BOUND.on(metrics.activity_meter()).add(1)  # must not raise


@pytest.mark.parametrize("metric", metrics.ALL, ids=lambda m: m.name)
def test_docs_document_every_metric(metric: metrics.Metric) -> None:
    rows = [
        line
        for page in PAGES
        for line in page.read_text().splitlines()
        if line.startswith(f"| `{metric.name}`")
    ]
    assert rows, f"docs: no table row for {metric.name}"
    row = rows[0]
    assert metric.kind in row
    for label in metric.labels:
        assert f"`{label}`" in row, f"docs: {metric.name} row lacks label {label}"


def test_every_metric_is_prefixed_and_unique() -> None:
    names = [m.name for m in metrics.ALL]
    assert len(names) == len(set(names))
    # Volcano's own series keep Volcano's names; they live in the worker's registry.
    volcano = [m for m in metrics.ALL if m.name.startswith("volcano_")]
    assert all(isinstance(m, metrics.Gauge | metrics.Latency) for m in volcano)
    assert all(n.startswith(("caldera_", "volcano_")) for n in names)


def test_volcano_buckets_are_volcanos() -> None:
    """prometheus.ExponentialBucketsRange(1, 5000, 20) and (100, 120000, 30)."""
    session = metrics.E2E_SCHEDULING_LATENCY.buckets
    assert len(session) == 20 and session[0] == 1 and session[-1] == pytest.approx(5000)
    assert session[1] == pytest.approx(5000 ** (1 / 19))
    job = metrics.E2E_JOB_SCHEDULING_LATENCY.buckets
    assert len(job) == 30 and job[0] == 100 and job[-1] == pytest.approx(120000)


def test_volcano_queue_series_names_and_labels() -> None:
    names = {g.name: g.labels for g in metrics.QUEUE_GAUGES}
    for figure in ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue"):
        assert names[f"volcano_queue_{figure}_milli_cpu"] == ("queue_name",)
        assert names[f"volcano_queue_{figure}_memory_bytes"] == ("queue_name",)
        assert names[f"volcano_queue_{figure}_scalar_resources"] == ("queue_name", "resource")
    for phase in ("inqueue", "pending", "running", "unknown", "completed"):
        assert names[f"volcano_queue_pod_group_{phase}_count"] == ("queue_name",)
    for gauge in ("share", "weight", "overused"):
        assert names[f"volcano_queue_{gauge}"] == ("queue_name",)
    assert len(names) == 26
