"""What Temporal saw of a Caldera side: open workflows of a namespace, sampled histories
(events per job, workflow task failures and timeouts), and visibility counts."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

from temporalio.api.enums.v1 import EventType, TimeoutType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError

from models import keys

T = TypeVar("T")
JOB_TYPES: Final = "WorkflowType IN ('JobWorkflow','BatchJobWorkflow')"
WFT_FAILED: Final = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
WFT_TIMED_OUT: Final = EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT


def workflow_id(side: str, namespace: str, name: str) -> str:
    if side in ("caldera", "caldera-server"):  # Volcano Jobs
        return keys.job_workflow_id(namespace, name)
    return keys.batch_job_workflow_id(namespace, name)


def id_prefix(side: str, namespace: str) -> str:
    return workflow_id(side, namespace, "")


class Probe:
    """A Temporal client on its own event loop, for the benchmark's synchronous code."""

    def __init__(self, address: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._client: Client = self._run(Client.connect(address))

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        self._loop.close()

    def count(self, query: str) -> int | None:
        """A visibility count; None when the server refuses the query."""
        try:
            return self._run(self._client.count_workflows(query)).count
        except RPCError:
            return None

    def open_jobs(self, namespace: str) -> int | None:
        """Open JobWorkflows / BatchJobWorkflows whose CalderaNamespace is `namespace`."""
        return self.count(
            f"{JOB_TYPES} AND CalderaNamespace='{namespace}' AND ExecutionStatus='Running'"
        )

    def open_by_prefix(self, prefix: str) -> int | None:
        """The same by workflow id prefix (also counts a run that never set its attributes)."""
        return self.count(f"WorkflowId STARTS_WITH '{prefix}' AND ExecutionStatus='Running'")

    def visibility(self, side: str, namespace: str) -> dict[str, int | None]:
        prefix = id_prefix(side, namespace)
        return {
            "workflows": self.count(f"WorkflowId STARTS_WITH '{prefix}'"),
            "open": self.open_by_prefix(prefix),
            "reporting_problems": self.count(
                f"WorkflowId STARTS_WITH '{prefix}' AND TemporalReportedProblems IS NOT NULL"
            ),
        }

    def histories(self, ids: list[str]) -> dict[str, Any]:
        return self._run(self._histories(ids))

    async def _histories(self, ids: list[str]) -> dict[str, Any]:
        per_job: list[int] = []
        by_type: dict[str, int] = {}
        story: list[str] = []
        problems: list[tuple[str, str]] = []  # (cause, "event i of n in <workflow id>")
        runs = 0
        for wid in ids:
            events = 0
            async for execution in self._client.list_workflows(f"WorkflowId = '{wid}'"):
                runs += 1
                handle = self._client.get_workflow_handle(wid, run_id=execution.run_id)
                history = [e async for e in handle.fetch_history_events()]
                events += len(history)
                for e in history:
                    kind = EventType.Name(e.event_type).removeprefix("EVENT_TYPE_")
                    by_type[kind] = by_type.get(kind, 0) + 1
                if not story:
                    story = [_line(e) for e in history]
                problems += [
                    (_cause(e), f"event {e.event_id} of {len(history)} in {wid}")
                    for e in history
                    if e.event_type in (WFT_FAILED, WFT_TIMED_OUT)
                ]
            per_job.append(events)
        causes: dict[str, int] = {}
        for cause, _ in problems:
            causes[cause] = causes.get(cause, 0) + 1
        return {
            "sampled": len(per_job),
            "runs": runs,
            "events_mean": round(statistics.fmean(per_job), 1) if per_job else None,
            "events_max": max(per_job) if per_job else None,
            "workflow_task_failed": sum(1 for c, _ in problems if c.startswith("failed")),
            "workflow_task_timed_out": sum(1 for c, _ in problems if c.startswith("timed out")),
            "events_by_type": {
                k: round(v / max(1, len(per_job)), 1)
                for k, v in sorted(by_type.items(), key=lambda kv: -kv[1])
            },
            "story": story,
            "task_problem_causes": causes,
            "task_problems_where": [f"{c}: {where}" for c, where in problems[:10]],
        }


def _line(event: HistoryEvent) -> str:
    """One event as a line of a story: its type and what it names (signal, activity, marker)."""
    kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
    detail = ""
    if event.HasField("workflow_execution_signaled_event_attributes"):
        detail = event.workflow_execution_signaled_event_attributes.signal_name
    elif event.HasField("activity_task_scheduled_event_attributes"):
        detail = event.activity_task_scheduled_event_attributes.activity_type.name
    elif event.HasField("marker_recorded_event_attributes"):
        detail = event.user_metadata.summary.data.decode(errors="replace")[:80]
    return f"{event.event_id} {kind} {detail}".rstrip()


def _cause(event: HistoryEvent) -> str:
    """`failed: UNHANDLED_COMMAND`-style: what the server or the worker gave as the reason."""
    if event.event_type == WFT_FAILED:
        cause = event.workflow_task_failed_event_attributes.cause
        name = WorkflowTaskFailedCause.Name(cause).removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
        return f"failed: {name}"
    kind = event.workflow_task_timed_out_event_attributes.timeout_type
    return f"timed out: {TimeoutType.Name(kind).removeprefix('TIMEOUT_TYPE_')}"


def sample(names: list[str], size: int) -> list[str]:
    """About `size` names spread evenly over the list (first and last included)."""
    if len(names) <= size:
        return list(names)
    step = (len(names) - 1) / max(1, size - 1)
    return sorted({names[round(i * step)] for i in range(size)})
