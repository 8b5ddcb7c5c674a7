"""What the CLI asks of a Job's or Queue's workflow: commands as updates, the status query, and
the history (every run of a continue-as-new chain); of a dispatched Job's DispatchWorkflow, the
same commands and its `dispatch` query; of the SchedulerWorkflow, which jobs wait in a queue and
where one job stands.

Updates and queries name the workflow classes' own methods, so a renamed handler breaks here at
import time rather than at a user's terminal. Every call is bounded by `--timeout` (a query or
an update waits for a worker) and mapped by `Connections.temporal_call`.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from cli import history
from cli.clients import CliError, Connections
from models import keys
from models.bus import Action
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from scheduling.api.backlog import JobStanding, PendingJobs
from workflows.commands import VolcanoCommands
from workflows.dispatch import DispatchView, DispatchWorkflow
from workflows.job import JobWorkflow
from workflows.queue import QueueWorkflow
from workflows.scheduler import SchedulerWorkflow

# The update behind each job action: validated by the workflow, answered once carried out; the
# JobWorkflow and the DispatchWorkflow have the same ones (`workflows.commands`).
JOB_UPDATES: Final = {
    Action.ABORT_JOB: VolcanoCommands.abort,
    Action.RESUME_JOB: VolcanoCommands.resume,
    Action.RESTART_JOB: VolcanoCommands.restart,
    Action.TERMINATE_JOB: VolcanoCommands.terminate,
    Action.COMPLETE_JOB: VolcanoCommands.complete,
}
QUEUE_UPDATES: Final = {
    Action.OPEN_QUEUE: QueueWorkflow.open,
    Action.CLOSE_QUEUE: QueueWorkflow.close,
}


async def job_command(
    conn: Connections, workflow_id: str, action: Action, command: job_signals.JobCommand, what: str
) -> job_signals.JobCommandResult:
    """To the Job's JobWorkflow or DispatchWorkflow, whichever `workflow_id` names."""
    client = await conn.temporal()
    handle = client.get_workflow_handle(workflow_id)
    with conn.temporal_call(what, workflow_id):
        return await conn.answer(handle.execute_update(JOB_UPDATES[action], command))


async def queue_command(
    conn: Connections,
    workflow_id: str,
    action: Action,
    command: queue_signals.QueueCommand,
    what: str,
) -> queue_signals.QueueCommandResult:
    client = await conn.temporal()
    handle = client.get_workflow_handle_for(QueueWorkflow.run, workflow_id)
    with conn.temporal_call(what, workflow_id):
        return await conn.answer(handle.execute_update(QUEUE_UPDATES[action], command))


async def job_view(conn: Connections, workflow_id: str, what: str) -> job_signals.JobView:
    client = await conn.temporal()
    handle = client.get_workflow_handle_for(JobWorkflow.run, workflow_id)
    with conn.temporal_call(what, workflow_id):
        return await conn.answer(handle.query(JobWorkflow.status, rpc_timeout=conn.timeout))


async def dispatch_view(conn: Connections, workflow_id: str, what: str) -> DispatchView:
    client = await conn.temporal()
    handle = client.get_workflow_handle_for(DispatchWorkflow.run, workflow_id)
    with conn.temporal_call(what, workflow_id):
        return await conn.answer(handle.query(DispatchWorkflow.view, rpc_timeout=conn.timeout))


async def queue_view(conn: Connections, workflow_id: str, what: str) -> queue_signals.QueueView:
    client = await conn.temporal()
    handle = client.get_workflow_handle_for(QueueWorkflow.run, workflow_id)
    with conn.temporal_call(what, workflow_id):
        return await conn.answer(handle.query(QueueWorkflow.status, rpc_timeout=conn.timeout))


async def pending_jobs(conn: Connections, scheduler: str, queue: str, what: str) -> PendingJobs:
    client = await conn.temporal()
    workflow_id = keys.scheduler_workflow_id(scheduler)
    handle = client.get_workflow_handle_for(SchedulerWorkflow.run, workflow_id)
    with conn.temporal_call(what, workflow_id):
        query = handle.query(SchedulerWorkflow.pending_jobs, queue, rpc_timeout=conn.timeout)
        return await conn.answer(query)


async def job_standing(
    conn: Connections, scheduler: str, namespace: str, name: str, what: str
) -> JobStanding | None:
    client = await conn.temporal()
    workflow_id = keys.scheduler_workflow_id(scheduler)
    handle = client.get_workflow_handle_for(SchedulerWorkflow.run, workflow_id)
    job = f"{namespace}/{name}"
    with conn.temporal_call(what, workflow_id):
        query = handle.query(SchedulerWorkflow.job_standing, job, rpc_timeout=conn.timeout)
        return await conn.answer(query)


async def timeline(
    conn: Connections, workflow_id: str, what: str, max_runs: int = 0
) -> list[history.Entry]:
    """The story of the latest run and the runs it continued from (max_runs 0: all of them),
    oldest first. A run started afresh (a job deleted and created again under the same name)
    is not part of the chain: its story is its own."""
    client = await conn.temporal()
    runs: list[tuple[str, list[Any]]] = []
    with conn.temporal_call(what, workflow_id):
        latest = await client.get_workflow_handle(workflow_id).describe()
        run_id: str | None = latest.run_id  # None: the chain's first run was read
        while run_id and (max_runs <= 0 or len(runs) < max_runs):
            handle = client.get_workflow_handle(workflow_id, run_id=run_id)
            fetched = await handle.fetch_history(rpc_timeout=conn.timeout)
            events = list(fetched.to_json_dict().get("events") or [])
            await _decode(events, client.data_converter.payload_codec)
            runs.append((run_id, events))
            run_id = history.continued_from(events)
    return [entry for run, events in reversed(runs) for entry in history.timeline(events, run)]


async def _decode(events: list[Any], codec: PayloadCodec | None) -> None:
    """Undo the payload codec (CALDERA_CODEC_KEY's encryption) in place, summaries included,
    so the pure timeline reads the same plain JSON with or without encryption."""
    if codec is None:
        return
    found: list[dict[str, Any]] = []
    _payloads(events, found)
    if not found:
        return
    try:
        decoded = await codec.decode([json_format.ParseDict(p, Payload()) for p in found])
    except ValueError as e:  # service.codec.CodecError: a key this process does not have
        raise CliError(f"cannot decode the history's payloads: {e}") from None
    for shaped, plain in zip(found, decoded, strict=True):
        shaped.clear()
        shaped.update(json_format.MessageToDict(plain))


def _payloads(node: Any, found: list[dict[str, Any]]) -> None:
    """Every JSON object shaped like a Payload: `metadata` with an `encoding`, maybe `data`."""
    if isinstance(node, dict):
        meta = node.get("metadata")
        if isinstance(meta, dict) and "encoding" in meta and set(node) <= {"metadata", "data"}:
            found.append(node)
            return
        for value in node.values():
            _payloads(value, found)
    elif isinstance(node, list):
        for value in node:
            _payloads(value, found)
