"""What a job costs, counted across every workflow it touches: the shared workflows' events in a
window, the report's per-job budget and shared-workflow tables, and the curve over runs; all
from hand-made events and results, without a server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent, MarkerRecordedEventAttributes
from temporalio.service import RPCError, RPCStatusCode

from bench.sidebyside import curve, report, temporal_stats

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
TARGET = T0 + timedelta(seconds=60)
DELETED = TARGET + timedelta(seconds=30)
E = EventType


def _event(kind: int, at: float, marker: str = "") -> HistoryEvent:
    """An event of type `kind` at T0 + `at` seconds (a marker named `marker`)."""
    event = HistoryEvent(event_type=kind)  # type: ignore[arg-type]
    event.event_time.FromDatetime(T0 + timedelta(seconds=at))
    if marker:
        event.marker_recorded_event_attributes.CopyFrom(
            MarkerRecordedEventAttributes(marker_name=marker)
        )
    return event


def _cycle(at: float) -> list[HistoryEvent]:
    """A signal answered by one workflow task with a local activity and an upsert."""
    return [
        _event(E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, at),
        _event(E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, at),
        _event(E.EVENT_TYPE_WORKFLOW_TASK_STARTED, at),
        _event(E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, at),
        _event(E.EVENT_TYPE_MARKER_RECORDED, at, marker="core_local_activity"),
        _event(E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, at),
    ]


# The scheduler continued as new at 50 s; one of its events is before the window, one at the
# target (the deletion window's, not the run's); a queue; a PodGroup; a job (not shared).
RUNS: list[tuple[str, list[HistoryEvent]]] = [
    (
        "scheduler/volcano",
        [
            _event(E.EVENT_TYPE_TIMER_STARTED, -5),
            *_cycle(10),
            _event(E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, 20),
            _event(E.EVENT_TYPE_MARKER_RECORDED, 20, marker="core_patch"),
        ],
    ),
    ("scheduler/volcano", [*_cycle(55), _event(E.EVENT_TYPE_TIMER_STARTED, 60)]),
    ("queue/default", [*_cycle(1), *_cycle(70)]),
    ("podgroup/ns/uid-1", _cycle(80)),
    ("vcjob/ns/a", _cycle(5)),
]


def test_shared_counts_in_window_counts_every_run_of_each_kind_and_nothing_outside() -> None:
    shared = temporal_stats.shared_counts(RUNS, (T0, TARGET))
    scheduler, queue, podgroup = (shared["by_kind"][k] for k in ("scheduler", "queue", "podgroup"))
    assert (scheduler["workflows"], scheduler["runs"], scheduler["events"]) == (1, 2, 14)
    assert (scheduler["workflow_tasks"], scheduler["signals"], scheduler["upserts"]) == (2, 2, 2)
    assert scheduler["local_activities"] == 2  # the patch marker is no local activity
    assert (scheduler["activities"], scheduler["timers"]) == (1, 0)
    assert scheduler["events_by_type"]["MARKER_RECORDED"] == 3
    assert (queue["runs"], queue["events"], queue["workflow_tasks"]) == (1, 6, 1)
    assert podgroup == {**podgroup, "workflows": 0, "runs": 0, "events": 0}
    assert (shared["events"], shared["workflow_tasks"], shared["seconds"]) == (20, 3, 60.0)


def test_shared_counts_adjacent_windows_count_an_event_at_the_boundary_once() -> None:
    run = temporal_stats.shared_counts(RUNS, (T0, TARGET))
    deletion = temporal_stats.shared_counts(RUNS, (TARGET, DELETED))
    assert deletion["by_kind"]["scheduler"]["timers"] == 1  # the timer at the target
    assert deletion["by_kind"]["queue"]["events"] == 6
    assert deletion["by_kind"]["podgroup"]["events"] == 6
    everything = temporal_stats.shared_counts(RUNS, (T0 - timedelta(hours=1), DELETED))
    assert run["events"] + deletion["events"] + 1 == everything["events"]  # + the early timer


def test_tally_counts_the_job_figures_of_a_history() -> None:
    counts = temporal_stats.tally([*_cycle(0), *_cycle(1), _event(E.EVENT_TYPE_TIMER_STARTED, 2)])
    assert counts == {
        "workflow_tasks": 2,
        "activities": 0,
        "local_activities": 2,
        "signals": 2,
        "timers": 1,
        "upserts": 2,
    }


@pytest.mark.parametrize(
    "error",
    [RPCError("visibility down", RPCStatusCode.UNAVAILABLE, b""), RuntimeError("loop")],
    ids=["rpc", "other"],
)
def test_probe_shared_read_failing_yields_none_per_window(error: Exception) -> None:
    probe = temporal_stats.Probe.__new__(temporal_stats.Probe)  # no server to connect to
    probe._loop = asyncio.new_event_loop()

    async def refuse(span: temporal_stats.Window) -> Any:
        raise error

    probe._shared_runs = refuse  # type: ignore[method-assign]
    try:
        windows = {"run": (T0, TARGET), "deletion": (TARGET, DELETED)}
        assert probe.shared(windows) == {"run": None, "deletion": None}
    finally:
        probe.close()


def _side(jobs: int, cpu_ms: float, *, own: float | None = 20.0, shared: bool = True) -> Any:
    """A Caldera side's result as `runner.run_side` writes it, with only what the tables read."""
    at_target = temporal_stats.shared_counts(RUNS, (T0, TARGET)) if shared else None
    cpu = {"per_process_s": {"worker": cpu_ms * jobs / 2000, "temporal": cpu_ms * jobs / 2000}}
    return {
        "jobs": jobs,
        "pods_target": jobs,
        "failing_jobs": 0,
        "reached": True,
        "submit": {"seconds": 1.0},
        "makespan_s": jobs / 10,
        "makespan_watch_s": jobs / 10,
        "makespan_status_s": None,
        "makespan_poll_s": None,
        "pods_per_s": 10.0,
        **dict.fromkeys(
            ["latency_p50_s", "latency_p99_s", "latency_watch_p50_s", "latency_watch_p99_s"]
        ),
        "cpu_run": {**cpu, "total_s": cpu_ms * jobs / 1000, "ms_per_job": cpu_ms},
        "cpu_delete": {**cpu, "total_s": 1.0, "ms_per_job": 1.0},
        "deletion": {
            "deletion_s": 30.0,
            "capped": False,
            "remaining_at_cap": {},
            "gone_s": {},
            "namespace_gone_s": 30.0,
        },
        "apiserver": {
            "requests_per_job": {"POST pods": 1.0},
            "request_seconds_per_job": {"POST pods": 0.01},
            "requests_per_job_total": 12.3,
            "cel_seconds_per_job": 0.0,
            "webhook_seconds_per_job": {},
        },
        "temporal_at_target": {
            "events_mean": own,
            "workflow_tasks": 3.0,
            "activities": 0.0,
            "local_activities": 3.0,
            "signals": 3.0,
        },
        "shared_workflows_at_target": at_target,
        "shared_workflows_deletion": temporal_stats.shared_counts(RUNS, (TARGET, DELETED)),
    }


