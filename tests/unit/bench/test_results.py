"""Where a benchmark run writes: `$CALDERA_RESULTS` when set, else the dev stack's cache; a
fresh folder per run, outside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import results
from cli.devstack import stack

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[3]


def test_runs_go_under_caldera_results_when_it_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CALDERA_RESULTS", str(tmp_path))
    out = results.run_dir("chaos", "soak-10m-1w")
    assert out.parent == tmp_path / "chaos"
    assert out.name.startswith("soak-10m-1w-")


def test_runs_go_under_the_dev_stacks_cache_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CALDERA_RESULTS", raising=False)
    out = results.run_dir("sidebyside", "singles-1000")
    assert out.parent == stack.CACHE / "results" / "sidebyside"
    assert not out.resolve().is_relative_to(REPO)
