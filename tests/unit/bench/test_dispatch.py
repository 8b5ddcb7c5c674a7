"""The dispatch benchmark's pure parts: the options a run may take, the Jobs and the queue it
creates, and the figures and report built from the poll times."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from bench.dispatch import config, report, run, stack
from cli.devstack import clusters
from models.signals.dispatch import LOST_AFTER_ANNOTATION

OUT: Final = ["--out", "/tmp/x"]


def test_defaults_run_every_phase_in_order() -> None:
    opts = config.parse(OUT)
    assert opts.phases == ("single", "dispatch", "recovery")
    assert opts.workers == 2 and opts.lost_after == 30
    assert opts.out == Path("/tmp/x")


def test_the_result_folder_defaults_outside_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_RESULTS", "/tmp/results")
    out = config.parse(["--jobs", "50"]).out
    assert out.parent == Path("/tmp/results/dispatch") and out.name.startswith("50x2-")


@pytest.mark.parametrize(
    "argv",
    [
        ["--phases", "single,bogus"],
        ["--phases", "single,single"],
        ["--phases", "recovery"],  # nothing to move without the dispatch phase
        ["--workers", "1"],  # recovery needs a second cluster
        ["--workers", str(clusters.MAX_CLUSTERS + 1)],
        ["--lost-after", "5"],  # under Caldera's floor
        ["--jobs", "0"],
        ["--poll", "0"],
        ["--jobs", "500", "--nodes", "2", "--node-pods", "110"],  # the manager cannot hold them
        ["--jobs", "500", "--workers", "2", "--worker-nodes", "4"],  # one survivor holds 440
    ],
)
def test_options_that_could_not_measure_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        config.parse([*argv, *OUT])


def test_a_run_without_the_single_phase_does_not_need_manager_room() -> None:
    opts = config.parse(["--jobs", "500", "--nodes", "1", "--phases", "dispatch", *OUT])
    assert opts.phases == ("dispatch",)  # and both workers together hold 880 pods


def test_jobs_are_one_pod_volcano_jobs_in_the_queue_asked() -> None:
    docs = run.manifests("ns", 3, "multi")
    assert [d["metadata"]["name"] for d in docs] == ["s-00000", "s-00001", "s-00002"]
    spec = docs[0]["spec"]
    assert spec["queue"] == "multi" and spec["minAvailable"] == 1
    pod = spec["tasks"][0]["template"]["spec"]
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "100m"}


def test_the_dispatch_queue_names_every_worker_and_the_short_lost_after() -> None:
    doc = run.dispatch_queue(["worker-0", "worker-1"], 30)
    assert doc["metadata"]["name"] == clusters.QUEUE
    assert doc["metadata"]["annotations"] == {LOST_AFTER_ANNOTATION: "30s"}
    names = [c["name"] for c in doc["spec"]["extendClusters"]]
    assert names == ["worker-0", "worker-1"]


def test_a_poll_keeps_the_first_time_it_saw_a_state() -> None:
    seen: dict[str, float] = {}
    report.first_seen(seen, 1.0, ["a"])
    report.first_seen(seen, 2.0, ["a", "b"])
    assert seen == {"a": 1.0, "b": 2.0}


def test_phase_figures_from_creates_and_first_running_polls() -> None:
    created = {"a": 10.0, "b": 10.5, "c": 11.0}
    running = {"a": 12.0, "b": 13.5, "c": 15.0}
    fig = report.phase_figures(10.0, created, running, 3)
    assert fig["running"] == 3
    assert fig["makespan_s"] == 5.0 and fig["jobs_per_s"] == 0.6
    assert fig["latency_p50_s"] == 3.0 and fig["latency_max_s"] == 4.0


def test_no_makespan_until_every_job_ran() -> None:
    fig = report.phase_figures(10.0, {"a": 10.0, "b": 10.0}, {"a": 12.0}, 2)
    assert fig["running"] == 1 and fig["makespan_s"] is None and fig["jobs_per_s"] is None
    assert fig["latency_p50_s"] == 2.0


def test_placement_counts_jobs_per_cluster() -> None:
    assert report.placement(["worker-1", "worker-0", "worker-1", ""]) == {
        "manager": 1,
        "worker-0": 1,
        "worker-1": 2,
    }


def test_cpu_counts_processes_alive_at_both_snapshots_and_drops_those_asked() -> None:
    before = {"temporal": 1.0, "workers/kube-apiserver": 5.0, "manager/worker": 2.0}
    after = {"temporal": 2.5, "workers/kube-apiserver": 1.0, "manager/worker": 3.0, "new": 9.0}
    cpu = report.cpu(before, after, 4, drop=["workers/kube-apiserver"])
    assert cpu["per_process_s"] == {"manager/worker": 1.0, "temporal": 1.5}
    assert cpu["total_s"] == 2.5 and cpu["ms_per_job"] == 625.0


def test_add_ignores_a_process_already_gone() -> None:
    snap: dict[str, float] = {}
    report.add(snap, "workers/worker", 1.0)
    report.add(snap, "workers/worker", 2.0)
    report.add(snap, "workers/worker", None)
    assert snap == {"workers/worker": 3.0}


def _recovery(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "lost": "worker-0",
        "lost_after": 30,
        "affected": 2,
        "killed": 100.0,
        "remote": {"a": 141.0, "b": 143.0},
        "shown": {"a": 142.0, "b": 145.0},
        "restart_s": 3.0,
        "up": 150.0,
        "gone": {"copies": 160.0, "pods": 170.0},
        "left": (0, 0),
        "cpu": {"per_process_s": {}, "total_s": 0.0, "ms_per_job": 0.0},
    }
    return report.recovery_figures(**{**args, **over})


def test_recovery_times_run_from_the_kill_and_from_the_apiserver_back() -> None:
    fig = _recovery()
    assert fig["moved_s"] == 43.0 and fig["mirrored_s"] == 45.0
    assert fig["moved_over_lost_after_s"] == 13.0
    assert fig["moved_p50_s"] == 41.0
    assert fig["stale_copies_gone_s"] == 10.0 and fig["stale_pods_gone_s"] == 20.0


def test_recovery_not_reached_has_no_time() -> None:
    fig = _recovery(remote={"a": 141.0}, gone={}, left=(1, None))
    assert fig["moved_s"] is None and fig["moved_over_lost_after_s"] is None
    assert fig["stale_copies_gone_s"] is None and fig["stale_copies_left"] == 1


def _result() -> dict[str, Any]:
    cpu = {"per_process_s": {"temporal": 2.0}, "total_s": 2.0, "ms_per_job": 40.0}
    single = {"running": 50, "makespan_s": 10.0, "jobs_per_s": 5.0, "latency_p50_s": 2.0}
    dispatch = {"running": 50, "makespan_s": 25.0, "jobs_per_s": 2.0, "latency_p50_s": 5.0}
    return {
        "started_at": "2026-12-05T01:00:00",
        "options": {"jobs": 50, "workers": 2, "worker_nodes": 4, "nodes": 4, "poll": 0.5},
        "phases": {
            "single": {**single, "cpu": cpu},
            "dispatch": {**dispatch, "cpu": cpu, "placement": {"worker-0": 25, "worker-1": 25}},
            "recovery": _recovery(cpu=cpu),
        },
    }


def test_the_report_puts_dispatch_beside_the_single_cluster_path_with_ratios() -> None:
    text = report.markdown(_result())
    assert "| makespan (submit → all Running) | 10.0 s | 25.0 s | 2.5 |" in text
    assert "| throughput | 5.0 jobs/s | 2.0 jobs/s | 0.4 |" in text
    assert "| latency p99 | - | - | - |" in text
    assert "Dispatched to: worker-0 25, worker-1 25." in text
    assert "| kill → all copies Running elsewhere | 43.0 s |" in text
    assert "| temporal | 2.0 | 2.0 | 2.0 |" in text
    assert not report.failed(_result())


def test_a_failed_phase_is_reported_and_fails_the_run() -> None:
    result = _result()
    result["phases"]["recovery"] = {"error": "RuntimeError: boom"}
    text = report.markdown(result)
    assert "- recovery: RuntimeError: boom" in text and "## Recovery" not in text
    assert report.failed(result)


def test_ratio_needs_two_numbers() -> None:
    assert report.ratio(4.0, 2.0) == 2.0
    assert report.ratio(None, 2.0) is None and report.ratio(1.0, 0) is None


def test_write_keeps_json_and_markdown(tmp_path: Path) -> None:
    text = report.write(_result(), tmp_path / "r")
    assert (tmp_path / "r" / "report.md").read_text() == text
    assert '"jobs_per_s": 2.0' in (tmp_path / "r" / "result.json").read_text()


def test_a_job_without_a_state_yet_is_not_running() -> None:
    assert not stack.in_phase({"metadata": {"name": "a"}, "status": {"state": None}})
    assert stack.in_phase({"metadata": {"name": "a"}, "status": {"state": {"phase": "Running"}}})


def test_only_copies_of_moved_jobs_count_as_stale() -> None:
    copy = {"metadata": {"name": "a", "annotations": {"caldera.dev/dispatch-origin": "u"}}}
    local = {"metadata": {"name": "a"}}
    assert run._stale(copy, {"a"})
    assert not run._stale(copy, {"b"}) and not run._stale(local, {"a"})