def _section(text: str, title: str) -> list[str]:
    body = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return [line for line in body.splitlines() if line.startswith("|")]


def test_report_budget_adds_the_jobs_share_of_the_shared_workflows() -> None:
    result = {
        "started_at": "now",
        "options": {
            **{"sides": ["caldera"], "shape": "singles", "jobs": 10, "threads": 1},
            **{"nodes": 1, "node_cpu": "32", "node_pods": 110},
        },
        "sides": {"caldera": _side(10, 200.0)},
        "ratios": {},
    }
    per = report.per_job(result["sides"]["caldera"])
    assert (per["events_own"], per["events_scheduler"], per["events_queue"]) == (20.0, 1.4, 0.6)
    assert (per["events"], per["workflow_tasks"], per["signals"]) == (22.0, 3.3, 3.3)
    (_, _, row) = _section(report.markdown(result), "Per-job budget (to Running)")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["caldera", "20.0 / 1.40 / 0.60 / 0.00", "**22.0**", "3.30 (3.00 + 0.30)"]
    assert cells[7:9] == ["**12.3**", "**200.0**"]
    assert cells[9] == "worker 100.0, temporal 100.0"


def test_report_shared_table_shows_each_kind_in_the_run_and_the_deletion() -> None:
    sides = {"caldera": _side(10, 200.0)}
    rows = report._shared_table(["caldera"], sides)[2:]
    assert [r.split("|")[2].strip() for r in rows] == ["scheduler", "queue", "podgroup"]
    assert "| 14 / 1 |" in rows[0] and "| 6 / 6 |" in rows[1] and "| 0 / 6 |" in rows[2]


def test_curve_rows_per_run_smallest_first_with_missing_sides_and_keys_as_dashes() -> None:
    small = {"options": {"shape": "singles", "jobs": 100}, "sides": {"caldera": _side(100, 200.0)}}
    old = _side(1000, 300.0, shared=False)
    del old["apiserver"]
    large = {
        "options": {"shape": "singles", "jobs": 1000},
        "sides": {"builtin": {"makespan_s": 20.0}, "caldera": old, "volcano": {"skipped": "no"}},
    }
    lines = curve.table([("r/big/result.json", large), ("r/small/result.json", small)])
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert [r[:2] for r in rows] == [
        ["singles 100 (`small`)", "caldera"],
        ["", "builtin"],
        ["singles 1000 (`big`)", "caldera"],
        ["", "builtin"],
    ]
    assert rows[0][2:] == ["10.0", "10.0", "200.0", "20.2", "12.3", "30.0", "1.00x"]
    assert rows[1][2:] == ["-"] * 7
    assert rows[2][4:] == ["300.0", "20.0 (own only)", "-", "30.0", "1.50x"]
    assert rows[3][2] == "20.0"
