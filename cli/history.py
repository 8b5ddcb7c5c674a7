"""A workflow history as a short story: what happened to a Job or Queue, one line per step.

Pure: takes the events as Temporal's JSON history (`WorkflowHistory.to_json_dict()["events"]`,
the same shape `temporal workflow show -o json` writes and `tests/workflows/histories/` keeps)
and returns timeline entries. Workflow-task bookkeeping and activity starts are left out; what
stays is what a user asks about: signals received, timers with their summaries, activities
with theirs, updates, phase changes and continue-as-new.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

Event = Mapping[str, Any]

PREFIX: Final = "EVENT_TYPE_"
# Search attributes whose upserts are phase (or state) changes worth a line.
PHASE_ATTRIBUTES: Final = {"CalderaJobPhase": "phase", "CalderaQueueState": "state"}
MAX_PODS_NAMED: Final = 3


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    time: str  # as Temporal wrote it: RFC 3339, UTC
    kind: str  # "signal", "timer started", "activity failed", ...
    detail: str
    event_id: int
    run_id: str = ""  # "" when the caller did not say which run the events belong to


def continued_from(events: Sequence[Event]) -> str | None:
    """The run this one continued as new from; None: the chain starts here."""
    for event in events:
        if event.get("eventType") == PREFIX + "WORKFLOW_EXECUTION_STARTED":
            run: str | None = _attributes(event).get("continuedExecutionRunId") or None
            return run
    return None


def timeline(events: Sequence[Event], run_id: str = "") -> list[Entry]:
    """The entries of one run, in history order."""
    story = _Story()
    entries = []
    for event in events:
        for kind, detail in story.read(event):
            entries.append(
                Entry(
                    time=str(event.get("eventTime", "")),
                    kind=kind,
                    detail=detail,
                    event_id=int(event.get("eventId", 0)),
                    run_id=run_id,
                )
            )
    return entries


def decode(payload: Mapping[str, Any] | None) -> Any:
    """A `json/plain` payload's value; None for null, absent or undecodable payloads."""
    if not payload:
        return None
    encoding = _b64((payload.get("metadata") or {}).get("encoding", ""))
    if encoding != "json/plain":
        return None
    try:
        return json.loads(_b64(payload.get("data", "")))
    except ValueError:
        return None


