"""Signals and updates whose payload is wrong for their type (what `temporal workflow signal
--input '{...}'` can send: fields missing, of the wrong type, unknown, or an object that does
not parse) are dropped or refused: the JobWorkflow and the QueueWorkflow keep running,
answer their `status` query, and carry out the next good signal."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from models import keys
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.builders import make_job
from tests.workflows.harness import Harness, phase_is, pod, pods_changed, until
from workflows.queue import QueueWorkflow, QueueWorkflowInput

BAD_JOB_SIGNALS: list[tuple[str, Any]] = [
    (job_signals.SIGNAL_PODS_CHANGED, {"pods": [{"name": 1}]}),  # fields missing, wrong type
    (job_signals.SIGNAL_PODS_CHANGED, {"pods": "train-worker-0"}),
    (common_signals.SIGNAL_COMMAND_ISSUED, {"verb": "AbortJob"}),  # unknown field, action missing
    (job_signals.SIGNAL_POD_GROUP_OBSERVED, ["train"]),
    (job_signals.SIGNAL_JOB_DELETED, {}),
    (job_signals.SIGNAL_JOB_OBSERVED, {"job": "train"}),
    # Valid as a JobObserved (any mapping), but not a Job.
    (
        job_signals.SIGNAL_JOB_OBSERVED,
        {"job": {"metadata": {"name": "train"}, "spec": {"tasks": 7}}},
    ),
]


LIMIT = 20  # seconds: a wedged workflow never answers, so every wait is bounded


def _ids(cases: list[tuple[str, Any]]) -> list[str]:
    return [f"{name}-{i}" for i, (name, _) in enumerate(cases)]


def _manifest() -> dict[str, Any]:
    return make_job("train", namespace="test").task("worker", replicas=2).manifest()


@pytest.mark.parametrize(("name", "payload"), BAD_JOB_SIGNALS, ids=_ids(BAD_JOB_SIGNALS))
async def test_job_workflow_drops_a_bad_signal_and_carries_out_the_next(
    harness: Harness, name: str, payload: Any
) -> None:
    handle = await harness.submit(_manifest())
    await until(handle, phase_is("Pending"), "Pending")
    await handle.signal(name, payload)
    status = await asyncio.wait_for(until(handle, phase_is("Pending"), "still Pending"), LIMIT)
    assert status.uid == "uid-1" and [t.replicas for t in status.tasks] == [2]
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await asyncio.wait_for(until(handle, phase_is("Running"), "a good signal carried out"), LIMIT)


async def test_job_workflow_refuses_an_update_with_a_bad_payload(harness: Harness) -> None:
    handle = await harness.submit(_manifest())
    await until(handle, phase_is("Pending"), "Pending")
    with pytest.raises(WorkflowUpdateFailedError):
        await asyncio.wait_for(handle.execute_update("abort", {"reason": 5, "why": "?"}), LIMIT)
    await asyncio.wait_for(until(handle, phase_is("Pending"), "still Pending"), LIMIT)


def _queue(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"weight": 1, "parent": "root"},
    }


async def _queue_view(
    handle: WorkflowHandle[Any, Any], groups: int, what: str
) -> queue_signals.QueueView:
    for _ in range(200):
        view: queue_signals.QueueView = await handle.query(QueueWorkflow.status)
        if view.backlog == 0 and sum(view.pod_groups.values()) == groups:
            return view
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}; last {view}")


BAD_QUEUE_SIGNALS: list[tuple[str, Any]] = [
    (queue_signals.SIGNAL_POD_GROUPS_CHANGED, {"groups": [{"phase": "Running"}]}),  # key missing
    (queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, {"name": "c", "state": 3}),
    (queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, {"name": "c", "state": "Draining"}),
    (queue_signals.SIGNAL_PARENT_STATE_CHANGED, {"parent": "root", "state": "Draining"}),
    (queue_signals.SIGNAL_QUEUE_DELETED, {"uid": ["x"]}),
    (common_signals.SIGNAL_COMMAND_ISSUED, {}),
    # Valid as a QueueObserved (any mapping), but not a Queue.
    (queue_signals.SIGNAL_QUEUE_OBSERVED, {"queue": {"metadata": "q", "spec": {}}}),
]


async def _start_queue(harness: Harness) -> WorkflowHandle[Any, Any]:
    name = f"q-{uuid.uuid4().hex[:6]}"
    handle = await harness.env.client.start_workflow(
        QueueWorkflow.run,
        QueueWorkflowInput(),
        id=keys.queue_workflow_id(name),
        task_queue=harness.task_queue,
        start_signal=queue_signals.SIGNAL_QUEUE_OBSERVED,
        start_signal_args=[queue_signals.QueueObserved(queue=_queue(name))],
    )
    await _queue_view(handle, 0, "observed")
    return handle


@pytest.mark.parametrize(("name", "payload"), BAD_QUEUE_SIGNALS, ids=_ids(BAD_QUEUE_SIGNALS))
async def test_queue_workflow_drops_a_bad_signal_and_carries_out_the_next(
    harness: Harness, name: str, payload: Any
) -> None:
    handle = await _start_queue(harness)
    await handle.signal(name, payload)
    view = await asyncio.wait_for(_queue_view(handle, 0, "still answers"), LIMIT)
    assert view.state == "Open"
    good = queue_signals.PodGroupsChanged(
        groups=[queue_signals.PodGroupRef(key="ns/pg", phase="Running")]
    )
    await handle.signal(queue_signals.SIGNAL_POD_GROUPS_CHANGED, good)
    view = await asyncio.wait_for(_queue_view(handle, 1, "a good signal carried out"), LIMIT)
    assert view.pod_groups["running"] == 1


async def test_queue_workflow_refuses_an_update_with_a_bad_payload(harness: Harness) -> None:
    handle = await _start_queue(harness)
    with pytest.raises(WorkflowUpdateFailedError):
        await asyncio.wait_for(handle.execute_update("close", {"reason": {"a": 1}}), LIMIT)
    view = await asyncio.wait_for(_queue_view(handle, 0, "still answers"), LIMIT)
    assert view.state == "Open"
