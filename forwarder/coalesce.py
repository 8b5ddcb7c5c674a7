"""Per-workflow batching of pod snapshots with a bounded delay. Pure: time is passed in.

A Job's pods change in bursts (creation, scheduling, a node failing); one signal per change
would flood the workflow (temporal-python spec §1.6: keep bursts per workflow task under ~100
signals, never approach 10,000 per run). So pod snapshots wait at most `delay` seconds after
the first one of a batch, only the latest snapshot per pod is kept, and the batch leaves as
one `pods_changed` signal per 100 pods.

Ordering rule: any other signal for a workflow first flushes that workflow's pending pods, so
the workflow receives everything in the order it happened (a pod change before the Job
deletion that followed it, never after).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from forwarder import events
from models import signals

DEFAULT_DELAY = 0.2  # seconds
MAX_PODS_PER_SIGNAL = 100


@dataclass
class _Batch:
    job: events.JobRef
    deadline: float
    # Keyed by pod uid, in order of last change: a recreated pod of the same name is another
    # pod, and the workflow must hear the old one's deletion too.
    pods: OrderedDict[str, signals.PodSnapshot] = field(default_factory=OrderedDict)


class Coalescer:
    """Holds pending pod snapshots per workflow id; hands back signals ready to send."""

    def __init__(self, delay: float = DEFAULT_DELAY, max_pods: int = MAX_PODS_PER_SIGNAL) -> None:
        self._delay = delay
        self._max_pods = max_pods
        self._batches: dict[str, _Batch] = {}

    def __len__(self) -> int:
        """Pending pod snapshots, all workflows together."""
        return sum(len(b.pods) for b in self._batches.values())

    def add_pod(self, update: events.PodUpdate, now: float) -> None:
        batch = self._batches.get(update.job.workflow_id)
        if batch is None:
            # Bounded, not debounced: a steady stream still leaves every `delay` seconds.
            batch = _Batch(update.job, now + self._delay)
            self._batches[update.job.workflow_id] = batch
        batch.pods.pop(update.pod.uid, None)
        batch.pods[update.pod.uid] = update.pod

    def add_signal(self, signal: events.Signal) -> list[events.Signal]:
        """The workflow's pending pods (if any), then `signal`: the order they happened in."""
        return [*self._flush(signal.job.workflow_id), signal]

    def next_deadline(self) -> float | None:
        """When the earliest batch is due; None: nothing pending."""
        return min((b.deadline for b in self._batches.values()), default=None)

    def due(self, now: float) -> list[events.Signal]:
        ready = sorted((b.deadline, wid) for wid, b in self._batches.items() if b.deadline <= now)
        return [s for _, wid in ready for s in self._flush(wid)]

    def drain(self) -> list[events.Signal]:
        """Everything pending, earliest batch first (shutdown)."""
        return self.due(float("inf"))

    def _flush(self, workflow_id: str) -> list[events.Signal]:
        batch = self._batches.pop(workflow_id, None)
        if batch is None:
            return []
        pods = list(batch.pods.values())
        return [
            events.Signal(
                batch.job,
                signals.SIGNAL_PODS_CHANGED,
                signals.PodsChanged(pods=pods[i : i + self._max_pods]),
            )
            for i in range(0, len(pods), self._max_pods)
        ]
