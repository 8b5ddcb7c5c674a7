"""The dispatch soak's pure parts: its options, its Jobs, its fault plan, the invariants on
recorded samples and phase stories, and its section of the report."""

from __future__ import annotations

from typing import Any, Final

import pytest

from bench.dispatch import config, invariants, report, soak
from bench.dispatch.invariants import Overlap, Sample

OUT: Final = ["--out", "/tmp/x"]


def test_the_soak_runs_only_when_asked_with_its_defaults() -> None:
    assert "soak" not in config.parse(OUT).phases
    opts = config.parse(["--phases", "soak", "--soak-run-seconds", "25-35", *OUT])
    assert opts.phases == ("soak",)
    assert opts.soak_minutes == 10 and opts.soak_run_seconds == (25, 35)


@pytest.mark.parametrize(
    "argv",
    [
        ["--soak-run-seconds", "40-20"],
        ["--soak-run-seconds", "0-5"],
        ["--soak-run-seconds", "abc"],
        ["--soak-minutes", "0"],
        ["--soak-fault-every", "5"],
    ],
)
def test_soak_options_that_could_not_run_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        config.parse(["--phases", "soak", *argv, *OUT])


def test_a_soak_job_is_a_gang_in_the_dispatching_queue_whose_pods_succeed() -> None:
    doc = soak.manifest("sk-0002", "ns", 3, 25)
    assert doc["spec"]["queue"] == "multi" and doc["spec"]["minAvailable"] == 3
    template = doc["spec"]["tasks"][0]["template"]
    assert template["metadata"]["annotations"] == {"sim.caldera.dev/run-seconds": "25"}


def test_the_fault_plan_takes_each_fault_in_turn_over_both_clusters() -> None:
    plan = soak.fault_plan(minutes=5, every=30, workers=2, lost_after=20)
    assert [f.at for f in plan[:3]] == [15, 45, 75] and plan[-1].at < 300
    assert [f.kind for f in plan[:4]] == [
        soak.APISERVER,
        soak.MANAGER_WORKER,
        soak.APISERVER,
        soak.CLUSTER_WORKER,
    ]
    apiservers = [(f.cluster, f.down) for f in plan if f.kind == soak.APISERVER]
    # well within the lease (10 s), past lost-after, past the lease only, past lost-after
    assert apiservers[:4] == [(0, 3.0), (1, 35.0), (0, 16.0), (1, 35.0)]
    kills = [f.cluster for f in plan if f.kind == soak.CLUSTER_WORKER]
    assert kills[:2] == [0, 1]


def test_phases_keep_each_change_once() -> None:
    phases: dict[str, list[tuple[float, str]]] = {}
    for at, phase in [(1, "Pending"), (2, "Pending"), (3, ""), (4, "Running"), (5, "Completed")]:
        invariants.record_phase(phases, "a", at, phase)
    assert phases == {"a": [(1, "Pending"), (4, "Running"), (5, "Completed")]}


STORY: Final = [(1.0, "Pending"), (2.0, "Running"), (3.0, "Completed")]


@pytest.mark.parametrize(
    ("polled", "upserted", "broken"),
    [
        pytest.param(STORY, ["Pending", "Running", "Completed"], 0, id="completed-once"),
        pytest.param(
            STORY, ["Running", "Completed", "Running", "Completed"], 1, id="history-twice"
        ),
        pytest.param(
            [*STORY, (4.0, "Running"), (5.0, "Completed")], ["Completed"], 1, id="polled-twice"
        ),
        pytest.param(STORY[:2], ["Running"], 2, id="never-ended"),
        pytest.param([*STORY[:2], (3.0, "Aborted")], ["Aborted"], 2, id="aborted"),
        pytest.param([*STORY, (4.0, "Running")], ["Completed"], 1, id="left-its-end"),
    ],
)
def test_a_job_ends_completed_exactly_once(
    polled: list[tuple[float, str]], upserted: list[str], broken: int
) -> None:
    found = invariants.ends_once(["a"], {"a": polled}, {"a": upserted})
    assert len(found) == broken, found


