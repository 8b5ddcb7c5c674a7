"""The dispatch soak's invariants, each a pure function of what the soak recorded (the polls of
the manager's Jobs, the samples of the worker clusters' pods, the dispatch workflows' phase
history); a violation names the job, the time and what broke.

Kept apart from the soak's shell (`soak.py`) so each rule is tested on recorded data, without
a stack. `Violation` is the chaos soak's, so both soaks report alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from bench.chaos.invariants import Violation
from models.dispatch import dispatch_workflow_id

# Phases a dispatched job never leaves: Volcano's finished phases and Aborted, which the
# manager's Job must never show for a job no one aborted (a copy fenced by its lease is not
# the job's end: `docs/user-guide/dispatch.md`).
ENDS: Final = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
WANTED: Final = "Completed"


@dataclass(frozen=True)
class Sample:
    """One poll of the worker clusters: for each cluster that answered, how many Running pods
    (not being deleted) each job has there. A cluster that did not answer is absent."""

    at: float  # epoch seconds the poll began
    running: Mapping[str, Mapping[str, int]]  # cluster -> job -> Running pods


@dataclass(frozen=True)
class Overlap:
    at: float
    job: str
    clusters: tuple[str, ...]


def record_phase(
    phases: dict[str, list[tuple[float, str]]], job: str, at: float, phase: str
) -> None:
    """Append `phase` to the job's polled story when it differs from the last one seen."""
    story = phases.setdefault(job, [])
    if phase and (not story or story[-1][1] != phase):
        story.append((at, phase))


def overlaps(samples: Iterable[Sample]) -> list[Overlap]:
    """Every sampled moment at which two clusters that both answered ran pods of one job."""
    out: list[Overlap] = []
    for s in samples:
        where: dict[str, list[str]] = {}
        for cluster, jobs in sorted(s.running.items()):
            for job, pods in jobs.items():
                if pods > 0:
                    where.setdefault(job, []).append(cluster)
        out += [Overlap(s.at, j, tuple(c)) for j, c in sorted(where.items()) if len(c) > 1]
    return out


def split_overlaps(
    found: Sequence[Overlap], returns: Mapping[str, Sequence[float]], grace: float
) -> tuple[list[Violation], list[Overlap]]:
    """Overlaps as violations, except those within `grace` seconds after one of the two
    clusters came back: its apiserver was dead, so nothing could stop its stale copy's pods
    before it answered; the manager deletes that copy first thing (the e2e test allows the
    same window). Returns (violations, tolerated)."""
    bad: list[Violation] = []
    tolerated: list[Overlap] = []
    for o in found:
        back = any(0 <= o.at - t <= grace for c in o.clusters for t in returns.get(c, ()))
        if back:
            tolerated.append(o)
        else:
            where = " and ".join(o.clusters)
            bad.append(Violation("two clusters ran it", f"{o.job} at {o.at:.1f}: on {where}"))
    return bad, tolerated


def ends_once(
    jobs: Iterable[str],
    polled: Mapping[str, Sequence[tuple[float, str]]],
    upserted: Mapping[str, Sequence[str]],
) -> list[Violation]:
    """Every job ends Completed, once: its polled phases on the manager and the phases its
    DispatchWorkflow's history upserted (every run, in order) each enter an end exactly once,
    that end is Completed, and nothing follows it."""
    out: list[Violation] = []
    for job in sorted(jobs):
        seen = [p for _, p in polled.get(job, ())]
        out += _story(job, "polled", seen)
        if job not in upserted:
            out.append(Violation("ends once", f"{job}: no dispatch history read"))
        else:
            out += _story(job, "history", list(upserted[job]))
    return out


def _story(job: str, source: str, phases: list[str]) -> list[Violation]:
    ends = [i for i, p in enumerate(phases) if p in ENDS]
    trail = " > ".join(phases) or "no phase"
    if not ends or phases[-1] != WANTED:
        return [Violation("ends once", f"{job} ({source}): {trail}, not {WANTED}")]
    if len(ends) > 1 or ends[0] != len(phases) - 1:
        return [Violation("ends once", f"{job} ({source}): ended more than once: {trail}")]
    return []


def moves(generations: Mapping[str, int]) -> int:
    """Copies made beyond each job's first: its failovers and re-runs."""
    return sum(max(0, g - 1) for g in generations.values())


def histories_read(namespace: str, jobs: Iterable[str], read: set[str]) -> list[Violation]:
    """Each job's DispatchWorkflow history was read (else the history checks saw nothing)."""
    missing = sorted(j for j in jobs if dispatch_workflow_id(namespace, j) not in read)
    return [
        Violation("history not read", f"{j}: no {dispatch_workflow_id(namespace, j)}")
        for j in missing
    ]


def left_behind(what: str, left: Mapping[str, int]) -> list[Violation]:
    """Anything of the deleted jobs still there once the cleanup's budget ran out."""
    return [Violation("left behind", f"{n} {what} on {c}") for c, n in sorted(left.items()) if n]
