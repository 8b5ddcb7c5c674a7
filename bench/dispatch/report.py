"""The figures and the report: per-phase figures from the poll times, ratios of dispatch to
the single-cluster path, result.json and report.md. Pure but for `write`."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from bench.sidebyside.observe import percentile

# (label, key in a phase's figures, unit): the rows of the side-by-side table.
ROWS: Final = (
    ("jobs Running", ("running",), ""),
    ("submit", ("submit", "seconds"), " s"),
    ("makespan (submit → all Running)", ("makespan_s",), " s"),
    ("throughput", ("jobs_per_s",), " jobs/s"),
    ("latency p50 (create → Running)", ("latency_p50_s",), " s"),
    ("latency p99", ("latency_p99_s",), " s"),
    ("latency max", ("latency_max_s",), " s"),
    ("CPU, all processes", ("cpu", "total_s"), " s"),
    ("CPU per job", ("cpu", "ms_per_job"), " ms"),
)
RECOVERY_ROWS: Final = (
    ("jobs on the lost cluster", ("affected",), ""),
    ("lost-after", ("lost_after_s",), " s"),
    ("kill → all copies Running elsewhere", ("moved_s",), " s"),
    ("kill → all manager Jobs show it", ("mirrored_s",), " s"),
    ("per job, kill → copy Running elsewhere, p50", ("moved_p50_s",), " s"),
    ("per job, p99", ("moved_p99_s",), " s"),
    ("moved less lost-after", ("moved_over_lost_after_s",), " s"),
    ("apiserver restart", ("restart_s",), " s"),
    ("apiserver up → stale copies gone", ("stale_copies_gone_s",), " s"),
    ("apiserver up → their pods gone", ("stale_pods_gone_s",), " s"),
)


def add(snap: dict[str, float], key: str, value: float | None) -> None:
    """Sum `value` under `key` (None: a process already gone, counted as nothing)."""
    if value is not None:
        snap[key] = snap.get(key, 0.0) + value


def first_seen(seen: dict[str, float], now: float, names: Iterable[str]) -> None:
    """Record `now` for each name not seen before: the first poll that saw its state."""
    for name in names:
        seen.setdefault(name, now)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def phase_figures(
    start_wall: float, created_at: Mapping[str, float], running_at: Mapping[str, float], jobs: int
) -> dict[str, Any]:
    """Makespan from the first create to the last job seen Running (None unless all were),
    throughput, and each job's latency from its create's return to its first Running poll."""
    latencies = [running_at[n] - created_at[n] for n in running_at if n in created_at]
    complete = len(running_at) >= jobs
    makespan = max(running_at.values()) - start_wall if complete and running_at else None
    return {
        "running": len(running_at),
        "makespan_s": _round(makespan),
        "jobs_per_s": round(jobs / makespan, 2) if makespan else None,
        "latency_p50_s": percentile(latencies, 0.50),
        "latency_p99_s": percentile(latencies, 0.99),
        "latency_max_s": _round(max(latencies)) if latencies else None,
        "latency_mean_s": _round(statistics.fmean(latencies)) if latencies else None,
    }


def placement(clusters: Iterable[str]) -> dict[str, int]:
    """How many Jobs each cluster holds ("manager" for none named)."""
    return dict(sorted(Counter(c or "manager" for c in clusters).items()))


def cpu(
    before: Mapping[str, float], after: Mapping[str, float], jobs: int, drop: Iterable[str] = ()
) -> dict[str, Any]:
    """Seconds each process spent between two snapshots (alive at both), the total and the
    share per job."""
    dropped = set(drop)
    per = {k: round(after[k] - before[k], 2) for k in after if k in before and k not in dropped}
    total = sum(per.values())
    return {
        "per_process_s": dict(sorted(per.items())),
        "total_s": round(total, 2),
        "ms_per_job": round(total * 1000 / jobs, 1) if jobs else None,
    }


def recovery_figures(
    *,
    lost: str,
    lost_after: int,
    affected: int,
    killed: float,
    remote: Mapping[str, float],
    shown: Mapping[str, float],
    restart_s: float,
    up: float,
    gone: Mapping[str, float],
    left: tuple[int | None, int | None],
    cpu: dict[str, Any],
) -> dict[str, Any]:
    """Times from the kill (the move) and from the apiserver's return (the cleanup)."""
    per_job = [t - killed for t in remote.values()]
    moved = max(remote.values()) - killed if len(remote) >= affected and remote else None
    mirrored = max(shown.values()) - killed if len(shown) >= affected and shown else None
    return {
        "lost": lost,
        "affected": affected,
        "lost_after_s": lost_after,
        "moved": len(remote),
        "mirrored": len(shown),
        "moved_s": _round(moved),
        "mirrored_s": _round(mirrored),
        "moved_p50_s": percentile(per_job, 0.50),
        "moved_p99_s": percentile(per_job, 0.99),
        "moved_over_lost_after_s": _round(moved - lost_after) if moved is not None else None,
        "restart_s": _round(restart_s),
        "stale_copies_gone_s": _round(gone["copies"] - up) if "copies" in gone else None,
        "stale_pods_gone_s": _round(gone["pods"] - up) if "pods" in gone else None,
        "stale_copies_left": left[0],
        "stale_pods_left": left[1],
        "cpu": cpu,
    }


