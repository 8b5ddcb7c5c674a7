"""Loggers bound to one Job or Queue, so every forwarder line about it names it the same way.

After kopf's `ObjectLogger`: the key travels in `extra` (for structured handlers) and is
appended to the message as `job=<ns>/<name>` or `queue=<name>` (for people reading plain
text), giving the house style "event phrase key=value ... job=ns/name".
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from forwarder import events
from models import keys


class ObjectLogger(logging.LoggerAdapter[logging.Logger]):
    """Appends `<field>=<key>` to every message and puts `{field: key}` into `extra`."""

    def __init__(self, logger: logging.Logger, field: str, key: str) -> None:
        super().__init__(logger, {field: key})
        self.field = field
        self.key = key

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(kwargs.get("extra") or {}), self.field: self.key}
        return f"{msg} {self.field}={self.key}", kwargs


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
