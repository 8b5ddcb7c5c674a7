"""The forwarder's start payloads decode as the workflows' own inputs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


def test_forwarder_start_payloads_decode_as_workflow_inputs() -> None:
    """The forwarder starts workflows with small payloads the workflows read as their inputs."""
    from models import signals
    from workflows.job import JobWorkflowInput
    from workflows.queue import QueueWorkflowInput

    start = signals.JobStart(settings=signals.ControllerSettings(scheduler_override="x"))
    assert JobWorkflowInput.model_validate(start.model_dump()).settings == start.settings
    assert QueueWorkflowInput.model_validate(signals.QueueStart().model_dump()).state is None


def test_batch_job_start_payload_decodes_as_workflow_input() -> None:
    from models import signals
    from workflows.batchjob import BatchJobWorkflowInput

    start = BatchJobWorkflowInput.model_validate(signals.BatchJobStart().model_dump())
    assert start.state is None and start.observed is None


def test_jobflow_start_payload_decodes_as_workflow_input() -> None:
    from models import signals
    from workflows.jobflow import JobFlowWorkflowInput

    start = JobFlowWorkflowInput.model_validate(signals.FlowStart().model_dump())
    assert start.state is None and start.max_history == 0


def test_cronjob_start_payload_decodes_as_workflow_input() -> None:
    from models import signals
    from workflows.cronjob import CronJobWorkflowInput

    start = CronJobWorkflowInput.model_validate(signals.CronJobStart().model_dump())
    assert start.state is None and start.max_history == 0
