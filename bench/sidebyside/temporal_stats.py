"""What Temporal saw of a Caldera side: open workflows of a namespace, sampled histories
(events per job, workflow task failures and timeouts), visibility counts, and the events the
shared workflows (scheduler, queues, PodGroups) spent in a wall-clock window, since a job costs
its share of those as well as its own history. The counting is pure (lists of events in, figures
out) so it is tested without a server."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
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
# The SDK core's marker for a local activity's result (`LOCAL_ACTIVITY_MARKER_NAME`).
LOCAL_ACTIVITY_MARKER: Final = "core_local_activity"
# What each derived count adds up; a local activity is a marker, told apart by its name.
DERIVED: Final[Mapping[str, tuple[int, ...]]] = {
    "workflow_tasks": (EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,),
    "activities": (EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,),
    "local_activities": (EventType.EVENT_TYPE_MARKER_RECORDED,),
    "signals": (EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,),
    "timers": (EventType.EVENT_TYPE_TIMER_STARTED,),
    "upserts": (
        EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
        EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,  # upsert_memo
    ),
}
# The workflows every job shares, by kind: their ids' prefixes, spelled by `models.keys`
# (a PodGroup's id has two parts; both empty leave "podgroup//").
SHARED_PREFIXES: Final = {
    "scheduler": keys.scheduler_workflow_id(""),
    "queue": keys.queue_workflow_id(""),
    "podgroup": keys.pod_group_workflow_id("", "").removesuffix("/"),
}
SHARED_KINDS: Final = tuple(SHARED_PREFIXES)
TOP_TYPES: Final = 8  # event types kept per kind and window
Window = tuple[datetime, datetime]  # [start, end), timezone-aware
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


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

    def shared(self, windows: Mapping[str, Window]) -> dict[str, dict[str, Any] | None]:
        """The shared workflows' events in each window, from one read of their histories
        (`shared_counts`); a window's figures are None when visibility or a history read
        failed, so a lost figure never ends the run."""
        if not windows:
            return {}
        span = (min(w[0] for w in windows.values()), max(w[1] for w in windows.values()))
        try:
            runs = self._run(self._shared_runs(span))
        except Exception as e:  # RPCError, a deadline, a dropped connection
            print(f"shared workflows unreadable: {type(e).__name__}: {e}", flush=True)
            return dict.fromkeys(windows)
        return {name: shared_counts(runs, window) for name, window in windows.items()}

    async def _shared_runs(self, span: Window) -> list[tuple[str, list[HistoryEvent]]]:
        """Every run (continue-as-new makes several per id, closed ones included) of every
        shared workflow that was alive at some moment of `span`, with its history."""
        runs: list[tuple[str, list[HistoryEvent]]] = []
        for prefix in SHARED_PREFIXES.values():
            query = f"WorkflowId STARTS_WITH '{prefix}'"
            async for execution in self._client.list_workflows(query):
                closed = execution.close_time
                if execution.start_time > span[1] or (closed is not None and closed < span[0]):
                    continue
                handle = self._client.get_workflow_handle(execution.id, run_id=execution.run_id)
                runs.append((execution.id, [e async for e in handle.fetch_history_events()]))
        return runs

    async def _histories(self, ids: list[str]) -> dict[str, Any]:
        per_job: list[int] = []
        by_type: dict[str, int] = {}
        story: list[str] = []
        problems: list[tuple[str, str]] = []  # (cause, "event i of n in <workflow id>")
        derived = dict.fromkeys(DERIVED, 0)
        runs = 0
        for wid in ids:
            events = 0
            async for execution in self._client.list_workflows(f"WorkflowId = '{wid}'"):
                runs += 1
                handle = self._client.get_workflow_handle(wid, run_id=execution.run_id)
                history = [e async for e in handle.fetch_history_events()]
                events += len(history)
                for e in history:
                    by_type[_type_name(e)] = by_type.get(_type_name(e), 0) + 1
                for key, n in tally(history).items():
                    derived[key] += n
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
            **{k: round(v / len(per_job), 2) if per_job else None for k, v in derived.items()},
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


def derived_key(event: HistoryEvent) -> str | None:
    """Which derived count the event adds to; None: none (an event of no interest here)."""
    if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
        marker = event.marker_recorded_event_attributes.marker_name
        return "local_activities" if marker == LOCAL_ACTIVITY_MARKER else None
    return next((k for k, types in DERIVED.items() if event.event_type in types), None)


def tally(events: Iterable[HistoryEvent]) -> dict[str, int]:
    """The derived counts of some events: workflow tasks, activities, local activities,
    signals, timers, upserts."""
    counts = dict.fromkeys(DERIVED, 0)
    for e in events:
        key = derived_key(e)
        if key is not None:
            counts[key] += 1
    return counts


def shared_kind(wid: str) -> str | None:
    """scheduler, queue or podgroup; None: not a shared workflow's id."""
    return next((k for k, p in SHARED_PREFIXES.items() if wid.startswith(p)), None)


def in_window(events: Iterable[HistoryEvent], window: Window) -> list[HistoryEvent]:
    """The events whose time is in [start, end): adjacent windows count an event once."""
    start, end = (_nanos(t) for t in window)
    return [e for e in events if start <= e.event_time.ToNanoseconds() < end]


def shared_counts(
    runs: Iterable[tuple[str, Sequence[HistoryEvent]]], window: Window
) -> dict[str, Any]:
    """What the shared workflows spent in `window`, per kind (scheduler, queue, podgroup)
    and in all. `runs` holds one (workflow id, events) item per run; other ids are ignored."""
    per_kind: dict[str, list[tuple[str, list[HistoryEvent]]]] = {k: [] for k in SHARED_KINDS}
    for wid, events in runs:
        kind, inside = shared_kind(wid), in_window(events, window)
        if kind is not None and inside:
            per_kind[kind].append((wid, inside))
    by_kind = {kind: _kind_figures(items) for kind, items in per_kind.items()}
    return {
        "start": window[0].isoformat(),
        "end": window[1].isoformat(),
        "seconds": round((window[1] - window[0]).total_seconds(), 2),
        "events": sum(k["events"] for k in by_kind.values()),
        **{key: sum(k[key] for k in by_kind.values()) for key in DERIVED},
        "by_kind": by_kind,
    }


def _kind_figures(runs: list[tuple[str, list[HistoryEvent]]]) -> dict[str, Any]:
    """One kind's workflows and runs with events in the window, their events, the derived
    counts and the commonest event types (ties by name, so a report is stable)."""
    events = [e for _, run in runs for e in run]
    types: dict[str, int] = {}
    for e in events:
        types[_type_name(e)] = types.get(_type_name(e), 0) + 1
    top = sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TYPES]
    return {
        "workflows": len({wid for wid, _ in runs}),
        "runs": len(runs),
        "events": len(events),
        **tally(events),
        "events_by_type": dict(top),
    }


def _nanos(t: datetime) -> int:
    """A UTC datetime as a protobuf Timestamp's nanoseconds, exactly (no float on the way)."""
    return (t - EPOCH) // timedelta(microseconds=1) * 1000


def _type_name(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")


def _line(event: HistoryEvent) -> str:
    """One event as a line of a story: its type and what it names (signal, activity, marker)."""
    kind = _type_name(event)
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
