"""Per-workflow batching of pod snapshots and PodGroup refs with a bounded delay. Pure: time
is passed in.

A Job's pods change in bursts (creation, scheduling, a node failing), and so do the PodGroups of
a queue; one signal per change would flood the workflow (a workflow task should see at most
about 100 signals, and a run must stay far below Temporal's 10,000). So updates wait at most
`delay` seconds after the first one of a batch, only the latest per pod (per PodGroup key for a
queue) is kept, and the batch leaves as one `pods_changed` signal per 100 pods. A queue's
batch waits `queue_delay` (2 s) and leaves as one `pod_groups_changed` per 500 PodGroups: the
queue only counts them for its status, so during a burst of a thousand jobs it is told, and
writes its status, every two seconds rather than five times a second.

Ordering rule: any other signal for a workflow first flushes that workflow's pending batch, so
the workflow receives everything in the order it happened (a pod change before the Job
deletion that followed it, never after).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from forwarder.routing import envelopes
from models.signals import batchjob as batchjob_signals
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals

DEFAULT_DELAY = 0.2  # seconds
MAX_PER_SIGNAL = 100  # pod snapshots in one signal
QUEUE_DELAY = 2.0  # seconds a queue's PodGroup refs may wait
MAX_GROUPS_PER_SIGNAL = 500  # PodGroup refs (~150 bytes each) in one signal
_Item = TypeVar(
    "_Item", job_signals.PodSnapshot, batchjob_signals.BatchPodSnapshot, queue_signals.PodGroupRef
)


@dataclass
class _Batch:
    target: envelopes.Target
    deadline: float
    received: float | None = None  # receipt of the oldest watch event in it; None: unknown
    # Keyed by pod uid, in order of last change: a recreated pod of the same name is another
    # pod, and the workflow must hear the old one's deletion too.
    pods: OrderedDict[str, job_signals.PodSnapshot] = field(default_factory=OrderedDict)
    # Keyed by "<ns>/<name>": a queue counts PodGroups by key, so only the latest state matters.
    groups: OrderedDict[str, queue_signals.PodGroupRef] = field(default_factory=OrderedDict)
    # Pods of a batch/v1 Job, keyed by uid like `pods`.
    batch_pods: OrderedDict[str, batchjob_signals.BatchPodSnapshot] = field(
        default_factory=OrderedDict
    )


class Coalescer:
    """Holds pending updates per workflow id; hands back signals ready to send."""

    def __init__(
        self,
        delay: float = DEFAULT_DELAY,
        max_items: int = MAX_PER_SIGNAL,
        queue_delay: float = QUEUE_DELAY,
        max_groups: int = MAX_GROUPS_PER_SIGNAL,
    ) -> None:
        self._delay = delay
        self._max_items = max_items
        self._queue_delay = queue_delay
        self._max_groups = max_groups
        self._batches: dict[str, _Batch] = {}

    def __len__(self) -> int:
        """Pending pod snapshots and PodGroup refs, all workflows together."""
        return sum(len(b.pods) + len(b.groups) + len(b.batch_pods) for b in self._batches.values())

    def add(self, update: envelopes.Batched, now: float, received: float | None = None) -> None:
        """`received`: when the watch event behind `update` arrived (None: unknown)."""
        target: envelopes.Target
        match update:
            case envelopes.GroupRefUpdate():
                target = update.queue
            case _:
                target = update.job
        batch = self._batches.get(target.workflow_id)
        if batch is None:
            # Bounded, not debounced: a steady stream still leaves every `delay` seconds.
            queues = envelopes.QueueRef | envelopes.NamespaceQueueRef
            delay = self._queue_delay if isinstance(target, queues) else self._delay
            batch = _Batch(target, now + delay)
            self._batches[target.workflow_id] = batch
        if received is not None:
            batch.received = min(received, batch.received or received)
        if isinstance(update, envelopes.PodUpdate):
            batch.pods.pop(update.pod.uid, None)
            batch.pods[update.pod.uid] = update.pod
        elif isinstance(update, envelopes.BatchPodUpdate):
            batch.batch_pods.pop(update.pod.uid, None)
            batch.batch_pods[update.pod.uid] = update.pod
        else:
            batch.groups.pop(update.group.key, None)
            batch.groups[update.group.key] = update.group

    def add_signal(self, signal: envelopes.Signal) -> list[envelopes.Signal]:
        """The workflow's pending batch (if any), then `signal`: the order they happened in."""
        return [*self._flush(signal.target.workflow_id), signal]

    def next_deadline(self) -> float | None:
        """When the earliest batch is due; None: nothing pending."""
        return min((b.deadline for b in self._batches.values()), default=None)

    def due(self, now: float) -> list[envelopes.Signal]:
        ready = sorted((b.deadline, wid) for wid, b in self._batches.items() if b.deadline <= now)
        return [s for _, wid in ready for s in self._flush(wid)]

    def drain(self) -> list[envelopes.Signal]:
        """Everything pending, earliest batch first (shutdown)."""
        return self.due(float("inf"))

    def _flush(self, workflow_id: str) -> list[envelopes.Signal]:
        batch = self._batches.pop(workflow_id, None)
        if batch is None:
            return []
        # Batch pods carry no receipt time: their lag is not measured.
        return [
            *self._chunks(batch.target, list(batch.batch_pods.values()), _batch_pods, None),
            *self._chunks(batch.target, list(batch.pods.values()), _pods, batch.received),
            *self._chunks(
                batch.target, list(batch.groups.values()), _groups, batch.received, self._max_groups
            ),
        ]

    def _chunks(
        self,
        target: envelopes.Target,
        items: list[_Item],
        signal: Callable[[list[_Item]], tuple[str, common_signals.Payload]],
        received: float | None,
        most: int | None = None,
    ) -> list[envelopes.Signal]:
        """`items` in signals of at most `most` (`max_items`) each."""
        n = most or self._max_items
        return [
            envelopes.Signal(target, *signal(items[i : i + n]), received=received)
            for i in range(0, len(items), n)
        ]


def _pods(pods: list[job_signals.PodSnapshot]) -> tuple[str, common_signals.Payload]:
    return job_signals.SIGNAL_PODS_CHANGED, job_signals.PodsChanged(pods=pods)


def _batch_pods(
    pods: list[batchjob_signals.BatchPodSnapshot],
) -> tuple[str, common_signals.Payload]:
    return job_signals.SIGNAL_PODS_CHANGED, batchjob_signals.BatchPodsChanged(pods=pods)


def _groups(groups: list[queue_signals.PodGroupRef]) -> tuple[str, common_signals.Payload]:
    return queue_signals.SIGNAL_POD_GROUPS_CHANGED, queue_signals.PodGroupsChanged(groups=groups)
