"""QueueWorkflow on the time-skipping server: the hierarchy both ways, commands and refusals.

Each queue runs as its own workflow `queue/<name>`; a parent tells its children its state by
signal, exactly as in production. Activities are recording fakes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from models import keys
from models.signals import common as common_signals
from models.signals import queue as queue_signals
from tests.workflows.harness import Harness
from workflows.queue import QueueWorkflow, QueueWorkflowInput


def _queue(name: str, parent: str | None = "root") -> dict[str, Any]:
    spec = {"weight": 1} | ({"parent": parent} if parent else {})
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }


async def _start(h: Harness, name: str, parent: str | None = "root") -> WorkflowHandle[Any, Any]:
    return await h.env.client.start_workflow(
        QueueWorkflow.run,
        QueueWorkflowInput(),
        id=keys.queue_workflow_id(name),
        task_queue=h.task_queue,
        start_signal=queue_signals.SIGNAL_QUEUE_OBSERVED,
        start_signal_args=[queue_signals.QueueObserved(queue=_queue(name, parent))],
    )


async def _until(
    handle: WorkflowHandle[Any, Any], check: Callable[[queue_signals.QueueView], bool], what: str
) -> queue_signals.QueueView:
    last = None
    for _ in range(200):
        last = await handle.query(QueueWorkflow.status)
        if last.backlog == 0 and check(last):
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}; last {last}")


async def _child_reported(
    parent: WorkflowHandle[Any, Any], child: str, state: str, closed_by_parent: bool = False
) -> None:
    report = queue_signals.ChildQueueObserved(
        name=child, state=state, closed_by_parent=closed_by_parent
    )
    await parent.signal(queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, report)


async def _family(
    h: Harness,
) -> tuple[str, str, WorkflowHandle[Any, Any], WorkflowHandle[Any, Any]]:
    parent, child = f"p-{uuid.uuid4().hex[:6]}", f"c-{uuid.uuid4().hex[:6]}"
    p = await _start(h, parent)
    c = await _start(h, child, parent)
    await p.signal(
        queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, queue_signals.ChildQueueObserved(name=child)
    )
    await _until(p, lambda v: child in v.children, "parent knows its child")
    return parent, child, p, c


def _state(state: str) -> Callable[[queue_signals.QueueView], bool]:
    return lambda v: v.state == state


async def test_parent_stays_closing_until_its_children_are_closed(harness: Harness) -> None:
    _, child, p, c = await _family(harness)
    result = await p.execute_update(QueueWorkflow.close, queue_signals.QueueCommand())
    assert result.state_after == "Closing"  # the open child still holds it
    await _until(c, _state("Closed"), "child closed by its parent")
    await _child_reported(p, child, "Closed", closed_by_parent=True)
    await _until(p, _state("Closed"), "parent Closed once the child is")


async def test_closing_parent_closes_open_child_and_reopening_brings_it_back(
    harness: Harness,
) -> None:
    _, child, p, c = await _family(harness)
    group = queue_signals.PodGroupRef(key="ns/pg-1", phase="Running")
    await p.signal(
        queue_signals.SIGNAL_POD_GROUPS_CHANGED, queue_signals.PodGroupsChanged(groups=[group])
    )
    result = await p.execute_update(QueueWorkflow.close, queue_signals.QueueCommand(reason="drain"))
    assert (result.state_before, result.state_after) == ("Open", "Closing")
    closed = await _until(c, _state("Closed"), "child closed by its parent")
    assert closed.closed_by_parent
    patches = harness.calls.named("patch_queue")
    assert {"name": child, "closed_by_parent": True, "parent": None} in patches
    # What the forwarder reports once the child's status and annotation are written:
    await _child_reported(p, child, "Closed", closed_by_parent=True)
    gone = group.model_copy(update={"deleted": True})
    await p.signal(
        queue_signals.SIGNAL_POD_GROUPS_CHANGED, queue_signals.PodGroupsChanged(groups=[gone])
    )
    await _until(p, _state("Closed"), "parent Closed once its last PodGroup is gone")
    await p.execute_update(QueueWorkflow.open, queue_signals.QueueCommand())
    reopened = await _until(c, _state("Open"), "child reopened with its parent")
    assert not reopened.closed_by_parent


async def test_child_closed_by_hand_stays_closed_when_parent_reopens(harness: Harness) -> None:
    _, child, p, c = await _family(harness)
    await c.execute_update(QueueWorkflow.close, queue_signals.QueueCommand())
    await _child_reported(p, child, "Closed")
    await p.execute_update(QueueWorkflow.close, queue_signals.QueueCommand())
    await _until(p, _state("Closed"), "parent closed")
    await p.execute_update(QueueWorkflow.open, queue_signals.QueueCommand())
    await _until(p, _state("Open"), "parent open")
    status = await _until(c, _state("Closed"), "child stays closed")
    assert not status.closed_by_parent


async def test_child_cannot_open_under_closed_parent_and_waits_for_it(harness: Harness) -> None:
    parent, child, p, c = await _family(harness)
    await c.execute_update(QueueWorkflow.close, queue_signals.QueueCommand())
    await _child_reported(p, child, "Closed")
    await p.execute_update(QueueWorkflow.close, queue_signals.QueueCommand())
    await _until(c, lambda v: v.state == "Closed", "child closed")
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await c.execute_update(QueueWorkflow.open, queue_signals.QueueCommand())
    assert f"open the parent queue {parent} first, it is Closed" in str(err.value.cause)
    # A Command CR cannot be refused synchronously: it waits until the parent opens.
    command = common_signals.CommandIssued(action="OpenQueue", command=f"{child}-openqueue")
    await c.signal(common_signals.SIGNAL_COMMAND_ISSUED, command)
    waiting = await _until(c, lambda v: v.open_waiting_for_parent, "open waits for the parent")
    assert waiting.state == "Closed"
    await p.execute_update(QueueWorkflow.open, queue_signals.QueueCommand())
    await _until(c, _state("Open"), "child opened once its parent did")


async def test_root_cannot_be_closed(harness: Harness) -> None:
    root = await _start(harness, "root", parent=None)
    await _until(root, _state("Open"), "root open")
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await root.execute_update(QueueWorkflow.close, queue_signals.QueueCommand())
    assert "the root queue cannot be closed" in str(err.value.cause)


async def test_queue_without_parent_is_patched_under_root(harness: Harness) -> None:
    name = f"orphan-{uuid.uuid4().hex[:6]}"
    handle = await _start(harness, name, parent=None)
    status = await _until(handle, _state("Open"), "open")
    assert status.parent == "root"
    assert {"name": name, "closed_by_parent": None, "parent": "root"} in harness.calls.named(
        "patch_queue"
    )
