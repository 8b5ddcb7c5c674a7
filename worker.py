"""The Caldera worker: hosts every workflow and activity (`workflows.ALL`, `activities.ALL`).

Configuration by environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE
(default `default`), TEMPORAL_TLS_CERT/KEY/CA and TEMPORAL_API_KEY (see `service/temporal.py`),
CALDERA_TASK_QUEUE (default `caldera-controllers`; the SchedulerWorkflow and the QueueWorkflows
have their own, `caldera-scheduler` and `caldera-queues`, as do the calls to worker clusters of
dispatched Jobs, `caldera-dispatch`), and
CALDERA_SCHEDULERS (the schedulerNames Caldera's gang scheduler answers to, default
`volcano`; pods of other schedulers are left alone) and CALDERA_SCHEDULER_OVERRIDE (set: pods
go to that scheduler and no gang scheduler runs), CALDERA_SCHEDULER_CONF (a
volcano-scheduler.conf file) or CALDERA_SCHEDULER_CONFIGMAP (`<namespace>/<name>` of a
ConfigMap holding one), CALDERA_SCHEDULER_ACTIONS (Volcano's `actions` string, replacing the
configuration's; see `activities/scheduler/scheduler_conf.py`), CALDERA_HYPERNODE_DISCOVERY (a
volcano-controller.conf file) or CALDERA_CONTROLLER_CONFIGMAP (`<namespace>/<name>` of a
ConfigMap holding one): either starts HyperNode discovery from node labels (see
`activities/controllers/controller_conf.py`), CALDERA_WORKFLOW_SANDBOX
(`on`: run workflows in Temporal's sandbox; off by default, see `workflows/sandbox.py`),
CALDERA_MAX_CACHED_WORKFLOWS (workflows kept in memory between their tasks, default 10000:
one evicted replays its whole history on its next task; each costs some hundred KiB),
CALDERA_CLUSTER_NAMESPACE (where the worker clusters' Secrets are, default `caldera-system`;
see `activities/dispatch/cluster_secrets.py`).
Flags, each defaulting to its variable: --metrics-address / CALDERA_METRICS_ADDRESS
(Prometheus endpoint, default 127.0.0.1:9464, empty: off; see `service/metrics_endpoint.py`),
--log-format / CALDERA_LOG_FORMAT (text or json) and --log-level.
Run any number of replicas; Temporal spreads the work.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.worker import Worker

import activities
import workflows
from activities.controllers import controller_conf
from activities.dispatch import clusters, copywatch
from controllers.scheduler.session import SchedulerState
from models import keys, task_queues
from service import logs, metrics_endpoint, stalls, temporal, worker_registry
from workflows import sandbox
from workflows.hypernode_discovery import HyperNodeDiscoveryInput, HyperNodeDiscoveryWorkflow
from workflows.namespacequeue import NamespaceQueueWorkflow
from workflows.queue import QueueWorkflow
from workflows.scheduler import SchedulerWorkflow, SchedulerWorkflowInput

log = logging.getLogger("caldera.worker")
MAX_ACTIVITIES = 32
# Per own task queue: the scheduler runs one session at a time, as Volcano's, beside the binding
# of the one before; a queue writes its status and annotations.
OWN_QUEUE_ACTIVITIES = 2
# The dispatcher's calls to worker clusters (`activities.dispatch.copies`): mostly long polls that
# wait without a thread (async), a few short calls on threads of their own.
DISPATCH_ACTIVITIES = 1000
DISPATCH_THREADS = 8
# The loop's own pool (`asyncio.to_thread`): the long polls' reads and lease renewals.
LOOP_THREADS = min(32, (os.cpu_count() or 1) + 4)  # asyncio's own default size, now metered
STICKY_WAIT = timedelta(seconds=30)
MAX_CACHED_WORKFLOWS = 10000


async def run(metrics_address: str = "") -> int:
    """Serve until SIGINT/SIGTERM; `metrics_address` "" runs without a metrics endpoint."""
    options = temporal.options_from_env()
    queue = os.environ.get("CALDERA_TASK_QUEUE", task_queues.CONTROLLERS)
    # Gang schedulers to run (one SchedulerWorkflow per schedulerName it answers to); none
    # while pods are handed to another scheduler.
    names = os.environ.get("CALDERA_SCHEDULERS", "volcano")
    schedulers = [] if os.environ.get("CALDERA_SCHEDULER_OVERRIDE") else names.split(",")
    cached = int(os.environ.get("CALDERA_MAX_CACHED_WORKFLOWS", MAX_CACHED_WORKFLOWS))
    # The worker serves its registry too (the Volcano queue series) beside the SDK's.
    served = metrics_endpoint.runtime(metrics_address, worker_registry.WORKER_REGISTRY)
    client = await temporal.connect_patiently(options, runtime=served)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # The Kubernetes client blocks, so activities are sync functions on a thread pool.
    threads = MAX_ACTIVITIES + 2 * OWN_QUEUE_ACTIVITIES
    # Every pool counted and the loop's lag measured, each stall logged (`service/stalls.py`).
    loop.set_default_executor(stalls.MeteredPool("loop", LOOP_THREADS))
    with (
        stalls.MeteredPool("activities", threads) as pool,
        stalls.MeteredPool("dispatch", DISPATCH_THREADS) as dispatch_pool,
    ):
        async with (
            Worker(
                client,
                task_queue=queue,
                workflows=list(workflows.ALL),
                workflow_runner=sandbox.worker_runner(),
                activities=list(activities.ALL),
                activity_executor=pool,
                max_concurrent_activities=MAX_ACTIVITIES,
                max_cached_workflows=cached,
                # A busy worker answers its sticky tasks late; a task that times out there is
                # replayed from its whole history elsewhere, which costs more than the wait.
                sticky_queue_schedule_to_start_timeout=STICKY_WAIT,
            ),
            # The SchedulerWorkflow's and the QueueWorkflows' own task queues: their tasks
            # never wait behind the jobs'.
            _own_queue(
                client, pool, task_queues.SCHEDULER, [SchedulerWorkflow], activities.SESSION
            ),
            _own_queue(
                client,
                pool,
                task_queues.QUEUES,
                [QueueWorkflow, NamespaceQueueWorkflow],
                activities.ALL,
            ),
            # Worker clusters that hang cost the dispatcher's slots, never the controllers'.
            Worker(
                client,
                task_queue=task_queues.DISPATCH,
                activities=list(activities.DISPATCH),
                activity_executor=dispatch_pool,
                max_concurrent_activities=DISPATCH_ACTIVITIES,
            ),
        ):
            for name in schedulers:
                await temporal.call_patiently(
                    f"scheduler {name}", functools.partial(_ensure_scheduler, client, name)
                )
            if controller_conf.configured():
                await temporal.call_patiently(
                    "HyperNode discovery", lambda: _ensure_hypernode_discovery(client, queue)
                )
            log.info(
                "worker started address=%s namespace=%s task_queue=%s schedulers=%s",
                options.address,
                options.namespace,
                queue,
                ",".join(schedulers),
            )
            # The registered worker clusters' gauges; one list of Secrets a round while none is.
            probes = clusters.ProbeLoop().start()
            # The loop's lag, measured while the worker serves: building the workers blocks it
            # once at start-up (the SDK hashes every loaded module for its build id, the
            # sandbox imports the workflows: 1-3 s on a busy machine), before any task is taken.
            async with stalls.watching_loop():
                await stop.wait()
            probes.stop()
        # The dispatch followers' shared watches of worker clusters (`copywatch`).
        await asyncio.to_thread(copywatch.WATCHES.stop_all)
    log.info("worker stopped")
    return 0


def _own_queue(
    client: Client,
    pool: ThreadPoolExecutor,
    queue: str,
    hosted: Sequence[type],
    own: Sequence[Callable[..., Any]],
) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=list(hosted),
        workflow_runner=sandbox.worker_runner(),
        activities=list(own),
        activity_executor=pool,
        max_concurrent_activities=OWN_QUEUE_ACTIVITIES,
    )


async def _ensure_scheduler(client: Client, name: str) -> None:
    """The SchedulerWorkflow for `name` runs while any worker does (started once, kept)."""
    await client.start_workflow(
        SchedulerWorkflow.run,
        SchedulerWorkflowInput(state=SchedulerState(name=name)),
        id=keys.scheduler_workflow_id(name),
        task_queue=task_queues.SCHEDULER,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=f"gang scheduler {name}",
    )


async def _ensure_hypernode_discovery(client: Client, queue: str) -> None:
    """The cluster's one HyperNodeDiscoveryWorkflow runs while any worker does, once discovery
    is configured (started once, kept; see `activities/controllers/controller_conf.py`)."""
    await client.start_workflow(
        HyperNodeDiscoveryWorkflow.run,
        HyperNodeDiscoveryInput(),
        id=keys.HYPERNODE_DISCOVERY_WORKFLOW_ID,
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary="HyperNode discovery from node labels",
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="worker", description=__doc__)
    p.add_argument(
        "--metrics-address",
        default=os.environ.get(metrics_endpoint.ENV_ADDRESS, metrics_endpoint.WORKER_ADDRESS),
        help=f"Prometheus /metrics on host:port (${metrics_endpoint.ENV_ADDRESS}; empty: off)",
    )
    p.add_argument("--log-level", default="INFO")
    logs.add_arguments(p)
    args = p.parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    sys.exit(asyncio.run(run(args.metrics_address)))


if __name__ == "__main__":
    main()
