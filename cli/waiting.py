"""`caldera queue pending` and `caldera job why`: where jobs wait and why, from the scheduler's
own state (its workflow's `pending_jobs` and `job_standing` queries), without listing the
apiserver.

Each answer is as of the last session that changed it. A job the scheduler does not list is
looked up in its own workflow (the `status` query) to say what it is doing instead: running,
finished, or waiting beyond the jobs the scheduler lists. A job dispatched to a worker cluster
never waits in this scheduler: its DispatchWorkflow (the `dispatch` query) says which cluster
runs it, or why none does yet.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from typing import Any, Final

from cli import jobroute, output, remote, verbs
from cli.clients import CliError, Connections, guarded
from models.defaults import DEFAULT_SCHEDULER
from models.signals import job as job_signals
from scheduling.api.backlog import JobStanding, PendingJobs
from workflows.dispatch import DispatchView

PENDING_HEADERS: Final = ("POSITION", "NAMESPACE", "JOB", "PHASE", "STARTS", "REASON")
WAITING_PHASE: Final = "Pending"  # a Volcano Job's phase while its PodGroup is not running


def _scheduler_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scheduler",
        default=DEFAULT_SCHEDULER,
        help=f"the scheduler's name, as pods' schedulerName (default {DEFAULT_SCHEDULER})",
    )


def add_queue_pending(queues: verbs.Verbs, common: argparse.ArgumentParser) -> None:
    pending = queues.add_parser(
        "pending", parents=[common], help="the jobs waiting in a Queue, in order, with why"
    )
    pending.add_argument("name", metavar="QUEUE")
    _scheduler_flag(pending)
    output.add_argument(pending)
    pending.set_defaults(fn=guarded(_pending))


def add_job_why(jobs: verbs.Verbs, common: argparse.ArgumentParser) -> None:
    why = jobs.add_parser(
        "why", parents=[common], help="where a Job waits in its queue, and why it waits"
    )
    why.add_argument("name")
    _scheduler_flag(why)
    output.add_argument(why)
    why.set_defaults(fn=guarded(_why))


def starts_in(at: datetime | None, now: datetime) -> str | None:
    """The STARTS cell: `~12m`, `now` when due, None (`-`) without an estimate."""
    if at is None:
        return None
    return "now" if at <= now else f"~{output.span((at - now).total_seconds())}"


def starts_text(at: datetime | None, now: datetime, runs: int, median_s: float | None) -> str:
    """`job why`'s estimate with what it rests on (`scheduling.api.estimate`)."""
    if at is None:
        if not runs:
            return "no estimate: no job of the queue has finished yet to expect one from"
        return "not under the queue's current capacity (its capability, the cluster's nodes)"
    when = "any moment" if at <= now else f"in ~{output.span((at - now).total_seconds())}"
    median = output.span(median_s or 0)
    return (
        f"{when} ({at:%Y-%m-%d %H:%M} UTC): the jobs ahead and running end as the queue's "
        f"last {runs} runs did (median {median}); later arrivals, other queues and node "
        "fit not counted"
    )


def pending_rows(answer: PendingJobs, now: datetime) -> list[list[object]]:
    return [
        [
            j.position,
            j.namespace,
            j.name,
            j.phase,
            starts_in(j.estimated_start, now),
            j.reason or None,
        ]
        for j in answer.jobs
    ]


def pending_footer(answer: PendingJobs) -> str | None:
    """The line under a capped list; None: every waiting job is listed."""
    if answer.total <= len(answer.jobs):
        return None
    return f"showing the first {len(answer.jobs)} of {answer.total} jobs waiting in {answer.queue}"


def render_pending(answer: PendingJobs, now: datetime) -> str:
    footer = pending_footer(answer)
    table = output.table(PENDING_HEADERS, pending_rows(answer, now))
    return table if footer is None else f"{table}\n\n{footer}"


def _pending(args: argparse.Namespace) -> int:
    conn = Connections(args)
    what = f"ask scheduler {args.scheduler} for the jobs waiting in queue {args.name}"
    answer = asyncio.run(remote.pending_jobs(conn, args.scheduler, args.name, what))
    if args.output is not output.Format.TABLE:
        print(output.dump(answer.model_dump(mode="json"), args.output))
    elif answer.total:
        print(render_pending(answer, datetime.now(UTC)))
    else:
        print(f"no jobs waiting in queue {args.name}", file=sys.stderr)
    return 0


