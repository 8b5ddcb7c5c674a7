"""Loggers bound to one Job, so every forwarder line about a Job names it the same way.

After kopf's `ObjectLogger`: the key travels in `extra` (for structured handlers) and is
appended to the message as `job=<ns>/<name>` (for people reading plain text), giving the
house style "event phrase key=value ... job=ns/name".
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from models import keys


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    def __init__(self, logger: logging.Logger, job: keys.JobKey) -> None:
        super().__init__(logger, {"job": job})
        self.job = job

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(kwargs.get("extra") or {}), "job": self.job}
        return f"{msg} job={self.job}", kwargs


def for_job(logger: logging.Logger, job: keys.JobKey) -> JobLogger:
    return JobLogger(logger, job)
