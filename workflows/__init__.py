"""Workflow shells and their pure cores; `ALL` is what every worker registers.

`ALL` is resolved lazily so importing a pure core (`controllers.job.transitions`) does not pull in
the shells, Temporal and the activities.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "ALL":
        from workflows.batchjob import BatchJobWorkflow
        from workflows.cronjob import CronJobWorkflow
        from workflows.cronrun import CronRunWorkflow
        from workflows.dispatch import DispatchWorkflow
        from workflows.hypernode_discovery import HyperNodeDiscoveryWorkflow
        from workflows.job import JobWorkflow
        from workflows.jobflow import JobFlowWorkflow
        from workflows.namespacequeue import NamespaceQueueWorkflow
        from workflows.podgroup import PodGroupWorkflow
        from workflows.queue import QueueWorkflow
        from workflows.scheduler import SchedulerWorkflow

        return (
            JobWorkflow,
            QueueWorkflow,
            SchedulerWorkflow,
            BatchJobWorkflow,
            PodGroupWorkflow,
            JobFlowWorkflow,
            CronJobWorkflow,
            CronRunWorkflow,
            HyperNodeDiscoveryWorkflow,
            DispatchWorkflow,
            NamespaceQueueWorkflow,
        )
    raise AttributeError(f"module 'workflows' has no attribute {name!r}")
