"""The report: ratios to `builtin`, result.json, report.md and running.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from bench.sidebyside import apimetrics
from bench.sidebyside.config import CALDERA_SIDES
from bench.sidebyside.temporal_stats import SHARED_KINDS
from cli.devstack import devices

RATIO_FIGURES: Final = {
    "makespan": ("makespan_s",),
    "p99 latency (status)": ("latency_p99_s",),
    "p99 latency (watched)": ("latency_watch_p99_s",),
    "submit": ("submit", "seconds"),
    "deletion": ("deletion", "deletion_s"),
}
# What a one-pod job may cost on its way to Running: the design's budget, shown beside the
# figures so a run says at a glance how far off it is.
BUDGET: Final = {"events": 15.0, "requests": 9.0, "cpu_ms": 150.0}
# Derived Temporal counts shown per job, the job's own and its share of the shared workflows.
PER_JOB_COUNTS: Final = ("workflow_tasks", "activities", "local_activities", "signals")
TOP_SHARED_TYPES: Final = 4  # event types named per kind and window in "Shared workflows"


def figure(side: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path` in a side's result; None where a key is missing (older results)."""
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
            mine, theirs = figure(side, path), figure(base, path)
            row[label] = round(mine / theirs, 2) if mine is not None and theirs else None
        out[name] = row
    return out


def cell(value: Any, unit: str = "") -> str:
    """A table cell: "-" for a missing figure, floats to three significant places or so."""
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
                f" (at {cell(s['failing_jobs_failed_s'])} s)"
            )
        lines.append(
            f"| {name} | {reached} | {cell(s['submit']['seconds'])} "
            f"| {cell(s['makespan_watch_s'])} / {cell(s['makespan_status_s'])} / "
            f"{cell(s['makespan_poll_s'])} | {cell(s['pods_per_s'])} "
            f"| {cell(s['latency_p50_s'])} / {cell(s['latency_p99_s'])} "
            f"| {cell(s['latency_watch_p50_s'])} / {cell(s['latency_watch_p99_s'])} "
            f"| {cell(s['cpu_run']['total_s'])} | {cell(s['cpu_run']['ms_per_job'])} "
            f"(+{cell(s['cpu_delete']['ms_per_job'])}) "
            f"| {cell(d['deletion_s'])} | {left if d['capped'] else 'none'} |"
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
                f"| {name} | " + " | ".join(cell(v, "x") for v in table[name].values()) + " |"
            )
    return lines


def _cpu_table(order: list[str], sides: dict[str, Any], window: str) -> list[str]:
    measured = [n for n in order if window in sides.get(n, {})]
    names = sorted({p for n in measured for p in sides[n][window]["per_process_s"]})
    lines = ["| process | " + " | ".join(measured) + " |", "|---" * (len(measured) + 1) + "|"]
    for proc in names:
        cells = [cell(sides[n][window]["per_process_s"].get(proc)) for n in measured]
        lines.append(f"| {proc} | " + " | ".join(cells) + " |")
    totals = [cell(sides[n][window]["total_s"]) for n in measured]
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
        f"activities, {f['events_per_job']} events each) in {cell(f['makespan_s'])} s.",
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
            f"| {name} | {cell(s['makespan_s'])} | {cell(_ms(per.get('temporal'), jobs))} "
            f"| {cell(_ms(own, jobs))} | {cell(s['cpu_run']['ms_per_job'])} |"
        )
    return lines


def _ms(seconds: float | None, jobs: int) -> float | None:
    return None if seconds is None else round(seconds * 1000 / jobs, 1)


