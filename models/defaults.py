"""Volcano's mutating-webhook defaults, applied in one place.

Caldera has no mutating webhook: the CRD schema defaults `spec.queue` and `spec.maxRetry` at
admission, and every controller path that reads a Job or Queue calls `default_job` /
`default_queue` on what it read before deciding anything (the JobWorkflow on each observed
Job, the QueueWorkflow on each observed Queue). The stored object keeps what the user wrote.
"""

from __future__ import annotations

from typing import Final

from models.scheduling import DEFAULT_QUEUE, ROOT_QUEUE, Queue
from models.vcjob import Job, TaskSpec

DEFAULT_SCHEDULER: Final = "volcano"
DEFAULT_MAX_RETRY: Final = 3
# Plugins that need the svc (and, for mpi, ssh) plugin, as Volcano's webhook adds them. Its
# mpi mutation that would make the master task depend on the worker task is switched off in
# Volcano (a TODO: dependsOn does not yet coexist with gang scheduling: with the default
# minAvailable the workers alone never make the gang, so the master would never be created),
# so the master is not made to wait here either.
_NEEDS_SVC: Final = ("tensorflow", "mpi", "pytorch", "ray")


def _default_task(index: int, task: TaskSpec) -> TaskSpec:
    update: dict[str, object] = {}
    if not task.name:
        update["name"] = f"default{index}"
    if task.min_available is None:
        partition = task.partition_policy
        if partition is not None and (partition.min_partitions or 0) > 0:
            update["min_available"] = (partition.min_partitions or 0) * partition.partition_size
        else:
            update["min_available"] = task.replicas or 0
    if not task.max_retry:
        update["max_retry"] = DEFAULT_MAX_RETRY
    spec = (task.template.spec if task.template else None) or {}
    if spec.get("hostNetwork") and not spec.get("dnsPolicy") and task.template is not None:
        update["template"] = task.template.model_copy(
            update={"spec": {**spec, "dnsPolicy": "ClusterFirstWithHostNet"}}
        )
    return task.model_copy(update=update) if update else task


def default_job(job: Job, scheduler_name: str = DEFAULT_SCHEDULER) -> Job:
    """Volcano's /jobs/mutate rules 1-6, in its order; idempotent."""
    spec = job.spec
    tasks = [_default_task(i, t) for i, t in enumerate(spec.tasks)]
    plugins = dict(spec.plugins) if spec.plugins is not None else None
    if plugins is not None:
        if any(p in plugins for p in _NEEDS_SVC) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
    new_spec = spec.model_copy(
        update={
            "queue": spec.queue or DEFAULT_QUEUE,
            "scheduler_name": spec.scheduler_name or scheduler_name,
            "max_retry": spec.max_retry or DEFAULT_MAX_RETRY,
            "tasks": tasks,
            "min_available": spec.min_available or sum(t.min_available or 0 for t in tasks),
            "plugins": plugins,
        }
    )
    return job.model_copy(update={"spec": new_spec})


def default_queue(queue: Queue) -> Queue:
    """Volcano's queue mutation: weight 1, reclaimable, and parent `root` for all but root."""
    spec = queue.spec
    parent = spec.parent
    if not parent and queue.metadata.name != ROOT_QUEUE:
        parent = ROOT_QUEUE
    new_spec = spec.model_copy(
        update={
            "weight": spec.weight or 1,
            "reclaimable": True if spec.reclaimable is None else spec.reclaimable,
            "parent": parent,
        }
    )
    return queue.model_copy(update={"spec": new_spec})
