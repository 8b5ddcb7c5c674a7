"""The forwarder's start payloads decode as the workflows' own inputs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


def test_forwarder_start_payloads_decode_as_workflow_inputs() -> None:
    """The forwarder starts workflows with small payloads the workflows read as their inputs."""
    from models.signals import job as job_signals
    from models.signals import queue as queue_signals
    from workflows.job import JobWorkflowInput
    from workflows.queue import QueueWorkflowInput

    start = job_signals.JobStart(settings=job_signals.ControllerSettings(scheduler_override="x"))
    assert JobWorkflowInput.model_validate(start.model_dump()).settings == start.settings
    assert QueueWorkflowInput.model_validate(queue_signals.QueueStart().model_dump()).state is None


def test_batch_job_start_payload_decodes_as_workflow_input() -> None:
    from models.signals import batchjob as batchjob_signals
    from workflows.batchjob import BatchJobWorkflowInput

    start = BatchJobWorkflowInput.model_validate(batchjob_signals.BatchJobStart().model_dump())
    assert start.state is None and start.observed is None


def test_jobflow_start_payload_decodes_as_workflow_input() -> None:
    from models.signals import jobflow as jobflow_signals
    from workflows.jobflow import JobFlowWorkflowInput

    start = JobFlowWorkflowInput.model_validate(jobflow_signals.FlowStart().model_dump())
    assert start.state is None and start.max_history == 0


def test_cronjob_start_payload_decodes_as_workflow_input() -> None:
    from models.signals import cronjob as cronjob_signals
    from workflows.cronjob import CronJobWorkflowInput

    start = CronJobWorkflowInput.model_validate(cronjob_signals.CronJobStart().model_dump())
    assert start.state is None and start.max_history == 0


def test_namespace_queue_start_payload_decodes_as_workflow_input() -> None:
    from models.signals import namespacequeue as nq_signals
    from workflows.namespacequeue import NamespaceQueueWorkflowInput

    payload = nq_signals.NamespaceQueueStart().model_dump()
    start = NamespaceQueueWorkflowInput.model_validate(payload)
    assert start.state is None and start.observed is None and start.max_history == 0