def test_a_job_without_history_is_a_violation() -> None:
    found = invariants.ends_once(["a"], {"a": STORY}, {})
    assert [v.detail for v in found] == ["a: no dispatch history read"]


def test_two_clusters_running_a_job_while_both_answer_is_a_violation() -> None:
    samples = [
        Sample(10.0, {"w0": {"a": 1}, "w1": {"b": 2}}),
        Sample(11.0, {"w0": {"a": 1}, "w1": {"a": 2, "b": 0}}),
        Sample(12.0, {"w1": {"a": 2}}),  # w0 did not answer: nothing seen there
        Sample(13.0, {"w0": {"a": 0}, "w1": {"a": 2}}),
    ]
    assert invariants.overlaps(samples) == [Overlap(11.0, "a", ("w0", "w1"))]


def test_an_overlap_just_after_a_cluster_came_back_is_tolerated_not_later() -> None:
    found = [Overlap(105.0, "a", ("w0", "w1")), Overlap(140.0, "b", ("w0", "w1"))]
    bad, tolerated = invariants.split_overlaps(found, {"w0": [100.0]}, grace=30)
    assert tolerated == [found[0]]
    assert [v.detail for v in bad] == ["b at 140.0: on w0 and w1"]


def test_moves_count_copies_beyond_the_first() -> None:
    assert invariants.moves({"a": 1, "b": 3, "c": 2}) == 3


def test_a_job_whose_dispatch_history_was_not_read_is_a_violation() -> None:
    found = invariants.histories_read("ns", ["a", "b"], {"dispatch/ns/a"})
    assert [v.detail for v in found] == ["b: no dispatch/ns/b"]


def test_anything_left_after_deletion_is_named_by_cluster() -> None:
    found = invariants.left_behind("pods", {"w0": 0, "w1": 2, "w2": -1})
    assert [v.detail for v in found] == ["2 pods on w1", "-1 pods on w2"]


def _soak(**over: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "minutes": 3,
        "submitted": 60,
        "pods": 100,
        "completed": 60,
        "ends": {"Completed": 60},
        "faults": [{"at_s": 20.0, "kind": soak.APISERVER, "detail": "worker-0 down 8 s"}],
        "moves": 4,
        "event_reasons": {"ClusterLost": 3, "Dispatched": 64},
        "settled_s": 41.0,
        "invariants": {"1 every job Completed, once": 0, "2 never two clusters": 0},
        "violations": {"1 every job Completed, once": [], "2 never two clusters": []},
        "tolerated_overlaps": 0,
        "cleanup": {"copies_gone_s": 3.0, "pods_gone_s": 5.0, "workflows_gone_s": 6.0},
        "cpu": {"per_process_s": {"manager/worker": 30.0}, "total_s": 30.0, "ms_per_job": 500.0},
    }
    return {**figures, **over}


def test_the_report_shows_the_soak_its_faults_and_invariants() -> None:
    result = {"options": {}, "phases": {"soak": _soak()}}
    text = report.markdown(result)
    assert "| Jobs submitted (pods) | 60 (100) |" in text
    assert "| faults injected | 1 |" in text and "| CPU per job | 500.0 ms |" in text
    assert "| 20.0 | kube-apiserver SIGKILL | worker-0 down 8 s |" in text
    assert "| 2 never two clusters | 0 |" in text
    assert "| manager/worker | 30.0 |" in text
    assert not report.failed(result)


def test_a_violated_invariant_fails_the_run_and_is_listed() -> None:
    broken = _soak(
        invariants={"2 never two clusters": 1},
        violations={"2 never two clusters": ["two clusters ran it: a at 1.0: on w0 and w1"]},
    )
    result = {"options": {}, "phases": {"soak": broken}}
    assert report.failed(result)
    assert "- 2 never two clusters: two clusters ran it: a at 1.0" in report.markdown(result)
