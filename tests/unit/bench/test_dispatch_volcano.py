"""bench.dispatch with `--volcano-worker`: its options, the checks' pure parts and the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.dispatch import config, report, volcano_checks
from bench.sidebyside import workload

VOLCANO_ARGS = ["--volcano-worker", "--volcano-bin", "BIN", "--volcano-src", "SRC"]


def _tree(tmp_path: Path) -> list[str]:
    """A fake binaries dir and source tree, as `volcano_install.find` wants them."""
    bin_dir, src = tmp_path / "bin", tmp_path / "src"
    bin_dir.mkdir()
    for name in ("vc-webhook-manager", "vc-controller-manager", "vc-scheduler"):
        (bin_dir / name).write_text("")
    chart = src / "installer/helm/chart/volcano"
    (chart / "crd/bases").mkdir(parents=True)
    (chart / "crd/bases/batch.volcano.sh_jobs.yaml").write_text("")
    (chart / "config").mkdir()
    (chart / "config/volcano-scheduler.conf").write_text("")
    return ["--volcano-worker", "--volcano-bin", str(bin_dir), "--volcano-src", str(src)]


def test_volcano_worker_options_are_kept_when_the_tree_is_complete(tmp_path: Path) -> None:
    opts = config.parse(["--jobs", "20", *_tree(tmp_path)])
    assert opts.volcano_bin == tmp_path / "bin"
    assert opts.volcano_src == tmp_path / "src"


def test_without_the_flag_no_worker_runs_volcano(tmp_path: Path) -> None:
    args = _tree(tmp_path)[1:]
    assert config.parse(args).volcano_bin is None


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(VOLCANO_ARGS, id="binaries-missing"),
        pytest.param(["--volcano-worker"], id="no-dirs"),
    ],
)
def test_a_volcano_worker_without_its_binaries_is_refused(extra: list[str]) -> None:
    with pytest.raises(SystemExit):
        config.parse(extra)


def test_a_volcano_worker_without_the_dispatch_phase_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        config.parse(["--phases", "single", *_tree(tmp_path)])


def test_lifecycle_jobs_name_the_volcano_queue_and_finish_only_when_asked() -> None:
    finishing = volcano_checks._job("c-0", "ns", 5)
    running = volcano_checks._job("a-0", "ns", None)
    assert finishing["spec"]["queue"] == running["spec"]["queue"] == volcano_checks.QUEUE
    template = finishing["spec"]["tasks"][0]["template"]
    assert template["metadata"]["annotations"] == {workload.RUN_SECONDS: "5"}
    assert "metadata" not in running["spec"]["tasks"][0]["template"]


def _job(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "a"}, "status": status}


def test_a_mirror_with_other_fields_still_carries_phase_counts_and_conditions() -> None:
    copy = {"state": {"phase": "Running"}, "running": 1, "conditions": [{"status": "Running"}]}
    manager = {**copy, "version": 3}
    assert volcano_checks._mirrors(_job(manager), _job(copy)) == (False, True)
    assert volcano_checks._mirrors(_job(copy), _job(copy)) == (True, True)
    assert volcano_checks._mirrors(_job({**copy, "running": 0}), _job(copy)) == (False, False)


def _result(**lifecycle: Any) -> dict[str, Any]:
    counts = {"placed": 3, "copies": 3, "copies_running": 3, "manager_running": 3}
    life = {"aborted_on_worker": {"reached": 2, "of": 2}, "worker_pods_of_deleted_left": 0}
    return {
        "dispatched": {**counts, "status_mirrored_whole": 3},
        "lifecycle": {**life, **lifecycle},
    }


def test_checks_that_held_fail_nothing() -> None:
    assert volcano_checks._failed(_result()) == []


def test_a_check_short_of_its_jobs_or_pods_left_fails_by_name() -> None:
    result = _result(copy_deleted={"reached": 1, "of": 2}, worker_pods_of_deleted_left=1)
    assert volcano_checks._failed(result) == ["copy_deleted", "worker_pods_of_deleted_left"]


def test_no_job_on_the_volcano_worker_is_the_failure() -> None:
    result = _result()
    result["dispatched"] = {"error": "no job of ns was dispatched to worker-1"}
    assert volcano_checks._failed(result) == ["no job of ns was dispatched to worker-1"]


def test_the_report_lists_the_volcano_checks() -> None:
    text = report.markdown(
        {"phases": {"volcano": {"worker": "worker-1", "admission": "enforcing", **_result()}}}
    )
    assert "## Worker worker-1 running real Volcano" in text
    assert '| lifecycle: aborted_on_worker | {"of": 2, "reached": 2} |' in text


def test_a_volcano_worker_with_the_soak_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        config.parse(["--phases", "dispatch,soak", *_tree(tmp_path)])
