"""Recorded JobWorkflow, BatchJobWorkflow, QueueWorkflow, SchedulerWorkflow and
DispatchWorkflow histories still replay: a change that would break running workflows (a new
command sequence without `workflow.patched`) fails here. The histories without a prefix were
recorded before the entity shell; `entity_*` on it;
`one_write_*` with a decision's short writes by one local activity;
`scheduler_binds_in_session` is a SchedulerWorkflow run from before folded sessions, recorded
with the patch ids `binds-in-session` and `handoffs-in-background` (now asked as
`caldera-…` first, the old id second); `dispatch_failover` a DispatchWorkflow that moved its
job off a lost cluster and deleted the stale copy, recorded before its patches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from workflows import sandbox
from workflows.batchjob import BatchJobWorkflow
from workflows.dispatch import DispatchWorkflow
from workflows.job import JobWorkflow
from workflows.queue import QueueWorkflow
from workflows.scheduler import SchedulerWorkflow

HISTORIES = sorted(Path(__file__).with_name("histories").glob("*.json"))


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_replay(path: Path) -> None:
    events = json.loads(path.read_text())["events"]
    assert len(events) > 50, "the recorded story is not trivially short"
    replayer = Replayer(
        workflows=[
            JobWorkflow,
            BatchJobWorkflow,
            QueueWorkflow,
            SchedulerWorkflow,
            DispatchWorkflow,
        ],
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox.runner(),
    )
    await replayer.replay_workflow(WorkflowHistory.from_json(path.stem, path.read_text()))


def test_histories_are_present() -> None:
    assert HISTORIES, "record them with `python -m tests.workflows.record_histories`"