def why_summary(
    namespace: str,
    name: str,
    standing: JobStanding | None,
    view: job_signals.JobView | DispatchView | str | None,
    queue: PendingJobs | None,
) -> dict[str, Any]:
    """What `job why` says: where the job stands, or what it does instead.

    view: the job's `status` query answer (`dispatch` for a dispatched one), or why there is
    none (None: not asked, it waits); queue: its queue's line, asked when the job waits but is
    not listed (None: not asked)."""
    found: dict[str, Any] = {"namespace": namespace, "name": name}
    if standing is not None:
        shown = standing.model_dump(mode="json", exclude={"namespace", "name"})
        return found | {"waiting": True} | shown
    found["waiting"] = False
    if view is None or isinstance(view, str):
        found["note"] = (
            "not among the jobs the scheduler lists as waiting, and its workflow cannot be "
            f"asked: {view}"
        )
        return found
    if isinstance(view, DispatchView):
        return found | _dispatched(view)
    found |= {"queue": view.queue, "job_phase": view.phase, "pod_group_phase": view.pod_group_phase}
    if view.phase != WAITING_PHASE:
        found["note"] = f"the job is {view.phase}: it does not wait in a queue"
    elif queue is not None and queue.total > len(queue.jobs):
        found["note"] = (
            f"waits in queue {view.queue} behind the first {len(queue.jobs)} listed "
            f"({queue.total} waiting)"
        )
    else:
        found["note"] = "no session has listed it yet (its PodGroup is new, or being admitted)"
    return found


def _dispatched(view: DispatchView) -> dict[str, Any]:
    found: dict[str, Any] = {
        "job_phase": view.phase,
        "cluster": view.cluster,
        "generation": view.generation,
    }
    if view.cluster:
        found["note"] = (
            f"dispatched to worker cluster {view.cluster} (generation {view.generation}): it "
            "waits, if it does, in that cluster's scheduler"
        )
    else:
        found["note"] = f"waits for a worker cluster: {view.waiting or 'choosing one'}"
    return found


def render_why(s: dict[str, Any], now: datetime) -> str:
    job = f"{s['namespace']}/{s['name']}"
    if s["waiting"]:
        at = s.get("estimated_start")
        start = datetime.fromisoformat(at) if at else None
        pairs: list[tuple[str, object]] = [
            ("Job", job),
            ("Queue", s["queue"]),
            ("Position", f"{s['position']} of {s['total']}"),
            ("Phase", s["phase"]),
            ("Reason", s["reason"] or None),
            ("Starts", starts_text(start, now, s.get("runs", 0), s.get("median_s"))),
        ]
        return output.fields(pairs)
    lines: list[tuple[str, object]] = [("Job", job)]
    if "cluster" in s:
        lines += [("Phase", s["job_phase"]), ("Cluster", s["cluster"] or "(none)")]
    elif "job_phase" in s:
        lines += [("Queue", s["queue"]), ("Phase", s["job_phase"])]
    return f"{output.fields(lines)}\n{s['note']}"


async def _ask(args: argparse.Namespace, conn: Connections, namespace: str) -> dict[str, Any]:
    """A dispatched job is asked of its DispatchWorkflow alone: it never waits in this
    cluster's scheduler (a manager that only dispatches may run none)."""
    name = args.name
    route = jobroute.named(conn, namespace, name)
    workflow_id = route.workflow_id
    view: job_signals.JobView | DispatchView | str
    if route.dispatched:
        try:
            view = await remote.dispatch_view(conn, workflow_id, f"query workflow {workflow_id}")
        except CliError as e:
            view = str(e)
        return why_summary(namespace, name, None, view, None)
    what = f"ask scheduler {args.scheduler} where job {namespace}/{name} stands"
    standing = await remote.job_standing(conn, args.scheduler, namespace, name, what)
    if standing is not None:
        return why_summary(namespace, name, standing, None, None)
    try:
        view = await remote.job_view(conn, workflow_id, f"query workflow {workflow_id}")
    except CliError as e:
        view = str(e)
    queue = None
    if isinstance(view, job_signals.JobView) and view.phase == WAITING_PHASE:
        asked = f"ask scheduler {args.scheduler} for the jobs waiting in queue {view.queue}"
        queue = await remote.pending_jobs(conn, args.scheduler, view.queue, asked)
    return why_summary(namespace, name, None, view, queue)


def _why(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = str(args.namespace or conn.default_namespace())
    summary = asyncio.run(_ask(args, conn, namespace))
    if args.output is output.Format.TABLE:
        print(render_why(summary, datetime.now(UTC)))
    else:
        print(output.dump(summary, args.output))
    return 0
