"""What a DispatchWorkflow hears: the manager's Job with its queue's dispatch settings, its
deletion and the Commands aimed at it (the names of `models.signals.job` and `.common`, so the
forwarder speaks to both job workflows alike), and its start input.

The workflow type name and id live in `models.dispatch` (the lead's contract). Pure: pydantic.
"""

from __future__ import annotations

from typing import Final

from models.dispatch import DispatchSettings
from models.signals import common
from models.signals.job import JobObserved

# On a Queue: how long a worker cluster may be silent before its jobs move (seconds, or a Go
# duration such as `3m`); default `models.dispatch.LOST_AFTER_SECONDS`, at least MIN_LOST_AFTER.
LOST_AFTER_ANNOTATION: Final = "caldera.dev/lost-after"
MIN_LOST_AFTER: Final = 10
# On a Queue: how long a stale copy's cluster may stay silent before the copy is given up
# (seconds, or a Go duration such as `6h`); default `models.dispatch.STALE_DEADLINE_SECONDS`,
# never below the queue's lost-after.
STALE_DEADLINE_ANNOTATION: Final = "caldera.dev/stale-copy-deadline"
# On a Queue: what its running copies do when their cluster is drained (`caldera.dev/drain` on
# the cluster's Secret): `Stay` (default) and finish there, or `Move` to another cluster now,
# as the next generation (the copy on the drained cluster is deleted).
ON_DRAIN_ANNOTATION: Final = "caldera.dev/on-drain"
ON_DRAIN_VALUES: Final = ("Stay", "Move")


class DispatchObserved(JobObserved):
    """The manager's Job as the apiserver holds it now, and what its queue says of dispatching
    it; a JobObserved, so the entity shell's start-over carries it like a job's."""

    # None: the queue no longer names clusters (the job keeps the ones it was given).
    settings: DispatchSettings | None = None


class DispatchStart(common.Payload):
    """What the forwarder starts a DispatchWorkflow with (signal-with-start): nothing yet,
    every field defaulted so later ones decode in running histories."""
