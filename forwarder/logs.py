"""Loggers bound to one Job or Queue, so every forwarder line about it names it the same way.

After kopf's `ObjectLogger` (`service.logs`, shared by every process): the key travels in
`extra` (the `job`/`queue` field of JSON logs) and is appended to the message as
`job=<ns>/<name>` or `queue=<name>` (for people reading plain text), giving the house style
"event phrase key=value ... job=ns/name".
"""

from __future__ import annotations

import logging

from forwarder import events
from models import keys
from service.logs import ObjectLogger

__all__ = ["ObjectLogger", "for_job", "for_queue", "for_target"]


def for_job(logger: logging.Logger, job: keys.JobKey) -> ObjectLogger:
    return ObjectLogger(logger, "job", job)


def for_queue(logger: logging.Logger, queue: keys.QueueName) -> ObjectLogger:
    return ObjectLogger(logger, "queue", queue)


def for_target(logger: logging.Logger, target: events.Target) -> ObjectLogger:
    """Whichever workflow a message is addressed to: `job=` for Jobs, `queue=` for Queues."""
    if isinstance(target, events.QueueRef):
        return for_queue(logger, target.key)
    if isinstance(target, events.BatchJobRef):
        return ObjectLogger(logger, "batchjob", target.key)  # a batch/v1 Job, not a vcjob
    return for_job(logger, target.key)