class _Story:
    """Reads events in order; remembers what later events refer back to by id."""

    def __init__(self) -> None:
        self._activities: dict[str, str] = {}  # scheduled event id → "type: summary"
        self._attempts: dict[str, int] = {}  # scheduled event id → last attempt number
        self._timers: dict[str, str] = {}  # timer id → summary
        self._updates: dict[str, str] = {}  # update id → update name
        self._readers: dict[str, Callable[[Event, Mapping[str, Any]], tuple[str, str] | None]]
        self._readers = {
            "WORKFLOW_EXECUTION_STARTED": self._started,
            "WORKFLOW_EXECUTION_SIGNALED": self._signaled,
            "ACTIVITY_TASK_SCHEDULED": self._activity_scheduled,
            "ACTIVITY_TASK_STARTED": self._activity_started,
            "ACTIVITY_TASK_COMPLETED": self._activity_ended("activity completed"),
            "ACTIVITY_TASK_FAILED": self._activity_ended("activity failed"),
            "ACTIVITY_TASK_TIMED_OUT": self._activity_ended("activity timed out"),
            "ACTIVITY_TASK_CANCELED": self._activity_ended("activity cancelled"),
            "MARKER_RECORDED": self._local_activity,
            "TIMER_STARTED": self._timer_started,
            "TIMER_FIRED": self._timer_ended("timer fired"),
            "TIMER_CANCELED": self._timer_ended("timer cancelled"),
            "WORKFLOW_EXECUTION_UPDATE_ACCEPTED": self._update_accepted,
            "WORKFLOW_EXECUTION_UPDATE_REJECTED": self._update_rejected,
            "WORKFLOW_EXECUTION_UPDATE_COMPLETED": self._update_completed,
            "UPSERT_WORKFLOW_SEARCH_ATTRIBUTES": self._upserted,
            "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED": self._signal_sent,
            "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED": self._signal_not_sent,
            "WORKFLOW_TASK_FAILED": self._task_failed,
            "WORKFLOW_EXECUTION_CONTINUED_AS_NEW": self._continued,
            "WORKFLOW_EXECUTION_COMPLETED": lambda e, a: ("completed", ""),
            "WORKFLOW_EXECUTION_FAILED": lambda e, a: ("failed", _failure(a)),
            "WORKFLOW_EXECUTION_TERMINATED": lambda e, a: ("terminated", a.get("reason", "")),
            "WORKFLOW_EXECUTION_CANCELED": lambda e, a: ("cancelled", ""),
            "WORKFLOW_EXECUTION_TIMED_OUT": lambda e, a: ("timed out", ""),
        }

    def read(self, event: Event) -> list[tuple[str, str]]:
        """(kind, detail) of each entry; none for bookkeeping nobody asks about."""
        kind = str(event.get("eventType", "")).removeprefix(PREFIX)
        reader = self._readers.get(kind)
        attributes = _attributes(event)
        found = reader(event, attributes) if reader else None
        entries = [found] if found is not None else []
        if kind == "WORKFLOW_EXECUTION_STARTED" and not attributes.get("continuedExecutionRunId"):
            # A job's first phase comes with the forwarder's start request, not as an upsert.
            given = self._upserted(event, attributes)
            entries += [given] if given is not None else []
        return entries

    def _started(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        detail = str((a.get("workflowType") or {}).get("name", ""))
        if a.get("continuedExecutionRunId"):
            detail += f", continued from run {a['continuedExecutionRunId']}"
        return "started", detail

    def _signaled(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        name = str(a.get("signalName", ""))
        hint = _hint(decode(_first(a.get("input"))))
        return "signal", f"{name}: {hint}" if hint else name

    def _activity_scheduled(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        name = str((a.get("activityType") or {}).get("name", ""))
        summary = _summary(event)
        label = f"{name}: {summary}" if summary else name
        self._activities[str(event.get("eventId"))] = label
        return "activity scheduled", label

    def _activity_started(self, event: Event, a: Mapping[str, Any]) -> None:
        self._attempts[str(a.get("scheduledEventId"))] = int(a.get("attempt", 1))
        return None

    def _activity_ended(self, kind: str) -> Callable[[Event, Mapping[str, Any]], tuple[str, str]]:
        def read(event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
            scheduled = str(a.get("scheduledEventId"))
            parts = [self._activities.get(scheduled, f"activity of event {scheduled}")]
            attempts = self._attempts.get(scheduled, 1)
            if attempts > 1:
                parts.append(f"after {attempts} attempts")
            if a.get("failure"):
                parts.append(_failure(a))
            return kind, "; ".join(parts)

        return read

    def _local_activity(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str] | None:
        """A local activity is one marker: its type and attempts, then its outcome."""
        if a.get("markerName") != "core_local_activity":
            return None  # patch markers are bookkeeping
        data = decode(_first((a.get("details") or {}).get("data")))
        info: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
        name, summary = str(info.get("activity_type", "")), _summary(event)
        parts = [f"{name}: {summary}" if summary else name]
        if int(info.get("attempt") or 1) > 1:
            parts.append(f"after {info['attempt']} attempts")
        if a.get("failure"):
            return "local activity failed", "; ".join([*parts, _failure(a)])
        failed = _failed_steps(decode(_first((a.get("details") or {}).get("result"))))
        if failed:
            return "local activity failed", "; ".join([*parts, *failed])
        return "local activity", "; ".join(parts)

    def _timer_started(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        summary = _summary(event) or f"timer {a.get('timerId', '')}"
        self._timers[str(a.get("timerId"))] = summary
        return "timer started", f"{summary} (fires after {_duration(a.get('startToFireTimeout'))})"

    def _timer_ended(self, kind: str) -> Callable[[Event, Mapping[str, Any]], tuple[str, str]]:
        def read(event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
            timer = str(a.get("timerId"))
            return kind, self._timers.get(timer, f"timer {timer}")

        return read

    def _update_accepted(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        request = a.get("acceptedRequest") or {}
        name = str((request.get("input") or {}).get("name", ""))
        self._updates[str((request.get("meta") or {}).get("updateId", ""))] = name
        arg = decode(_first((request.get("input") or {}).get("args")))
        reason = arg.get("reason") if isinstance(arg, Mapping) else None
        return "update accepted", f"{name}: {reason}" if reason else name

    def _update_rejected(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        name = str(((a.get("rejectedRequest") or {}).get("input") or {}).get("name", ""))
        return "update rejected", f"{name}: {_failure(a, 'failure')}"

    def _update_completed(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        name = self._updates.get(str((a.get("meta") or {}).get("updateId", "")), "update")
        outcome = a.get("outcome") or {}
        if outcome.get("failure"):
            return "update failed", f"{name}: {_failure(outcome)}"
        result = decode(_first(outcome.get("success")))
        return "update completed", f"{name}: {_transition(result)}" if _transition(result) else name

    def _upserted(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str] | None:
        fields = (a.get("searchAttributes") or {}).get("indexedFields") or {}
        for attribute, kind in PHASE_ATTRIBUTES.items():
            value = decode(fields.get(attribute))
            if value:
                return kind, str(value)
        return None

    def _signal_sent(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        target = (a.get("workflowExecution") or {}).get("workflowId", "")
        return "signal sent", f"{a.get('signalName', '')} to {target}"

    def _signal_not_sent(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        target = (a.get("workflowExecution") or {}).get("workflowId", "")
        cause = str(a.get("cause", "")).removeprefix("SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_")
        return "signal not sent", f"to {target}: {cause.lower().replace('_', ' ')}"

    def _task_failed(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        cause = str(a.get("cause", "")).removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
        message = _failure(a)
        detail = cause.lower().replace("_", " ")
        return "workflow task failed", f"{detail}: {message}" if message else detail

    def _continued(self, event: Event, a: Mapping[str, Any]) -> tuple[str, str]:
        return "continued as new", f"next run {a.get('newExecutionRunId', '')}"


def _attributes(event: Event) -> Mapping[str, Any]:
    """`EVENT_TYPE_TIMER_FIRED` keeps its details under `timerFiredEventAttributes`."""
    words = str(event.get("eventType", "")).removeprefix(PREFIX).lower().split("_")
    key = words[0] + "".join(w.title() for w in words[1:]) + "EventAttributes"
    found: Mapping[str, Any] = event.get(key) or {}
    return found


def _summary(event: Event) -> str:
    value = decode((event.get("userMetadata") or {}).get("summary"))
    return str(value) if value else ""


def _first(payloads: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    listed = (payloads or {}).get("payloads") or []
    return listed[0] if listed else None


def _failure(a: Mapping[str, Any], key: str = "failure") -> str:
    """The failure's own message, first line only (stack traces stay in the UI)."""
    failure = a.get(key) or {}
    message = str(failure.get("message", ""))
    cause = failure.get("cause") or {}
    if cause.get("message") and cause["message"] not in message:
        message = f"{message}: {cause['message']}" if message else str(cause["message"])
    return message.splitlines()[0] if message else ""


def _failed_steps(result: Any) -> list[str]:
    """The steps of a decision's writes done together (`apply_writes`, whose summary lists
    them in order) that failed: the activity completes, its outcomes say which writes did
    not, each error naming its object."""
    outcomes = result.get("outcomes") if isinstance(result, Mapping) else None
    if not isinstance(outcomes, list):
        return []
    return [
        f"step {i + 1}: {str(o['error']).splitlines()[0]}"
        for i, o in enumerate(outcomes)
        if isinstance(o, Mapping) and o.get("error")
    ]


def _hint(payload: Any) -> str:
    """A few words from a signal's payload: the command, the pods, the phase or state."""
    if not isinstance(payload, Mapping):
        return ""
    if isinstance(payload.get("pods"), list):
        pods = [p for p in payload["pods"] if isinstance(p, Mapping)]
        named = [f"{p.get('name', '?')} {_pod_state(p)}" for p in pods[:MAX_PODS_NAMED]]
        more = len(pods) - len(named)
        return ", ".join(named) + (f" (+{more} more)" if more > 0 else "")
    if payload.get("action"):
        words = str(payload["action"])
        if payload.get("command"):
            words += f" (Command {payload['command']})"
        return words + (f": {payload['reason']}" if payload.get("reason") else "")
    for key in ("phase", "state"):
        if payload.get(key):
            prefix = f"{payload['parent']} " if payload.get("parent") else ""
            return f"{prefix}{payload[key]}"
    return ""


def _pod_state(pod: Mapping[str, Any]) -> str:
    if pod.get("deleted"):
        return "deleted"
    state = str(pod.get("phase", "Pending"))
    if pod.get("exitCode") is not None:
        state += f" (exit {pod['exitCode']})"
    return state


def _transition(result: Any) -> str:
    """`Running → Aborting` from a job or queue command result; "" for anything else."""
    if not isinstance(result, Mapping):
        return ""
    for before, after in (("phaseBefore", "phaseAfter"), ("stateBefore", "stateAfter")):
        if before in result and after in result:
            return f"{result[before]} → {result[after]}"
    return ""


def _duration(text: object) -> str:
    """Protobuf JSON durations ("299.976s") the way Go prints them, to the second ("5m0s")."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(text or ""))
    if match is None:
        return str(text or "?")
    seconds = round(float(match.group(1)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _b64(text: str) -> str:
    try:
        return base64.b64decode(text).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