SOAK_ROWS: Final = (
    ("Jobs submitted (pods)", ("submitted",), ""),
    ("Jobs Completed", ("completed",), ""),
    ("faults injected", ("fault_count",), ""),
    ("moves (copies beyond a job's first)", ("moves",), ""),
    ("submitting stopped → every job ended", ("settled_s",), " s"),
    ("create → end, p50", ("create_to_end_p50_s",), " s"),
    ("create → end, p99", ("create_to_end_p99_s",), " s"),
    ("create → end, max", ("create_to_end_max_s",), " s"),
    ("deletion → no copy left", ("cleanup", "copies_gone_s"), " s"),
    ("deletion → no pod left", ("cleanup", "pods_gone_s"), " s"),
    ("deletion → no DispatchWorkflow running", ("cleanup", "workflows_gone_s"), " s"),
    ("CPU, all processes", ("cpu", "total_s"), " s"),
    ("CPU per job", ("cpu", "ms_per_job"), " ms"),
)


def figure(phase: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path` (None where missing)."""
    value: Any = phase
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def ratio(value: Any, base: Any) -> float | None:
    if not isinstance(value, int | float) or not isinstance(base, int | float) or not base:
        return None
    return round(value / base, 2)


def cell(value: Any, unit: str = "") -> str:
    """A table cell; "-" for a figure the run did not reach."""
    return "-" if value is None else f"{value}{unit}"


def _side_by_side(single: Mapping[str, Any], dispatch: Mapping[str, Any]) -> list[str]:
    lines = [
        "| figure | single cluster | dispatch | dispatch / single |",
        "|---|---:|---:|---:|",
    ]
    for label, path, unit in ROWS:
        a, b = figure(single, path), figure(dispatch, path)
        lines.append(f"| {label} | {cell(a, unit)} | {cell(b, unit)} | {cell(ratio(b, a))} |")
    return lines


def _cpu_table(phases: Mapping[str, Any]) -> list[str]:
    names = [n for n in ("single", "dispatch", "recovery", "soak") if "cpu" in phases.get(n, {})]
    keys = sorted({k for n in names for k in phases[n]["cpu"]["per_process_s"]})
    if not keys:
        return []
    lines = [
        "| process | " + " | ".join(f"{n} (s)" for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for k in keys:
        row = [cell(phases[n]["cpu"]["per_process_s"].get(k)) for n in names]
        lines.append(f"| {k} | " + " | ".join(row) + " |")
    return lines


def markdown(result: Mapping[str, Any]) -> str:
    """report.md: the options, the side-by-side table, recovery, CPU per process, errors."""
    opts = result.get("options", {})
    phases: Mapping[str, Any] = result.get("phases", {})
    lines = [
        "# Dispatch against the single-cluster path",
        "",
        f"Run {result.get('started_at', '?')}: {opts.get('jobs')} one-pod Volcano Jobs "
        f"(100m CPU), {opts.get('workers')} worker clusters of {opts.get('worker_nodes')} "
        f"nodes, manager {opts.get('nodes')} nodes; poll every {opts.get('poll')} s (the "
        "times' resolution). Running: the manager Job's `status.state.phase`, as mirrored.",
        "",
    ]
    single, dispatch = phases.get("single", {}), phases.get("dispatch", {})
    if single or dispatch:
        lines += ["## Submit → Running", "", *_side_by_side(single, dispatch), ""]
        placed = dispatch.get("placement")
        if placed:
            where = ", ".join(f"{k} {v}" for k, v in placed.items())
            lines += [f"Dispatched to: {where}.", ""]
    rec = phases.get("recovery", {})
    if rec and "error" not in rec:
        lines += [f"## Recovery: {rec.get('lost')}'s kube-apiserver SIGKILLed", ""]
        lines += ["| figure | value |", "|---|---:|"]
        for label, path, unit in RECOVERY_ROWS:
            lines.append(f"| {label} | {cell(figure(rec, path), unit)} |")
        lines.append(
            f"| stale copies / pods left at the end | {cell(rec.get('stale_copies_left'))} / "
            f"{cell(rec.get('stale_pods_left'))} |"
        )
        lines.append("")
    soak = phases.get("soak", {})
    if soak and "error" not in soak:
        lines += _soak(soak)
    cpu_lines = _cpu_table(phases)
    if cpu_lines:
        lines += ["## CPU per process (seconds in the phase)", "", *cpu_lines, ""]
        if "recovery" in phases:
            lines += ["Recovery leaves out the workers' kube-apiserver (one was restarted).", ""]
    lines += _volcano(phases.get("volcano") or {})
    errors = [(n, p["error"]) for n, p in phases.items() if "error" in p]
    if errors:
        lines += ["## Errors", "", *(f"- {n}: {e}" for n, e in errors), ""]
    return "\n".join(lines)


def _volcano(checks: Mapping[str, Any]) -> list[str]:
    """The `volcano` phase (`--volcano-worker`): each check's figure as recorded."""
    if not checks:
        return []
    lines = [f"## Worker {checks.get('worker')} running real Volcano", ""]
    lines += [f"Volcano's admission webhook: {checks.get('admission', '-')}.", ""]
    lines += ["| check | value |", "|---|---|"]
    for part in ("dispatched", "lifecycle"):
        for key, value in (checks.get(part) or {}).items():
            lines.append(f"| {part}: {key} | {json.dumps(value, sort_keys=True)} |")
    return [*lines, ""]


def _soak(soak: Mapping[str, Any]) -> list[str]:
    """The soak's figures, its faults in order, each invariant with its first violations."""
    faults = soak.get("faults", [])
    pods = f"{soak.get('submitted')} ({soak.get('pods')})"
    lines = [f"## Soak: {soak.get('minutes')} minutes, clusters lost and returned", ""]
    lines += ["| figure | value |", "|---|---:|"]
    for label, path, unit in SOAK_ROWS:
        value = {"submitted": pods, "fault_count": len(faults)}.get(path[0], figure(soak, path))
        lines.append(f"| {label} | {cell(value, unit)} |")
    ends = ", ".join(f"{k} {v}" for k, v in soak.get("ends", {}).items())
    reasons = ", ".join(f"{k} {v}" for k, v in soak.get("event_reasons", {}).items())
    lines += ["", f"Ends on the manager: {ends or '-'}. Events by reason: {reasons or '-'}.", ""]
    lines += ["| at (s) | fault | detail |", "|---:|---|---|"]
    lines += [f"| {f['at_s']} | {f['kind']} | {f['detail']} |" for f in faults]
    lines += ["", "| invariant | violations |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in soak.get("invariants", {}).items()]
    lines.append("")
    for name, found in soak.get("violations", {}).items():
        lines += [f"- {name}: {v}" for v in found]
    tolerated = soak.get("tolerated_overlaps", 0)
    if tolerated:
        lines += [
            "",
            f"Not counted: {tolerated} samples in which a returned cluster still ran a stale "
            f"copy's pods beside the new copy's, at most {soak.get('tolerated_worst_s')} s "
            f"after its apiserver came back (jobs: {', '.join(soak.get('tolerated_jobs', []))}).",
        ]
    for key in ("restored", "refused", "errors"):
        if soak.get(key):
            lines += ["", f"{key.capitalize()}: " + "; ".join(soak[key])]
    return [*lines, ""]


def failed(result: Mapping[str, Any]) -> bool:
    """A phase that errored, or a soak with a violated invariant."""
    phases = result.get("phases", {})
    broken = any((phases.get("soak") or {}).get("invariants", {}).values())
    return broken or any("error" in p for p in phases.values())


def write(result: Mapping[str, Any], out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2, sort_keys=True))
    text = markdown(result)
    (out / "report.md").write_text(text)
    return text
