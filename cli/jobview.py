"""What `caldera job list` and `job view` show of a Job: pure functions of the apiserver's object
and the workflow's status query answer (a JobWorkflow's `status`; for a Job dispatched to a
worker cluster, its DispatchWorkflow's `dispatch`: where the job runs, what it waits for, which
old copies are still to be deleted).

`summary` builds one mapping that the table rendering and the JSON/YAML output share, so every
format carries the same fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from cli import output
from models import scheduling
from models.signals import job as job_signals
from workflows.dispatch import DispatchView

Obj = dict[str, Any]
POD_COUNTS: Final = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
TASK_HEADERS: Final = ("TASK", "REPLICAS", "MINAVAILABLE", "PODS")
DELAYED_HEADERS: Final = ("ACTION", "EVENT", "TASK", "POD", "FIRES AT")


def queue(job: Obj) -> str:
    return str((job.get("spec") or {}).get("queue") or scheduling.DEFAULT_QUEUE)


def phase(job: Obj) -> str | None:
    """None: the workflow has not written a status yet."""
    state = ((job.get("status") or {}).get("state")) or {}
    found = state.get("phase")
    return str(found) if found else None


def list_row(job: Obj, now: datetime, with_namespace: bool) -> list[object]:
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    row: list[object] = [
        meta.get("name", ""),
        queue(job),
        phase(job),
        spec.get("minAvailable", status.get("minAvailable")),
        status.get("pending", 0),
        status.get("running", 0),
        status.get("succeeded", 0),
        status.get("failed", 0),
        status.get("retryCount", 0),
        output.age(meta.get("creationTimestamp"), now),
    ]
    return [meta.get("namespace", ""), *row] if with_namespace else row


def summary(
    job: Obj,
    workflow_id: str,
    workflow: job_signals.JobView | DispatchView | str,
    url: str,
    now: datetime,
) -> dict[str, Any]:
    """workflow: the status query's answer, or why it could not be had."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    state = status.get("state") or {}
    counts = status.get("taskStatusCount") or {}
    tasks = [
        {
            "name": t.get("name", ""),
            "replicas": t.get("replicas", 0),
            "min_available": t.get("minAvailable", t.get("replicas", 0)),
            "pods": dict((counts.get(t.get("name", "")) or {}).get("phase") or {}),
        }
        for t in spec.get("tasks") or []
    ]
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "queue": queue(job),
        "phase": phase(job),
        "reason": state.get("reason"),
        "message": state.get("message"),
        "min_available": spec.get("minAvailable", status.get("minAvailable")),
        "max_retry": spec.get("maxRetry"),
        "retry_count": status.get("retryCount", 0),
        "version": status.get("version", 0),
        "pods": {k: status.get(k, 0) for k in POD_COUNTS},
        "age": output.age(meta.get("creationTimestamp"), now),
        "tasks": tasks,
        "policies": [_policy(p) for p in spec.get("policies") or []],
        "workflow": _workflow(workflow_id, workflow),
        "url": url,
    }


def render(s: dict[str, Any]) -> str:
    """The human view of `summary`: fields, the tasks, the delayed actions, the link."""
    wf = s["workflow"]
    phase_line = s["phase"] or "(no status yet)"
    if s["reason"]:
        phase_line += f" ({s['reason']}: {s['message']})" if s["message"] else f" ({s['reason']})"
    lines = [
        output.fields(
            [
                ("Job", f"{s['namespace']}/{s['name']}"),
                ("Queue", s["queue"]),
                ("Phase", phase_line),
                ("MinAvailable", s["min_available"]),
                ("MaxRetry", s["max_retry"]),
                ("Retries", s["retry_count"]),
                ("Version", s["version"]),
                ("Pods", " ".join(f"{k}={v}" for k, v in s["pods"].items())),
                ("Age", s["age"]),
                ("Policies", "; ".join(s["policies"]) or None),
                ("Workflow", _workflow_line(wf)),
                *_dispatch_fields(wf.get("dispatch")),
            ]
        ),
        "",
        output.table(
            TASK_HEADERS,
            [(t["name"], t["replicas"], t["min_available"], t["pods"]) for t in s["tasks"]],
        ),
    ]
    delayed = wf.get("delayed_actions") or []
    lines.append("")
    if delayed:
        lines.append("Delayed actions:")
        rows = [(d["action"], d["event"], d["task"], d["pod"], d["fires_at"]) for d in delayed]
        lines.append(output.table(DELAYED_HEADERS, rows))
    elif "error" not in wf and "dispatch" not in wf:  # a copy's are kept where it runs
        lines.append("Delayed actions: none")
    lines.append(f"History: {s['url']}")
    return "\n".join(lines)


def _policy(p: Obj) -> str:
    """`PodEvicted → RestartJob after 5m`, `exit 3 → RestartJob`."""
    events = p.get("events") or ([p["event"]] if p.get("event") else [])
    when = ",".join(events) if events else f"exit {p.get('exitCode')}"
    after = f" after {p['timeout']}" if p.get("timeout") else ""
    return f"{when} → {p.get('action')}{after}"


def _workflow(
    workflow_id: str, workflow: job_signals.JobView | DispatchView | str
) -> dict[str, Any]:
    if isinstance(workflow, str):
        return {"id": workflow_id, "error": workflow}
    if isinstance(workflow, DispatchView):
        shown = workflow.model_dump(exclude={"phase"})
        return {"id": workflow_id, "phase": workflow.phase, "dispatch": shown}
    return {
        "id": workflow_id,
        "phase": workflow.phase,
        "pod_group_phase": workflow.pod_group_phase,
        "backlog": workflow.backlog,
        "delayed_actions": [d.model_dump() for d in workflow.delayed],
    }


def _workflow_line(wf: dict[str, Any]) -> str:
    if "error" in wf:
        return f"{wf['id']} ({wf['error']})"
    parts = [f"phase {wf['phase']}"]
    if "dispatch" in wf:
        return f"{wf['id']} ({parts[0]})"
    if wf["pod_group_phase"]:
        parts.append(f"PodGroup {wf['pod_group_phase']}")
    if wf["backlog"]:
        parts.append(f"{wf['backlog']} inputs waiting")
    return f"{wf['id']} ({', '.join(parts)})"


def _dispatch_fields(d: dict[str, Any] | None) -> list[tuple[str, object]]:
    """A dispatched job's lines (d: the `dispatch` query's answer; None: not dispatched)."""
    if d is None:
        return []
    if d["cluster"]:
        unreachable = ", not answering" if d["unreachable"] else ""
        where = f"{d['cluster']} (generation {d['generation']}{unreachable})"
    elif d["generation"]:
        where = f"(none now; generation {d['generation']} was the last)"
    else:
        where = "(none yet)"
    pairs: list[tuple[str, object]] = [("Cluster", where)]
    if d["waiting"]:
        pairs.append(("Waiting", d["waiting"]))
    if d["stale"]:
        pairs.append(("Stale copies", ", ".join(d["stale"])))
    if d["held_commands"]:
        pairs.append(("Commands", f"{d['held_commands']} held for the copy"))
    return pairs
