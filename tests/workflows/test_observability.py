"""JobWorkflow's metrics and logs: each phase transition counted once (never again when the
history is replayed) and every workflow log line naming its job."""

from __future__ import annotations

import io
import json
import logging
import types
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.client import Client
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from service import logs, metrics
from tests.builders import make_job
from tests.workflows.harness import Harness, phase_is, pod, pods_changed, until
from workflows.job import JobWorkflow


@pytest.fixture(scope="module")
def buffer() -> MetricBuffer:
    return MetricBuffer(100_000)


@pytest.fixture(scope="module")
def runtime(buffer: MetricBuffer) -> Runtime:
    return Runtime(telemetry=TelemetryConfig(metrics=buffer))


@pytest_asyncio.fixture
async def h(env: WorkflowEnvironment, runtime: Runtime) -> AsyncIterator[Harness]:
    """The harness, on a client (so a worker) whose runtime buffers metrics."""
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=env.client.data_converter,
        runtime=runtime,
    )
    async with Harness.running(types.SimpleNamespace(client=client)) as harness:  # type: ignore[arg-type]
        yield harness


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """Workflow log lines as `--log-format json` writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    base = workflow.logger.base_logger
    base.addHandler(handler)
    level = base.level
    base.setLevel(logging.INFO)
    workflow.logger.workflow_info_on_message = False
    try:
        yield stream
    finally:
        workflow.logger.workflow_info_on_message = True
        base.setLevel(level)
        base.removeHandler(handler)


def _transitions(buffer: MetricBuffer, task_queue: str) -> list[str]:
    return [
        str(u.attributes["phase"])
        for u in buffer.retrieve_updates()
        if u.metric.name == metrics.JOB_PHASE_TRANSITIONS.name
        and u.attributes.get("task_queue") == task_queue
        for _ in range(int(u.value))
    ]


async def test_phase_transitions_counted_once_and_not_on_replay(
    h: Harness, buffer: MetricBuffer, runtime: Runtime, json_lines: io.StringIO
) -> None:
    buffer.retrieve_updates()
    manifest = make_job("train", namespace="test").task("worker", replicas=2).manifest()
    handle = await h.submit(manifest)
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    await pods_changed(
        handle,
        pod("train", "worker", 0, phase="Succeeded"),
        pod("train", "worker", 1, phase="Succeeded"),
    )
    await until(handle, phase_is("Completed"), "Completed")
    phases = _transitions(buffer, h.task_queue)
    assert phases[:2] == ["Pending", "Running"]
    assert phases[-1] == "Completed"
    assert len(phases) == len(set(phases)), f"a transition counted twice: {phases}"

    # Replaying the whole history (a restarted worker, a cache eviction) counts nothing again.
    history = await handle.fetch_history()
    replayer = Replayer(
        workflows=[JobWorkflow], data_converter=h.env.client.data_converter, runtime=runtime
    )
    await replayer.replay_workflow(history)
    assert _transitions(buffer, h.task_queue) == []

    # And the workflow's log lines name the job as a field.
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    changed = [e for e in lines if e["msg"].startswith("phase changed")]
    assert changed, lines
    assert {e["job"] for e in changed} == {"test/" + handle.id.split("/")[-1]}
    assert {e["temporal_workflow"]["workflow_id"] for e in changed} == {handle.id}