def per_job(side: dict[str, Any]) -> dict[str, float | None]:
    """What one job cost a side to Running: its own sampled history at the target plus its
    share (the window's events / jobs) of the scheduler, queue and PodGroup workflows; the
    apiserver's requests and the stack's CPU. A figure the run lacks (older results, a probe
    that failed) is None; a total adds the shared part only where it was read."""
    jobs = side.get("jobs") or 0
    own: dict[str, Any] = side.get("temporal_at_target") or {}
    shared: dict[str, Any] = side.get("shared_workflows_at_target") or {}
    kinds: dict[str, Any] = shared.get("by_kind") or {}
    out: dict[str, float | None] = {
        "events_own": own.get("events_mean"),
        **{f"events_{k}": _per(kinds.get(k, {}).get("events"), jobs) for k in SHARED_KINDS},
        "events_shared": _per(shared.get("events"), jobs),
    }
    out["events"] = _plus(out["events_own"], out["events_shared"])
    for key in PER_JOB_COUNTS:
        out[f"{key}_own"] = own.get(key)
        out[f"{key}_shared"] = _per(shared.get(key), jobs)
        out[key] = _plus(out[f"{key}_own"], out[f"{key}_shared"])
    out["requests"] = figure(side, ("apiserver", "requests_per_job_total"))
    out["cpu_ms"] = figure(side, ("cpu_run", "ms_per_job"))
    return out


def _per(count: int | None, jobs: int) -> float | None:
    return None if count is None or not jobs else round(count / jobs, 2)


def _plus(own: float | None, shared: float | None) -> float | None:
    """None when the job's own figure is missing: a shared share alone is no total."""
    return None if own is None else round(own + (shared or 0.0), 2)


def events_cell(per: dict[str, float | None], target: float | None = None) -> str:
    """Events per job to Running, bold over `target`, marked "(own only)" when the shared
    workflows were not read (older results, a failed probe): such a total is a floor."""
    text = _over(per["events"], target) if target is not None else cell(per["events"])
    own_only = per["events"] is not None and per["events_shared"] is None
    return f"{text} (own only)" if own_only else text


def _over(value: float | None, target: float) -> str:
    """The figure, bold when it is over its budget."""
    text = cell(value)
    return f"**{text}**" if value is not None and value > target else text


