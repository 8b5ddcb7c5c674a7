"""Timeouts and retries, declared once per activity, so every call of an activity agrees.

Shells call activities only through `workflows.activity_call.run` with one of these records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

from models import task_queues

PERMANENT = ["Invalid", "Forbidden", "BadRequest"]


@dataclass(frozen=True)
class ActivityOptions:
    start_to_close: timedelta
    retry: RetryPolicy
    heartbeat: timedelta | None = None  # None: the activity does not wait, so no heartbeat
    schedule_to_close: timedelta | None = None  # None: bounded by retry.maximum_attempts
    task_queue: str | None = None  # None: the calling workflow's task queue
    local: bool = False  # run in the worker that runs the workflow task (short writes only)
    # TRY_CANCEL: a cancelled activity is done for the workflow at once; WAIT_CANCELLATION_COMPLETED
    # once the worker says so (an activity whose cancel must be in the history before the end).
    cancellation: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL


def _retry(attempts: int, initial: float = 1.0, maximum: float = 30.0) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=initial),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=maximum),
        maximum_attempts=attempts,
        non_retryable_error_types=PERMANENT,
    )


# One Kubernetes write (status, event, PodGroup, a plugin object): quick, retried a while.
# Local: the write runs beside the workflow task that decided it and its result is one marker
# in the history, instead of a task dispatched through the server and a workflow task to
# hear back (six events and two round trips).
KUBE_WRITE = ActivityOptions(start_to_close=timedelta(seconds=30), retry=_retry(15), local=True)
# Many pods in slow-start batches: heartbeats between batches.
POD_BATCH = ActivityOptions(
    start_to_close=timedelta(minutes=10),
    heartbeat=timedelta(seconds=30),
    retry=_retry(15),
)
# The same, local (`ControllerSettings.local_pod_writes`): the workflow task extends itself while
# it runs, and a one-pod job's creation costs one history event instead of six.
POD_BATCH_LOCAL = replace(POD_BATCH, local=True)


def pod_batch(local: bool) -> ActivityOptions:
    return POD_BATCH_LOCAL if local else POD_BATCH


# Kubernetes Events are best effort: a few tries, never blocking the job.
KUBE_EVENT = ActivityOptions(start_to_close=timedelta(seconds=10), retry=_retry(3), local=True)
# Volume binding waits for the PV controller or a provisioner: long, heartbeating, few attempts.
VOLUME_BINDING = ActivityOptions(
    start_to_close=timedelta(minutes=11),
    heartbeat=timedelta(seconds=30),
    retry=_retry(3),
)
# One scheduling session: snapshot + allocate on the scheduler's own task queue. A session
# that fails is simply the next session's work, so it is tried twice at most. It heartbeats
# after each phase and write, so a session on a worker that died is retried within 15 s, not
# after the whole 60 s (with the worker killed every 20 s, scheduling stopped for minutes).
SESSION = ActivityOptions(
    start_to_close=timedelta(seconds=60),
    heartbeat=timedelta(seconds=15),
    retry=_retry(2),
    task_queue=task_queues.SCHEDULER,
)
# The binding of a session's placements: volume binding's patience, on the scheduler's queue.
SESSION_BINDING = replace(VOLUME_BINDING, task_queue=task_queues.SCHEDULER)
# One call to the Temporal service (a CronJob's schedule): regular activities, as they are
# async and use the worker's own client; retried a while, as a Kubernetes write is.
TEMPORAL_CALL = ActivityOptions(start_to_close=timedelta(seconds=30), retry=_retry(15))
# One HyperNode discovery round: list nodes and HyperNodes, then a write per change. A round that
# fails is the next round's work, so it is tried a few times only.
HYPERNODE_DISCOVERY = ActivityOptions(start_to_close=timedelta(minutes=2), retry=_retry(3))
# A call to a worker cluster's apiserver (`activities.dispatch.copies`), on the dispatcher's own
# task queue. A cluster that does not answer is an answer (`reachable=False`), not an error: these
# retries are for the unexpected only, and a permanent refusal (403, 422) is not retried.
REMOTE_CALL = ActivityOptions(
    start_to_close=timedelta(seconds=90),
    retry=_retry(5, maximum=10.0),
    task_queue=task_queues.DISPATCH,
)
# The create of a copy stamps its lease first: a worker that dies mid-create must be noticed
# (the heartbeat between its requests, each at most 13 s) and the create retried well inside
# the lease, not after the whole start-to-close.
CREATE_COPY = replace(REMOTE_CALL, heartbeat=timedelta(seconds=15))
# One long poll of a copy (a few minutes, renewing its lease): it heartbeats every poll, so a
# poll on a worker that died is taken up elsewhere within the heartbeat timeout, well inside
# a lease. A poll stopped is done once its worker says so: the workflow ends only after that,
# so the cancel's answer never lands while the run completes (UNHANDLED_COMMAND).
FOLLOW_COPY = ActivityOptions(
    start_to_close=timedelta(minutes=6),
    heartbeat=timedelta(seconds=20),
    retry=_retry(5, maximum=10.0),
    task_queue=task_queues.DISPATCH,
    cancellation=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
)
