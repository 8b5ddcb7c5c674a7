"""Kubernetes side effects as Temporal activities; `ALL` is what every worker registers.

Three rooms (`controllers`, `scheduler`, `dispatch`) that do not import each other, over the
plumbing they share here: the client (`kube`), errors, options, messages, Events, ConfigMap
texts and the Job status write (import-linter's `activities-rooms` keeps it so).

Activities are sync functions (the official client blocks) run on the worker's thread pool,
but for `schedules`, which are async: they call Temporal with the worker's own client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from activities import kube_events, status
from activities.controllers import (
    batchjobs,
    batchpods,
    cronjobs,
    hypernodes,
    jobflows,
    jobs,
    namespacequeues,
    plugins,
    podgroups,
    pods,
    queues,
    schedules,
    volume_claims,
    workloads,
    writes,
)
from activities.dispatch import clusters, copies, mirroring
from activities.scheduler import binding, sessions

ALL: Final[tuple[Callable[..., Any], ...]] = (
    pods.create_pods,
    pods.delete_pods,
    pods.check_pods,
    podgroups.ensure_pod_group,
    podgroups.delete_pod_group,
    status.write_job_status,
    writes.apply_writes,  # a decision's status, PodGroup and pod writes as one local activity
    kube_events.record_event,
    jobs.delete_job,
    volume_claims.ensure_volumes,
    queues.write_queue_status,
    queues.patch_queue,
    # NamespaceQueues (NamespaceQueueWorkflow)
    namespacequeues.read_namespace_queue_surroundings,
    namespacequeues.write_namespace_queue_status,
    binding.bind_placements,
    binding.mark_unschedulable,
    *plugins.ACTIVITIES,
    # batch/v1 Jobs managed by Caldera (BatchJobWorkflow)
    batchpods.create_job_pods,
    batchpods.delete_job_pods,
    batchpods.remove_pod_finalizers,
    batchjobs.write_batch_job_status,
    batchjobs.delete_batch_job,
    batchjobs.ensure_batch_pod_group,
    batchjobs.ensure_job_workload,
    batchjobs.patch_job_gang_min_count,
    # PodGroups for pods Caldera did not create (PodGroupWorkflow)
    workloads.read_owner_annotations,
    workloads.apply_workload_pod_group,
    # Volcano CronJobs: their Temporal Schedules, each run's Job, the status (CronJobWorkflow)
    schedules.apply_cron_schedule,
    schedules.backfill_cron_schedule,
    schedules.delete_cron_schedule,
    cronjobs.create_cron_job_run,
    cronjobs.write_cron_job_status,
    # Volcano JobFlows and the JobTemplates they make Jobs from (JobFlowWorkflow)
    jobflows.create_flow_job,
    jobflows.write_flow_status,
    jobflows.delete_flow_jobs,
    jobflows.record_template_jobs,
    # HyperNodes discovered from node labels (HyperNodeDiscoveryWorkflow)
    hypernodes.discover_hypernodes,
    # Worker clusters registered on this one: reachable, and their room (models/dispatch.py)
    clusters.probe_cluster,
    # The manager's side of a Job dispatched to a worker cluster (DispatchWorkflow)
    *mirroring.ACTIVITIES,
)

# Scheduling sessions run on their own task queue (`models.task_queues.SCHEDULER`).
SESSION: Final[tuple[Callable[..., Any], ...]] = (sessions.schedule_session, binding.bind_session)
# Calls to worker clusters run on theirs (`models.task_queues.DISPATCH`).
DISPATCH: Final[tuple[Callable[..., Any], ...]] = copies.ACTIVITIES
