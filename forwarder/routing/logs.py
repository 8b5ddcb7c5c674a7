"""Loggers bound to the Job or Queue a message is for, so every forwarder line about it names it
the same way.

The key travels in `extra` (the `job`/`queue`/`batchjob` field of JSON logs) and is appended to
the message as `job=<ns>/<name>` or `queue=<name>` for people reading plain text
(`service.logs.ObjectLogger`, shared by every process): "event phrase key=value ... job=ns/a".
"""

from __future__ import annotations

import logging

from forwarder.routing import envelopes
from service.logs import ObjectLogger


def for_target(logger: logging.Logger, target: envelopes.Target) -> ObjectLogger:
    """`job=` for a Volcano Job, `batchjob=` for a batch/v1 Job, `queue=` for a Queue,
    `podgroup=<ns>/<owner uid>` for the gang of pods Caldera did not create."""
    if isinstance(target, envelopes.QueueRef):
        return ObjectLogger(logger, "queue", target.key)
    if isinstance(target, envelopes.BatchJobRef):
        return ObjectLogger(logger, "batchjob", target.key)
    if isinstance(target, envelopes.WorkloadRef):
        return ObjectLogger(logger, "podgroup", target.key)
    if isinstance(target, envelopes.FlowRef):
        return ObjectLogger(logger, "jobflow", target.key)
    if isinstance(target, envelopes.NamespaceQueueRef):
        return ObjectLogger(logger, "namespacequeue", target.key)
    if isinstance(target, envelopes.CronJobRef):
        return ObjectLogger(logger, "cronjob", target.key)
    return ObjectLogger(logger, "job", target.key)
