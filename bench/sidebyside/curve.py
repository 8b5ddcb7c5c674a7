"""`python -m bench.sidebyside.curve RESULT.json ... [--out FILE]`: how the cost grows with
the run's size. One group of rows per run (smallest first), one row per side any run has:
makespan, pods/s, CPU ms, Temporal events and apiserver requests per job, deletion, and CPU
per job against the smallest run's. A flat last column means a job costs the same at any size;
a rising one, that something grows with the number of jobs. It reads results only (older ones
lack some keys: "-"), so it can compare runs of different rounds."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

from bench.sidebyside import report

COLUMNS: Final = (
    "run",
    "side",
    "makespan s",
    "pods/s",
    "CPU ms/job",
    "events/job to Running (own + shared)",
    "requests/job",
    "deletion s",
    "CPU/job vs smallest run",
)


def _measured(side: Any) -> bool:
    return isinstance(side, dict) and "error" not in side and "skipped" not in side


def _label(result: dict[str, Any], path: str) -> str:
    o = result.get("options", {})
    size = f"{o.get('jobs', '?')}"
    if o.get("shape") not in (None, "singles"):
        size += f" x {o.get('replicas', '?')}"
    return f"{o.get('shape', '?')} {size} (`{Path(path).parent.name or path}`)"


def _cells(side: dict[str, Any], smallest_cpu: float | None) -> list[str]:
    """One side's figures in one run, as the table's cells after "run" and "side"."""
    per = report.per_job(side)
    cpu = per["cpu_ms"]
    return [
        report.cell(side.get("makespan_s")),
        report.cell(side.get("pods_per_s")),
        report.cell(cpu),
        report.events_cell(per),
        report.cell(per["requests"]),
        report.cell(report.figure(side, ("deletion", "deletion_s"))),
        report.cell(cpu / smallest_cpu if cpu and smallest_cpu else None, "x"),
    ]


def table(runs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The Markdown rows for (path, result) pairs; runs are ordered by jobs (stable), and a
    side missing from a run gets a row of "-" so the sides line up."""
    ordered = sorted(runs, key=lambda r: r[1].get("options", {}).get("jobs") or 0)
    measured = [{n: s for n, s in r.get("sides", {}).items() if _measured(s)} for _, r in ordered]
    sides = list(dict.fromkeys(n for run in measured for n in run))  # first seen, first shown
    smallest: dict[str, float] = {}  # per side, CPU ms per job in the smallest run having it
    for run in measured:
        for name, side in run.items():
            cpu = report.figure(side, ("cpu_run", "ms_per_job"))
            if cpu and name not in smallest:
                smallest[name] = cpu
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
    for (path, result), run in zip(ordered, measured, strict=True):
        label = _label(result, path)
        for name in sides:
            cells = (
                _cells(run[name], smallest.get(name)) if name in run else ["-"] * (len(COLUMNS) - 2)
            )
            lines.append(f"| {label} | {name} | " + " | ".join(cells) + " |")
            label = ""  # the run's name on its first row only
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sidebyside.curve", description=__doc__)
    p.add_argument("results", nargs="+", help="result.json files of runs of different sizes")
    p.add_argument("--out", type=Path, help="also write the table here")
    a = p.parse_args(argv)
    runs = [(path, json.loads(Path(path).read_text())) for path in a.results]
    text = "\n".join(["## How it grows", "", *table(runs), ""])
    print(text)
    if a.out is not None:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
