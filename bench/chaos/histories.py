"""Every workflow run's story, read back from the Temporal server after the soak: failed and
timed-out workflow tasks, failed activities, activities still retrying, and every durable
timer (started, fired, cancelled, or pending)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from temporalio.api.enums.v1 import EventType, TimeoutType, WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowExecutionStatus


@dataclass
class Timer:
    id: str
    summary: str
    fires_at: datetime
    fired: bool = False
    cancelled: bool = False


@dataclass
class Run:
    workflow_id: str
    run_id: str
    workflow_type: str
    open: bool
    events: int = 0
    task_failures: list[str] = field(default_factory=list)  # "<cause>: <message>"
    task_timeouts: list[str] = field(default_factory=list)  # timeout types
    activity_failures: list[str] = field(default_factory=list)  # "<type>: <message>"
    retrying: list[str] = field(default_factory=list)  # "<activity> attempt <n>: <last failure>"
    timers: list[Timer] = field(default_factory=list)


async def read(client: Client, prefixes: tuple[str, ...]) -> list[Run]:
    """Every run (continued-as-new runs too) of the workflows whose id starts with a prefix."""
    runs: list[Run] = []
    async for execution in client.list_workflows():
        if not execution.id.startswith(prefixes):
            continue
        run = Run(
            workflow_id=execution.id,
            run_id=execution.run_id,
            workflow_type=execution.workflow_type,
            open=execution.status == WorkflowExecutionStatus.RUNNING,
        )
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        timers: dict[str, Timer] = {}
        for event in history.events:
            run.events += 1
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                a = event.workflow_task_failed_event_attributes
                cause = WorkflowTaskFailedCause.Name(a.cause).removeprefix(
                    "WORKFLOW_TASK_FAILED_CAUSE_"
                )
                run.task_failures.append(f"{cause}: {a.failure.message[:300]}")
            elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
                t = event.workflow_task_timed_out_event_attributes
                run.task_timeouts.append(
                    TimeoutType.Name(t.timeout_type).removeprefix("TIMEOUT_TYPE_")
                )
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
                f = event.activity_task_failed_event_attributes.failure
                while f.HasField("cause") and not f.HasField("application_failure_info"):
                    f = f.cause
                run.activity_failures.append(
                    f"{f.application_failure_info.type}: {f.message[:300]}"
                )
            elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
                s = event.timer_started_event_attributes
                fires = event.event_time.ToDatetime() + timedelta(
                    seconds=s.start_to_fire_timeout.ToTimedelta().total_seconds()
                )
                summary = event.user_metadata.summary.data.decode(errors="replace")
                timers[s.timer_id] = Timer(id=s.timer_id, summary=summary, fires_at=fires)
            elif kind == EventType.EVENT_TYPE_TIMER_FIRED:
                fired = event.timer_fired_event_attributes.timer_id
                if fired in timers:
                    timers[fired].fired = True
            elif kind == EventType.EVENT_TYPE_TIMER_CANCELED:
                cancelled = event.timer_canceled_event_attributes.timer_id
                if cancelled in timers:
                    timers[cancelled].cancelled = True
        run.timers = list(timers.values())
        if run.open:
            described = await handle.describe()
            run.retrying = [
                f"{a.activity_type.name} attempt {a.attempt}: {a.last_failure.message[:300]}"
                for a in described.raw_description.pending_activities
                if a.attempt > 1
            ]
        runs.append(run)
    return runs
