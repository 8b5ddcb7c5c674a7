"""The Temporal side: send `Signal`s, in order per workflow, concurrently across workflows.

Each workflow id gets a lane (a FIFO drained by one task), so a JobWorkflow or QueueWorkflow
receives its signals in exactly the order the pipeline produced them, while a slow or retried
send for one workflow does not hold up the others. A `job_observed` or `queue_observed` (and a
`child_queue_observed` to a live parent, and every `workload_pod_seen`) goes out as
signal-with-start (the first sight of an
object starts its workflow); everything else is a plain signal, dropped when the workflow does
not exist or has closed: a closed Job or deleted Queue has nobody left to tell.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
from typing import Final

from pydantic import ValidationError
from temporalio.client import Client
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.service import RPCError, RPCStatusCode

from controllers.batchjob import tracking
from forwarder.meters import Meters
from forwarder.routing import envelopes, logs
from models import batchv1, dispatch, kube_gangs, task_queues, vcjob
from models.signals import batchjob as batchjob_signals
from models.signals import common as common_signals
from models.signals import cronjob as cronjob_signals
from models.signals import dispatch as dispatch_signals
from models.signals import job as job_signals
from models.signals import jobflow as jobflow_signals
from models.signals import namespacequeue as namespacequeue_signals
from models.signals import podgroup as podgroup_signals
from models.signals import queue as queue_signals
from models.signals import scheduler as scheduler_signals
from service import search_attributes

logger = logging.getLogger(__name__)

CONCURRENCY: Final = 32  # signals in flight, all workflows together
# Per signal, for transient server errors (the client retries too); a server that cannot be
# reached at all (restarting, down) is waited for without limit: what happened meanwhile is
# only in these signals, and the next one of the lane must not overtake it.
MAX_ATTEMPTS: Final = 8
BACKOFF: Final = (0.2, 5.0)  # seconds: first retry delay, cap
SUMMARY_BYTES: Final = 200  # Temporal's static_summary limit
TRANSIENT: Final = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.ABORTED,
        RPCStatusCode.INTERNAL,
        RPCStatusCode.UNKNOWN,
        RPCStatusCode.RESOURCE_EXHAUSTED,
    }
)


# Batches are the bulk of the traffic; the rest tells the story of a Job or Queue.
_QUIET: Final = frozenset(
    {
        job_signals.SIGNAL_PODS_CHANGED,
        queue_signals.SIGNAL_POD_GROUPS_CHANGED,
        scheduler_signals.SIGNAL_WORK_ARRIVED,
    }
)


def start_attributes(target: envelopes.Target, payload: object) -> TypedSearchAttributes:
    """A job's search attributes, set in the start request: the workflow upserts only what
    differs, so a new job's visibility record is written with them, not once more per key
    (its first phase included: a new Volcano Job's Pending costs no upsert event)."""
    jobs = envelopes.JobRef | envelopes.BatchJobRef | envelopes.CronJobRef | envelopes.DispatchRef
    if not isinstance(target, jobs):
        return TypedSearchAttributes.empty
    pairs: list[SearchAttributePair[str]] = [
        SearchAttributePair(search_attributes.NAMESPACE, target.namespace),
        SearchAttributePair(search_attributes.JOB_NAME, target.name),
    ]
    volcano = envelopes.JobRef | envelopes.DispatchRef
    if isinstance(target, volcano) and isinstance(payload, job_signals.JobObserved):
        spec = payload.job.get("spec")
        queue = spec.get("queue") if isinstance(spec, dict) else None
        queue = queue if isinstance(queue, str) else ""
        pairs.append(SearchAttributePair(search_attributes.QUEUE, queue))
    phase = _first_phase(target, payload)
    if phase is not None:
        pairs.append(SearchAttributePair(search_attributes.JOB_PHASE, phase))
    return TypedSearchAttributes(pairs)


def _first_phase(target: envelopes.Target, payload: object) -> str | None:
    """The phase a job's workflow shows from its first task, read from the object it starts
    with; None: nothing to go by (not a job observed, or a status that does not parse).

    A Volcano Job without a phase is new: its core's first phase is Pending. A batch/v1 Job's
    is the one-word phase of its recorded status, which its core adopts (Pending for a new
    Job, whose first sync sets startTime: that Running is upserted as before)."""
    if not isinstance(payload, job_signals.JobObserved):
        return None
    status = payload.job.get("status")
    status = status if isinstance(status, dict) else {}
    if isinstance(target, envelopes.JobRef):
        state = status.get("state")
        phase = state.get("phase") if isinstance(state, dict) else None
        return phase if isinstance(phase, str) and phase else str(vcjob.JobPhase.PENDING)
    if isinstance(target, envelopes.BatchJobRef):
        try:
            return tracking.phase(batchv1.BatchJobStatus.model_validate(status))
        except ValidationError:
            return None
    return None


def _size(target: envelopes.Target, payload: object) -> str:
    """What the start's payload says of a job's size and queue, for its summary; "" : not a
    job observed."""
    if not isinstance(payload, job_signals.JobObserved):
        return ""
    spec = payload.job.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if isinstance(target, envelopes.JobRef):
        tasks = spec.get("tasks")
        pods = sum(
            t["replicas"]
            for t in (tasks if isinstance(tasks, list) else [])
            if isinstance(t, dict) and isinstance(t.get("replicas"), int)
        )
        queue = spec.get("queue") if isinstance(spec.get("queue"), str) else "default"
        minimum = spec.get("minAvailable")
        gang = f", minAvailable {minimum}" if isinstance(minimum, int) else ""
        return f" · queue {queue} · {pods} pods{gang}"
    if isinstance(target, envelopes.BatchJobRef):
        parallelism, completions = spec.get("parallelism"), spec.get("completions")
        sizes = [f"parallelism {parallelism if isinstance(parallelism, int) else 1}"]
        if isinstance(completions, int):
            sizes.append(f"completions {completions}")
        return " · " + ", ".join(sizes)
    return ""


def summary(target: envelopes.Target, payload: object = None) -> str:
    """The UI's one line for the workflow: the object, and for a job its queue and size as
    first observed (the start's payload; None: the object alone)."""
    if isinstance(target, envelopes.WorkloadRef):
        named = target.owner_uid.removeprefix(kube_gangs.GANG_KEY_PREFIX)
        mirrored = f"{kube_gangs.GROUP} PodGroup {target.namespace}/{named}"
        text = (
            f"PodGroup of {target.namespace} pods controlled by {target.owner_uid}"
            if named == target.owner_uid
            else f"Volcano PodGroup mirroring {mirrored}"
        )
        return text.encode()[:SUMMARY_BYTES].decode(errors="ignore")
    if isinstance(target, envelopes.FlowRef):
        return f"Volcano JobFlow {target.key}".encode()[:SUMMARY_BYTES].decode(errors="ignore")
    if isinstance(target, envelopes.CronJobRef):
        return f"Volcano CronJob {target.key}".encode()[:SUMMARY_BYTES].decode(errors="ignore")
    if isinstance(target, envelopes.NamespaceQueueRef):
        return f"Volcano NamespaceQueue {target.key}".encode()[:SUMMARY_BYTES].decode(
            errors="ignore"
        )
    if isinstance(target, envelopes.DispatchRef):
        text = f"Volcano Job {target.key} dispatched to a worker cluster"
        return text.encode()[:SUMMARY_BYTES].decode(errors="ignore")
    kind = "Queue" if isinstance(target, envelopes.QueueRef) else "Job"
    owner = "Kubernetes" if isinstance(target, envelopes.BatchJobRef) else "Volcano"
    text = f"{owner} {kind} {target.key}{_size(target, payload)}"
    return text.encode()[:SUMMARY_BYTES].decode(errors="ignore")


class Signaller:
    """Per-workflow ordered delivery of signals to JobWorkflows and QueueWorkflows."""

    def __init__(
        self,
        client: Client,
        start: job_signals.JobStart,
        task_queue: str = task_queues.CONTROLLERS,
        concurrency: int = CONCURRENCY,
        queue_task_queue: str = task_queues.QUEUES,
        meters: Meters | None = None,  # None: record nothing
    ) -> None:
        self._client = client
        self._meters = meters or Meters()
        self._start = start
        self._task_queue = task_queue
        self._queue_task_queue = queue_task_queue
        self._slots = asyncio.Semaphore(concurrency)
        self._lanes: dict[str, collections.deque[envelopes.Signal]] = {}
        self._drainers: dict[str, asyncio.Task[None]] = {}
        self.sent = 0  # signals the server accepted, for logs and tests

    def submit(self, signal: envelopes.Signal) -> None:
        wid = signal.target.workflow_id
        self._lanes.setdefault(wid, collections.deque()).append(signal)
        if wid not in self._drainers:
            self._drainers[wid] = asyncio.create_task(self._drain(wid), name=f"signal {wid}")

    async def join(self) -> None:
        """Wait until every submitted signal was sent or dropped."""
        while self._drainers:
            await asyncio.gather(*self._drainers.values(), return_exceptions=True)

    async def abandon(self) -> None:
        """Drop everything unsent (the lease is lost: another replica owns delivery now)."""
        for task in self._drainers.values():
            task.cancel()
        await asyncio.gather(*self._drainers.values(), return_exceptions=True)

    async def _drain(self, wid: str) -> None:
        lane = self._lanes[wid]
        try:
            while lane:
                signal = lane.popleft()
                async with self._slots:
                    await self._send(signal)
        finally:
            # No await between the last `while lane` check and here: no submit can slip in.
            del self._lanes[wid]
            del self._drainers[wid]

    async def _send(self, signal: envelopes.Signal) -> None:
        log = logs.for_target(logger, signal.target)
        delay = BACKOFF[0]
        for attempt in itertools.count(1):
            try:
                await self._deliver(signal)
                self.sent += 1
                self._sent(signal)
                level = logging.DEBUG if signal.name in _QUIET else logging.INFO
                log.log(level, "signal sent signal=%s start=%s", signal.name, signal.start)
                return
            except RPCError as e:
                if e.status == RPCStatusCode.NOT_FOUND:
                    log.info("signal dropped, no open workflow signal=%s", signal.name)
                    self._meters.dropped.add(1, {"signal": signal.name, "reason": "closed"})
                    return
                down = e.status == RPCStatusCode.UNAVAILABLE
                if e.status not in TRANSIENT or (attempt >= MAX_ATTEMPTS and not down):
                    log.error("signal lost signal=%s attempts=%d error=%s", signal.name, attempt, e)
                    self._meters.dropped.add(1, {"signal": signal.name, "reason": "lost"})
                    return
                log.warning(
                    "signal failed signal=%s retry_in=%.1fs error=%s", signal.name, delay, e
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF[1])
            except Exception:
                # Not a server answer (e.g. a payload that does not serialise): retrying cannot
                # help, and the lane must go on with the next signal.
                log.exception("signal lost signal=%s", signal.name)
                self._meters.dropped.add(1, {"signal": signal.name, "reason": "lost"})
                return

    def _sent(self, signal: envelopes.Signal) -> None:
        labels = {"signal": signal.name}
        self._meters.sent.add(1, labels)
        if signal.received is not None:
            self._meters.lag.record(max(0.0, time.monotonic() - signal.received), labels)

    async def _deliver(self, signal: envelopes.Signal) -> None:
        target = signal.target
        if not signal.start:
            await self._client.get_workflow_handle(target.workflow_id).signal(
                signal.name, signal.payload
            )
            return
        start: common_signals.Payload = self._start
        workflow = job_signals.JOB_WORKFLOW
        task_queue = self._task_queue
        if isinstance(target, envelopes.QueueRef):
            start, workflow = queue_signals.QueueStart(), queue_signals.QUEUE_WORKFLOW
            task_queue = self._queue_task_queue
        elif isinstance(target, envelopes.BatchJobRef):
            start, workflow = batchjob_signals.BatchJobStart(), batchjob_signals.BATCH_JOB_WORKFLOW
        elif isinstance(target, envelopes.WorkloadRef):
            start, workflow = podgroup_signals.PodGroupStart(), podgroup_signals.POD_GROUP_WORKFLOW
        elif isinstance(target, envelopes.FlowRef):
            start, workflow = jobflow_signals.FlowStart(), jobflow_signals.JOBFLOW_WORKFLOW
        elif isinstance(target, envelopes.CronJobRef):
            start, workflow = cronjob_signals.CronJobStart(), cronjob_signals.CRON_JOB_WORKFLOW
        elif isinstance(target, envelopes.DispatchRef):
            start, workflow = dispatch_signals.DispatchStart(), dispatch.DISPATCH_WORKFLOW
        elif isinstance(target, envelopes.NamespaceQueueRef):
            start = namespacequeue_signals.NamespaceQueueStart()
            workflow = namespacequeue_signals.NAMESPACE_QUEUE_WORKFLOW
            task_queue = self._queue_task_queue
        # Signal-with-start. USE_EXISTING: a running workflow just gets the signal.
        # ALLOW_DUPLICATE: a closed one is started afresh; a deleted Job or Queue never gets
        # here because the routers refuse uids they saw deleted.
        await self._client.start_workflow(
            workflow,
            start,
            id=target.workflow_id,
            task_queue=task_queue,
            start_signal=signal.name,
            start_signal_args=[signal.payload],
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            static_summary=summary(target, signal.payload),
            search_attributes=start_attributes(target, signal.payload),
        )
