"""A forwarder signal's object, parsed once: what a shell hands its core for `job_observed`
and `queue_observed`.

The signal carries the object as the apiserver's JSON (a dict), so its payload stays the same
whatever the models learn. The shell validates it as the signal arrives (one that is not the
kind's object is dropped there, logged, rather than failing every workflow task after it) and
hands the core the validated object with the signal it came in, so the core never validates the
same dict again. Never serialized: a run that starts over is given `signal` unchanged, so the
histories hold the same payloads as before.
"""

from __future__ import annotations

import dataclasses
from typing import Generic, TypeVar

from models.scheduling import Queue
from models.signals import job as job_signals
from models.signals import queue as queue_signals

M = TypeVar("M")


@dataclasses.dataclass(frozen=True)
class ParsedJob(Generic[M]):
    """`job_observed` with its Job validated as the shell's kind (`models.vcjob.Job` for a
    JobWorkflow, `models.batchv1.BatchJob` for a BatchJobWorkflow)."""

    signal: job_signals.JobObserved  # as the forwarder sent it
    job: M  # `signal.job`, validated


@dataclasses.dataclass(frozen=True)
class ParsedQueue:
    """`queue_observed` with its Queue validated."""

    signal: queue_signals.QueueObserved  # as the forwarder sent it
    queue: Queue  # `signal.queue`, validated
