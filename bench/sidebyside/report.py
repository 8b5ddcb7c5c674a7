"""The report: ratios to `builtin`, result.json, report.md and running.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from bench.sidebyside import apimetrics

RATIO_FIGURES: Final = {
    "makespan": ("makespan_s",),
    "p99 latency (status)": ("latency_p99_s",),
    "p99 latency (watched)": ("latency_watch_p99_s",),
    "submit": ("submit", "seconds"),
    "deletion": ("deletion", "deletion_s"),
}


def _get(side: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = side
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def ratios(sides: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Each measured side's figures divided by builtin's (None when either is missing)."""
    base = sides.get("builtin") or {}
    out: dict[str, dict[str, float | None]] = {}
    for name, side in sides.items():
        if "error" in side or "skipped" in side:
            continue
        row: dict[str, float | None] = {}
        for label, path in RATIO_FIGURES.items():
            mine, theirs = _get(side, path), _get(base, path)
            row[label] = round(mine / theirs, 2) if mine is not None and theirs else None
        out[name] = row
    return out


def _f(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}{unit}" if abs(value) < 10 else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def _main_table(order: list[str], sides: dict[str, Any]) -> list[str]:
    lines = [
        "| side | reached | submit s | makespan s (watched / status / poll) | pods/s "
        "| job latency p50 / p99 s (status) | (watched) | CPU s, run "
        "| CPU ms/job, run (+ deletion) | deletion s | left at cap |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        s = sides.get(name, {})
        if "skipped" in s or "error" in s:
            why = str(s.get("skipped") or s.get("error")).splitlines()[0][:160]
            lines.append(f"| {name} | {why} |" + " |" * 9)
            continue
        if "floor" in s:
            continue  # its own table: no pods, no deletion
        d = s["deletion"]
        left = ", ".join(f"{k} {v}" for k, v in d["remaining_at_cap"].items()) or "none"
        reached = "yes" if s["reached"] else f"no ({s['running_at_end']}/{s['pods_target']})"
        if s["failing_jobs"]:
            reached += (
                f"; {s['failed_jobs_at_end']}/{s['failing_jobs']} failing jobs Failed"
                f" (at {_f(s['failing_jobs_failed_s'])} s)"
            )
        lines.append(
            f"| {name} | {reached} | {_f(s['submit']['seconds'])} "
            f"| {_f(s['makespan_watch_s'])} / {_f(s['makespan_status_s'])} / "
            f"{_f(s['makespan_poll_s'])} | {_f(s['pods_per_s'])} "
            f"| {_f(s['latency_p50_s'])} / {_f(s['latency_p99_s'])} "
            f"| {_f(s['latency_watch_p50_s'])} / {_f(s['latency_watch_p99_s'])} "
            f"| {_f(s['cpu_run']['total_s'])} | {_f(s['cpu_run']['ms_per_job'])} "
            f"(+{_f(s['cpu_delete']['ms_per_job'])}) "
            f"| {_f(d['deletion_s'])} | {left if d['capped'] else 'none'} |"
        )
    return lines


def _ratio_table(
    order: list[str], table: dict[str, dict[str, float | None]], base: bool
) -> list[str]:
    if not base:
        return ["(no builtin side in this run: no ratios)"]
    lines = [
        "| side | " + " | ".join(RATIO_FIGURES) + " |",
        "|---" * (len(RATIO_FIGURES) + 1) + "|",
    ]
    for name in order:
        if name in table:
            lines.append(
                f"| {name} | " + " | ".join(_f(v, "x") for v in table[name].values()) + " |"
            )
    return lines


def _cpu_table(order: list[str], sides: dict[str, Any], window: str) -> list[str]:
    measured = [n for n in order if window in sides.get(n, {})]
    names = sorted({p for n in measured for p in sides[n][window]["per_process_s"]})
    lines = ["| process | " + " | ".join(measured) + " |", "|---" * (len(measured) + 1) + "|"]
    for proc in names:
        cells = [_f(sides[n][window]["per_process_s"].get(proc)) for n in measured]
        lines.append(f"| {proc} | " + " | ".join(cells) + " |")
    totals = [_f(sides[n][window]["total_s"]) for n in measured]
    lines.append("| **total** | " + " | ".join(totals) + " |")
    return lines


def _floor_lines(order: list[str], sides: dict[str, Any]) -> list[str]:
    """The bare-workflow side beside the others' Temporal and worker CPU per job."""
    floor = next((sides[n] for n in order if "floor" in sides.get(n, {})), None)
    if floor is None:
        return ["(no temporal-floor side in this run)"]
    f = floor["floor"]
    jobs = f["jobs"]
    lines = [
        f"{f['completed']}/{jobs} bare workflows (signal-with-start, three signals, three local "
        f"activities, {f['events_per_job']} events each) in {_f(f['makespan_s'])} s.",
        "",
        "| side | makespan s | temporal CPU ms/job | worker (floor: client + worker) CPU ms/job "
        "| all processes CPU ms/job |",
        "|---|---|---|---|---|",
    ]
    for name in order:
        s = sides.get(name, {})
        if "cpu_run" not in s:
            continue
        per = s["cpu_run"]["per_process_s"]
        own = per.get("floor process") if "floor" in s else per.get("worker")
        lines.append(
            f"| {name} | {_f(s['makespan_s'])} | {_f(_ms(per.get('temporal'), jobs))} "
            f"| {_f(_ms(own, jobs))} | {_f(s['cpu_run']['ms_per_job'])} |"
        )
    return lines


def _ms(seconds: float | None, jobs: int) -> float | None:
    return None if seconds is None else round(seconds * 1000 / jobs, 1)


def _temporal_table(order: list[str], sides: dict[str, Any]) -> list[str]:
    lines = [
        "| side | histories sampled (runs) | events/job at target | events/job mean / max "
        "| WorkflowTaskFailed "
        "| WorkflowTaskTimedOut | worker log task failures | workflows reporting problems "
        "| open at target / after deletion | causes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        t = sides.get(name, {}).get("temporal")
        early = sides.get(name, {}).get("temporal_at_target") or {}
        if not t:
            continue
        at, after = sides[name]["visibility_at_target"], t["visibility_after_delete"]
        causes = ", ".join(f"{k} x{v}" for k, v in t["task_problem_causes"].items())
        lines.append(
            f"| {name} | {t['sampled']} ({t['runs']}) | {_f(early.get('events_mean'))} "
            f"| {_f(t['events_mean'])} / "
            f"{_f(t['events_max'])} | {t['workflow_task_failed']} | {t['workflow_task_timed_out']} "
            f"| {_f(t['worker_log_task_failures'])} | {_f(at['reporting_problems'])} / "
            f"{_f(after['reporting_problems'])} | {_f(at['open'])} / {_f(after['open'])} "
            f"| {causes or 'none'} |"
        )
    return lines


def markdown(result: dict[str, Any]) -> str:
    o, sides = result["options"], result["sides"]
    order = [s for s in o["sides"] if s in sides]
    pods = next((s["pods_target"] for s in sides.values() if "pods_target" in s), "?")
    head = [
        f"# Side by side: {o['shape']}, {o['jobs']} jobs, {pods} pods Running at once",
        "",
        f"Started {result['started_at']}; {o['nodes']} kwok nodes x {o['node_cpu']} CPU / "
        f"{o['node_pods']} pods; {o['threads']} submitting threads; every pod requests 100m.",
        "",
    ]
    body = [
        *_main_table(order, sides),
        "",
        "## Ratios to builtin",
        "",
        *_ratio_table(order, result["ratios"], "builtin" in order),
        "",
        "## CPU seconds per process, first create → target",
        "",
        *_cpu_table(order, sides, "cpu_run"),
        "",
        "## CPU seconds per process, namespace deletion → gone",
        "",
        *_cpu_table(order, sides, "cpu_delete"),
        "",
        "## kube-apiserver per job, first create → target",
        "",
        *apimetrics.table(order, sides),
        "",
        "## Temporal (Caldera sides)",
        "",
        *_temporal_table(order, sides),
        "",
        "## Temporal's floor: a bare workflow per job",
        "",
        *_floor_lines(order, sides),
        "",
        "## Deletion",
        "",
        *_deletion_lines(order, sides),
        "",
    ]
    return "\n".join(head + body)


def _deletion_lines(order: list[str], sides: dict[str, Any]) -> list[str]:
    lines = []
    for name in order:
        d = sides.get(name, {}).get("deletion")
        if d:
            gone = ", ".join(f"{k} {v}s" for k, v in d["gone_s"].items())
            lines.append(
                f"- {name}: gone at {gone}; namespace gone at {_f(d['namespace_gone_s'])}s"
                + (
                    f"; CAPPED at {d['timeout_s']}s, left {d['remaining_at_cap']}"
                    if d["capped"]
                    else ""
                )
            )
    return lines


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name in result["options"]["sides"]:
        timeline = result["sides"].get(name, {}).get("timeline")
        if timeline:
            ax.plot([p["t"] for p in timeline], [p["running"] for p in timeline], label=name)
    ax.set_xlabel("seconds since the first create")
    ax.set_ylabel("pods Running")
    o = result["options"]
    ax.set_title(f"{o['shape']}: {o['jobs']} jobs on {o['nodes']} kwok nodes")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(result: dict[str, Any], out: Path) -> str:
    """result.json, report.md and running.png in `out`; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    result["ratios"] = ratios(result["sides"])
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str))
    text = markdown(result)
    (out / "report.md").write_text(text + "\n![pods Running over time](running.png)\n")
    plot(result, out / "running.png")
    return text
