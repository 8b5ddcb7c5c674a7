"""The soak's options: how long faults run, how many workers, which Temporal server, where the
report goes."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from bench import results
from bench.chaos.schedule import PROFILES, Profile


class Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    minutes: float = 10.0  # how long the workload and the faults run
    workers: int = 1  # two: one killed at a time, the other serves
    wave_every: float = 45.0  # seconds between two waves of jobs
    worker_kill_every: float = 20.0
    settle_bound: float = 300.0  # after the last fault, every job must end within this
    nodes: int = 5
    seed: int = 1
    burst: int = 0  # one-pod jobs submitted at the start, in flight beside the waves
    # `dev`: the dev server on SQLite; `server`: the Temporal server on PostgreSQL
    temporal: Profile = "dev"
    # the report's folder: a fresh one under `bench.results` unless given
    out: Path = Field(default_factory=lambda: results.run_dir("chaos", "soak"))


def parse(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--workers", type=int, choices=(1, 2), default=1)
    p.add_argument("--wave-every", type=float, default=45.0)
    p.add_argument("--worker-kill-every", type=float, default=20.0)
    p.add_argument("--settle-bound", type=float, default=300.0)
    p.add_argument("--nodes", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--burst", type=int, default=0, help="one-pod jobs submitted at the start")
    p.add_argument(
        "--temporal",
        choices=PROFILES,
        default="dev",
        help="dev: the dev server on SQLite; server: the Temporal server on PostgreSQL",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="report directory (default: see bench/results.py)"
    )
    a = p.parse_args(argv)
    profile = "" if a.temporal == "dev" else f"-{a.temporal}"
    out = a.out or results.run_dir("chaos", f"soak-{a.minutes:g}m-{a.workers}w{profile}")
    return Options(
        minutes=a.minutes,
        workers=a.workers,
        wave_every=a.wave_every,
        worker_kill_every=a.worker_kill_every,
        settle_bound=a.settle_bound,
        nodes=a.nodes,
        seed=a.seed,
        burst=a.burst,
        temporal=a.temporal,
        out=out,
    )