def _budget_table(order: list[str], sides: dict[str, Any]) -> list[str]:
    """One row per Caldera side: what a job cost against what the design allows it."""
    measured = [n for n in order if n in CALDERA_SIDES and "cpu_run" in sides.get(n, {})]
    if not measured:
        return ["(no Caldera side in this run)"]
    b = BUDGET
    lines = [
        "| side | events/job: own / scheduler / queue / podgroup "
        f"| total (≤ {b['events']:.0f}) | workflow tasks | activities | local activities "
        f"| signals | apiserver requests (≤ {b['requests']:.0f}) "
        f"| CPU ms (≤ {b['cpu_ms']:.0f}) | CPU ms by process |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in measured:
        s, j = sides[name], per_job(sides[name])
        split = " / ".join(
            cell(j[k]) for k in ("events_own", *(f"events_{k}" for k in SHARED_KINDS))
        )
        counts = [
            f"{cell(j[k])} ({cell(j[f'{k}_own'])} + {cell(j[f'{k}_shared'])})"
            for k in PER_JOB_COUNTS
        ]
        procs = sorted(s["cpu_run"]["per_process_s"].items(), key=lambda kv: -kv[1])
        by_process = ", ".join(f"{p} {cell(_ms(v, s['jobs']))}" for p, v in procs if v)
        lines.append(
            f"| {name} | {split} | {events_cell(j, b['events'])} | "
            + " | ".join(counts)
            + f" | {_over(j['requests'], b['requests'])} | {_over(j['cpu_ms'], b['cpu_ms'])} "
            f"| {by_process or '-'} |"
        )
    lines += [
        "",
        "Own: the sampled JobWorkflows' histories at the target (mean); the shared workflows' "
        "events from just before the first create to the target, divided by the jobs. "
        "Counts are total (own + shared); bold: over budget.",
    ]
    return lines


def _top(types: dict[str, int]) -> str:
    """The commonest event types (already sorted by `temporal_stats`), named with counts."""
    return ", ".join(f"{k} {v}" for k, v in list(types.items())[:TOP_SHARED_TYPES]) or "-"


def _shared_table(order: list[str], sides: dict[str, Any]) -> list[str]:
    """Per side and kind, the shared workflows' events in the run and during deletion."""
    lines = [
        "| side | kind | workflows (runs), run | events, run / deletion "
        "| per job, run / deletion | workflow tasks, run / deletion "
        "| top event types, run | top event types, deletion |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        s = sides.get(name, {})
        if "shared_workflows_at_target" not in s:
            continue
        run, deletion = s["shared_workflows_at_target"], s["shared_workflows_deletion"]
        if run is None and deletion is None:
            lines.append(f"| {name} | (not read) |" + " |" * 6)
            continue
        for kind in SHARED_KINDS:
            r = (run or {}).get("by_kind", {}).get(kind, {})
            d = (deletion or {}).get("by_kind", {}).get(kind, {})
            jobs = s["jobs"]
            lines.append(
                f"| {name} | {kind} | {cell(r.get('workflows'))} ({cell(r.get('runs'))}) "
                f"| {cell(r.get('events'))} / {cell(d.get('events'))} "
                f"| {cell(_per(r.get('events'), jobs))} / {cell(_per(d.get('events'), jobs))} "
                f"| {cell(r.get('workflow_tasks'))} / {cell(d.get('workflow_tasks'))} "
                f"| {_top(r.get('events_by_type', {}))} | {_top(d.get('events_by_type', {}))} |"
            )
    return lines if len(lines) > 2 else ["(shared workflows not read in this run)"]


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
            f"| {name} | {t['sampled']} ({t['runs']}) | {cell(early.get('events_mean'))} "
            f"| {cell(t['events_mean'])} / {cell(t['events_max'])} "
            f"| {t['workflow_task_failed']} | {t['workflow_task_timed_out']} "
            f"| {cell(t['worker_log_task_failures'])} | {cell(at['reporting_problems'])} / "
            f"{cell(after['reporting_problems'])} | {cell(at['open'])} / {cell(after['open'])} "
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
        f"{o['node_pods']} pods; {o['threads']} submitting threads; every pod requests 100m"
        + _devices(o)
        + ".",
        "",
    ]
    body = [
        *_main_table(order, sides),
        "",
        *_claim_lines(order, sides),
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
        "## Per-job budget (to Running)",
        "",
        *_budget_table(order, sides),
        "",
        "## Shared workflows (scheduler, queues, PodGroups)",
        "",
        *_shared_table(order, sides),
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


def _claim_lines(order: list[str], sides: dict[str, Any]) -> list[str]:
    """Each side's ResourceClaims at the target (runs with devices only): every claim
    allocated and reserved, on as many distinct devices, says the scheduler honoured DRA."""
    lines = []
    for name in order:
        c = sides.get(name, {}).get("claims_at_target")
        if c:
            lines.append(
                f"- {name}: {c['claims']} claims at the target, {c['allocated']} allocated, "
                f"{c['reserved']} reserved, {c['devices']} devices ({c['distinct_devices']} "
                "distinct)"
            )
    return [*lines, ""] if lines else []


def _devices(options: dict[str, Any]) -> str:
    """The run's DRA devices, for the header; older results have none."""
    per_pod = options.get("gpus_per_pod") or 0
    if not per_pod:
        return ""
    return (
        f" and {per_pod} {devices.DEVICE_CLASS} device{'s' if per_pod > 1 else ''} through a "
        f"ResourceClaimTemplate ({options.get('gpus_per_node')} fake GPUs per node)"
    )


def _deletion_lines(order: list[str], sides: dict[str, Any]) -> list[str]:
    lines = []
    for name in order:
        d = sides.get(name, {}).get("deletion")
        if d:
            gone = ", ".join(f"{k} {v}s" for k, v in d["gone_s"].items())
            lines.append(
                f"- {name}: gone at {gone}; namespace gone at {cell(d['namespace_gone_s'])}s"
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
