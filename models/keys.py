"""Workflow ids and object keys: the only place they are spelled."""

from __future__ import annotations

from typing import Final, NewType

JobKey = NewType("JobKey", str)  # "<namespace>/<name>"
QueueName = NewType("QueueName", str)


def job_key(namespace: str, name: str) -> JobKey:
    return JobKey(f"{namespace}/{name}")


def job_workflow_id(namespace: str, name: str) -> str:
    return f"vcjob/{namespace}/{name}"


def batch_job_workflow_id(namespace: str, name: str) -> str:
    """A batch/v1 Job managed by Caldera (spec.managedBy), not a Volcano Job."""
    return f"job/{namespace}/{name}"


def queue_workflow_id(name: str) -> str:
    return f"queue/{name}"


def namespace_queue_workflow_id(namespace: str, name: str) -> str:
    """A NamespaceQueue's workflow (models/namespacequeue.py)."""
    return f"namespacequeue/{namespace}/{name}"


def job_key_from_workflow_id(workflow_id: str) -> JobKey | None:
    """The job a JobWorkflow id names; None: not a JobWorkflow id."""
    kind, _, rest = workflow_id.partition("/")
    namespace, _, name = rest.partition("/")
    return job_key(namespace, name) if kind == "vcjob" and namespace and name else None


def queue_name_from_workflow_id(workflow_id: str) -> QueueName | None:
    """The queue a QueueWorkflow id names; None: not a QueueWorkflow id."""
    kind, _, name = workflow_id.partition("/")
    return QueueName(name) if kind == "queue" and name else None


def scheduler_workflow_id(scheduler_name: str) -> str:
    return f"scheduler/{scheduler_name}"


# The one HyperNodeDiscoveryWorkflow of a cluster.
HYPERNODE_DISCOVERY_WORKFLOW_ID: Final = "hypernode-discovery"


def pod_group_key(namespace: str, name: str) -> str:
    """How a queue counts its PodGroups: "<namespace>/<name>"."""
    return f"{namespace}/{name}"


def pod_group_workflow_id(namespace: str, owner_uid: str) -> str:
    """The PodGroup of pods Caldera did not create: one per controlling owner (the pod itself
    for a bare pod), as the PodGroup is named after that uid."""
    return f"podgroup/{namespace}/{owner_uid}"


def jobflow_workflow_id(namespace: str, name: str) -> str:
    """A Volcano JobFlow; a flow made again under the same name continues in the same id."""
    return f"jobflow/{namespace}/{name}"


def cronjob_workflow_id(namespace: str, name: str) -> str:
    """A Volcano CronJob's workflow, and the id of its Temporal Schedule."""
    return f"cronjob/{namespace}/{name}"


def cron_run_workflow_id(namespace: str, name: str) -> str:
    """The prefix of a CronJob's scheduled runs (the schedule appends each nominal time)."""
    return f"cronrun/{namespace}/{name}"
