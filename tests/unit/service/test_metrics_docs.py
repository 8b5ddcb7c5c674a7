"""docs/reference/metrics.md says what service/metrics.py defines and what a real scrape shows.

- Its tables list every metric of `metrics.ALL`, with its type and labels, and nothing else.
- Every series of its sample scrape is a declared metric served by the process it was scraped
  from, carrying exactly its own labels plus the SDK's (the worker registry's, Volcano's
  series and the latencies, exactly their own); the values that name something in the
  code name something real: activity and workflow types registered on the task queue the
  series says (the worker's registration, worker.py), task queues of `models.task_queues`,
  signal names of `models.signals`, watched kinds, job phases.

The sample itself is refreshed by hand from a real run (the command is on the page).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import activities
import workflows
from forwarder.routing.envelopes import Kind
from models import task_queues
from models.signals import batchjob, common, cronjob, job, jobflow, podgroup, queue, scheduler
from models.vcjob import JobPhase
from service import metrics, metrics_endpoint
from workflows.queue import QueueWorkflow
from workflows.scheduler import SchedulerWorkflow

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "metrics.md"
SDK_LABELS = {"namespace", "task_queue", "service_name"}  # and workflow_type or activity_type
_SERIES = re.compile(r"^(?P<name>[a-z_][a-z0-9_]*)(?:\{(?P<labels>[^}]*)\})? \S+$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_ROW = re.compile(r"^\| `((?:caldera|volcano)_\w+)` \| (\w+) \|([^|]*)\|")
_PORTS = {metrics_endpoint.WORKER_PORT: "worker", metrics_endpoint.FORWARDER_PORT: "forwarder"}
_SIGNAL_MODULES = (batchjob, common, cronjob, job, jobflow, podgroup, queue, scheduler)


def _activity_names(fns: tuple[Callable[..., Any], ...]) -> set[str]:
    return {getattr(fn, "__temporal_activity_definition").name for fn in fns}


def _workflow_names(classes: tuple[type, ...]) -> set[str]:
    return {getattr(cls, "__temporal_workflow_definition").name for cls in classes}


# What each task queue runs, as worker.py registers it.
REGISTERED: dict[str, tuple[set[str], set[str]]] = {
    task_queues.CONTROLLERS: (_workflow_names(workflows.ALL), _activity_names(activities.ALL)),
    task_queues.SCHEDULER: (
        _workflow_names((SchedulerWorkflow,)),
        _activity_names(activities.SESSION),
    ),
    task_queues.QUEUES: (_workflow_names((QueueWorkflow,)), _activity_names(activities.ALL)),
}


def _constants(module: ModuleType, prefix: str) -> set[str]:
    return {v for k, v in vars(module).items() if k.startswith(prefix) and isinstance(v, str)}


SIGNALS = set().union(*(_constants(m, "SIGNAL_") for m in _SIGNAL_MODULES))
# Label values fixed by the code, per label (the others are free: counts, scheduler names).
VALUES: dict[str, set[str]] = {
    "phase": {str(p) for p in JobPhase},
    "kind": {str(k) for k in Kind},
    "type": {"ADDED", "MODIFIED", "DELETED", "LISTED"},
    "signal": SIGNALS,
    "outcome": {"ok", "error"},
    "reason": {"initial", "expired", "closed", "lost", "VolumeBinding", "BoundElsewhere"}
    | {"PodGone", "NodeNotFound", "BindRejected"},
    "task_queue": set(REGISTERED),
}


def _sample() -> Iterator[tuple[str, str, dict[str, str]]]:
    """(process scraped, series name, labels) for each series line of the page's scrape."""
    blocks = re.findall(r"^```\n(\$ curl.*?)^```", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    # The processes' scrape, and the worker's Volcano series while a job runs in a queue.
    assert len(blocks) == 2, "the page's sample scrapes (blocks starting `$ curl`) are gone"
    process = ""
    for line in "".join(blocks).splitlines():
        if line.startswith("$ "):
            port = re.search(r"127\.0\.0\.1:(\d+)/metrics", line)
            assert port, line
            process = _PORTS[int(port[1])]
            continue
        match = _SERIES.match(line)
        assert match, f"not a series line: {line}"
        yield process, match["name"], dict(_LABEL.findall(match["labels"] or ""))


def _metric(series: str) -> metrics.Metric:
    for m in metrics.ALL:
        suffixes = ("_bucket", "_sum", "_count") if m.kind == "histogram" else ("",)
        if series in {m.name + s for s in suffixes}:
            return m
    raise AssertionError(f"{series} is not declared in service/metrics.py")


def test_the_table_is_every_declared_metric() -> None:
    rows = {
        m[1]: (m[2], tuple(re.findall(r"`(\w+)`", m[3])))
        for line in PAGE.read_text().splitlines()
        if (m := _ROW.match(line))
    }
    assert rows == {m.name: (m.kind, m.labels) for m in metrics.ALL}


def test_the_sample_shows_both_processes() -> None:
    assert {process for process, _, _ in _sample()} == {"worker", "forwarder"}


_RESOURCE_FIGURES = (
    metrics.QUEUE_ALLOCATED,
    metrics.QUEUE_REQUEST,
    metrics.QUEUE_DESERVED,
    metrics.QUEUE_CAPACITY,
    metrics.QUEUE_REAL_CAPACITY,
    metrics.QUEUE_INQUEUE,
)


def test_the_sample_shows_volcanos_queue_series() -> None:
    shown = {series for process, series, _ in _sample() if process == "worker"}
    # Extended resources are left out, and the sample's queue sets no capability.
    left_out = {*metrics.QUEUE_CAPACITY, *(r.scalar_resources for r in _RESOURCE_FIGURES)}
    assert {m.name for m in metrics.QUEUE_GAUGES if m not in left_out} <= shown


@pytest.mark.parametrize(("process", "series", "labels"), list(_sample()), ids=str)
def test_each_sample_series_is_declared_with_its_labels(
    process: str, series: str, labels: dict[str, str]
) -> None:
    metric = _metric(series)
    assert metric.process == process, f"{series} is the {metric.process}'s"
    extra = set(labels) - set(metric.labels) - ({"le"} if series.endswith("_bucket") else set())
    if isinstance(metric, metrics.Gauge | metrics.Latency):  # the worker's registry: its own
        assert extra == set() and set(labels) >= set(metric.labels), labels
        return
    if process == "forwarder":
        assert extra == {"service_name"}
        return
    kinds = extra - SDK_LABELS
    assert extra >= SDK_LABELS and kinds in ({"workflow_type"}, {"activity_type"}), extra
    workflow_types, activity_types = REGISTERED[labels["task_queue"]]
    if "activity_type" in labels:
        assert labels["activity_type"] in activity_types, "not an activity on that task queue"
    else:
        assert labels["workflow_type"] in workflow_types, "not a workflow on that task queue"


@pytest.mark.parametrize(("process", "series", "labels"), list(_sample()), ids=str)
def test_each_sample_label_value_is_real(process: str, series: str, labels: dict[str, str]) -> None:
    for label, value in labels.items():
        if label in VALUES:
            assert value in VALUES[label], f"{label}={value!r}"
