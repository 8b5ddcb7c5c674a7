"""The soak's report: faults by kind, jobs by kind and end, each invariant with its count and
its first violations, the recovery time after each fault kind, the workflow tasks."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from bench.chaos import schedule, workload
from bench.chaos.histories import Run
from bench.chaos.invariants import Violation
from bench.chaos.soak import Soak


@dataclass
class Recovery:
    kind: str
    count: int
    p50_s: float | None
    p99_s: float | None
    worst_s: float | None


@dataclass
class Injected:
    """One fault but a worker kill (those are many and alike): when, what, how long it took,
    and the recovery (fault → the next one-pod job's pod Running)."""

    at_s: float  # seconds from the soak's start
    kind: str
    took_s: float  # until the fault was over (restarted, answering again)
    recovery_s: float | None
    detail: str


@dataclass
class Result:
    options: dict[str, Any]
    namespace: str
    jobs_by_kind: dict[str, int]
    ends_by_kind: dict[str, dict[str, int]]
    refused: list[str]
    faults_by_kind: dict[str, int]
    evictions: int
    recovery: list[Recovery]
    invariants: dict[str, int]
    violations: dict[str, list[str]]
    settled_s: float
    runs: int
    events: int
    largest: str  # the run with the most history events, "<events> <workflow id>"
    task_timeouts: dict[str, int]
    timers: dict[str, int]
    errors: list[str] = field(default_factory=list)
    injected: list[Injected] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not any(self.invariants.values())


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _running(soak: Soak) -> dict[str, float]:
    return {p.job: p.running_at for p in soak.audit.pods.values() if p.running_at is not None}


def _injected(soak: Soak) -> list[Injected]:
    running = _running(soak)
    return [
        Injected(
            at_s=f.at - soak.started,
            kind=f.kind,
            took_s=f.over - f.at,
            recovery_s=running[f.canary] - f.at if f.canary in running else None,
            detail=f.detail,
        )
        for f in sorted(soak.faults, key=lambda f: f.at)
        if f.kind != schedule.WORKER_KILL
    ]


def _recovery(soak: Soak) -> list[Recovery]:
    """From each fault to the first pod of the canary submitted after it Running."""
    running = _running(soak)
    by_kind: dict[str, list[float]] = collections.defaultdict(list)
    counts: collections.Counter[str] = collections.Counter()
    for f in soak.faults:
        counts[f.kind] += 1
        at = running.get(f.canary)
        if at is not None:
            by_kind[f.kind].append(at - f.at)
    return [
        Recovery(
            kind=kind,
            count=n,
            p50_s=_percentile(by_kind[kind], 0.5),
            p99_s=_percentile(by_kind[kind], 0.99),
            worst_s=max(by_kind[kind]) if by_kind[kind] else None,
        )
        for kind, n in sorted(counts.items())
    ]


def build(
    soak: Soak,
    runs: list[Run],
    checks: dict[str, list[Violation]],
    settled: float,
    faults_over: float,
) -> Result:
    kinds = collections.Counter(j.kind.prefix for j in soak.planned)
    ends: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for j in soak.planned:
        seen = soak.audit.jobs.get(j.name)
        end = "Deleted" if seen and seen.deleted else (seen.phase if seen else "never seen")
        ends[j.kind.prefix][end or "no phase"] += 1
    timeouts = collections.Counter(t for r in runs for t in r.task_timeouts)
    timers = collections.Counter(
        "fired" if t.fired else "cancelled" if t.cancelled else "pending"
        for r in runs
        for t in r.timers
    )
    top = max(runs, key=lambda r: r.events, default=None)
    return Result(
        options=soak.opts.model_dump(mode="json"),
        namespace=soak.namespace,
        jobs_by_kind=dict(kinds),
        ends_by_kind={k: dict(v) for k, v in ends.items()},
        refused=soak.refused,
        faults_by_kind=dict(collections.Counter(f.kind for f in soak.faults)),
        evictions=len(soak.evicted),
        recovery=_recovery(soak),
        invariants={name: len(v) for name, v in checks.items()},
        violations={
            name: [f"{x.invariant}: {x.detail}" for x in v[:20]] for name, v in checks.items()
        },
        settled_s=settled,
        runs=len(runs),
        events=sum(r.events for r in runs),
        largest=f"{top.events} {top.workflow_id}" if top else "",
        task_timeouts=dict(timeouts),
        timers=dict(timers),
        errors=soak.errors,
        injected=_injected(soak),
    )


_PROFILES = {
    "dev": "the Temporal dev server on SQLite",
    "server": "the Temporal server on PostgreSQL",
}


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def markdown(r: Result) -> str:
    o = r.options
    lines = [
        f"# Chaos soak: {o['minutes']:g} min of faults, {o['workers']} worker(s),"
        f" {_PROFILES[o.get('temporal', 'dev')]}",
        "",
        f"{sum(r.jobs_by_kind.values())} jobs in namespace `{r.namespace}`, "
        f"{o['nodes']} kwok nodes; every job ended {_s(r.settled_s)} after the last fault "
        f"(bound {o['settle_bound']:.0f} s).",
        "",
        "## Invariants",
        "",
        "| invariant | violations |",
        "|---|---|",
        *(f"| {name} | {n} |" for name, n in r.invariants.items()),
        "",
    ]
    for name, found in r.violations.items():
        if found:
            lines += [f"**{name}**:", "", *(f"- {v}" for v in found), ""]
    lines += [
        "## Faults and recovery (fault → the next one-pod job's pod Running)",
        "",
        "| fault | injected | recovery p50 | p99 | worst |",
        "|---|---|---|---|---|",
        *(
            f"| {x.kind} | {x.count} | {_s(x.p50_s)} | {_s(x.p99_s)} | {_s(x.worst_s)} |"
            for x in r.recovery
        ),
        f"| pod deleted (eviction) | {r.evictions} | | | |",
        "",
        "Each fault but the worker kills:",
        "",
        "| at | fault | over after | recovery | what |",
        "|---|---|---|---|---|",
        *(
            f"| {x.at_s:.0f} s | {x.kind} | {_s(x.took_s)} | {_s(x.recovery_s)} | {x.detail} |"
            for x in r.injected
        ),
        "",
        "## Jobs",
        "",
        "| kind | what | jobs | ends |",
        "|---|---|---|---|",
    ]
    for prefix, n in sorted(r.jobs_by_kind.items()):
        kind = workload.kind_of(f"{prefix}-0-0")
        ends = ", ".join(f"{end} {c}" for end, c in sorted(r.ends_by_kind.get(prefix, {}).items()))
        lines.append(f"| `{prefix}` | {kind.what}; expected {kind.end} | {n} | {ends} |")
    lines += [
        "",
        "## Temporal",
        "",
        f"- {r.runs} workflow runs, {r.events} history events; the largest: {r.largest}",
        f"- workflow tasks timed out (a killed worker's tasks): {r.task_timeouts or 'none'}",
        f"- durable timers: {r.timers or 'none'}",
    ]
    if r.refused:
        lines += ["", "## Refused at submission", "", *(f"- {x}" for x in r.refused)]
    if r.errors:
        lines += [
            "",
            "## Soak errors (the harness, not Caldera)",
            "",
            *(f"- {x}" for x in r.errors),
        ]
    return "\n".join(lines) + "\n"
