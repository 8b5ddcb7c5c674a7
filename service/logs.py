"""Logging for every Caldera process: text for people, JSON lines for log pipelines, both
naming the Job (`job=<namespace>/<name>`) or Queue (`queue=<name>`) a line is about.

Where the key comes from, first match wins:
- `extra={"job": key}` / `{"queue": name}` at the call site, or an `ObjectLogger` bound to the
  key (the forwarder's loggers in `forwarder/routing/logs.py`);
- the workflow id Temporal's `workflow.logger` and `activity.logger` put in `extra`
  (`temporal_workflow` / `temporal_activity`): `vcjob/<ns>/<name>` is the job, `queue/<name>`
  the queue, so every JobWorkflow line and every activity of a JobWorkflow names its job
  without each call site repeating it.

Text: `<time> <LEVEL> <logger> <message>`, plus ` job=<key>` when the message does not already
say so. JSON: one object per line with `ts` (UTC, ms), `level`, `logger`, `msg`, `job` /
`queue` when known, every other `extra` field (Temporal's dicts stay nested), and `exc` for a
traceback. In JSON mode Temporal stops appending its info dict to messages: it is a field.

No Temporal or Kubernetes import at module level: the forwarder's pure modules use
`ObjectLogger`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from models import keys

ENV_FORMAT: Final = "CALDERA_LOG_FORMAT"
FORMATS: Final = ("text", "json")
KEYS: Final = ("job", "queue")  # the object keys a line may carry, in this order
TEXT: Final = "%(asctime)s %(levelname)s %(name)s %(message)s"
_LEVELS: Final = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)

# Attributes every LogRecord has; anything else on a record came from `extra`.
_STANDARD: Final = frozenset(
    {
        *logging.LogRecord("", 0, "", 0, "", None, None).__dict__,
        "message",
        "asctime",
        "taskName",
    }
)
_TEMPORAL: Final = ("temporal_workflow", "temporal_activity")


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


def object_keys(record: logging.LogRecord) -> dict[str, str]:
    """`{"job": "ns/name"}` or `{"queue": "name"}` for what the record is about; {} if nothing."""
    found = {k: str(v) for k in KEYS if (v := record.__dict__.get(k))}
    if found:
        return found
    for attr in _TEMPORAL:
        details = record.__dict__.get(attr)
        wid = details.get("workflow_id") if isinstance(details, Mapping) else None
        if not isinstance(wid, str):
            continue
        job = keys.job_key_from_workflow_id(wid)
        if job is not None:
            return {"job": job}
        queue = keys.queue_name_from_workflow_id(wid)
        if queue is not None:
            return {"queue": queue}
    return {}


class TextFormatter(logging.Formatter):
    """The classic one-line format, with the object key appended when the message lacks it."""

    def __init__(self) -> None:
        super().__init__(TEXT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        message = record.getMessage()
        missing = [f"{k}={v}" for k, v in object_keys(record).items() if f"{k}={v}" not in message]
        if not missing:
            return line
        # The key belongs to the message, before any traceback that follows it.
        head, sep, tail = line.partition("\n")
        return f"{head} {' '.join(missing)}{sep}{tail}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line; values JSON cannot hold are written as their str()."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **object_keys(record),
        }
        for name, value in record.__dict__.items():
            if name not in _STANDARD and name not in entry:
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


def formatter(fmt: str) -> logging.Formatter:
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return JsonFormatter() if fmt == "json" else TextFormatter()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--log-format",
        choices=FORMATS,
        default=os.environ.get(ENV_FORMAT) or "text",
        help=f"text or json lines (${ENV_FORMAT}, default text)",
    )


class _NoLock:
    """Stands in for a handler's lock, on every Python's locking path (acquire/release and
    `with`)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        return None

    def __enter__(self) -> _NoLock:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class LineHandler(logging.StreamHandler[TextIO]):
    """A StreamHandler with no lock of its own: a line is written by one call of the stream's
    own (C) write, which needs none. The stdlib's handler lock can be left held for good: the
    Temporal SDK interrupts a workflow thread that has not yielded for 2 s (its deadlock
    detector raises an exception in it), and an interruption landing between the handler's
    acquire and its try leaves the lock taken, so the next line any thread logs waits for
    ever and the worker stops whole. Seen in a 10k-job run on a saturated machine."""

    def createLock(self) -> None:
        self.lock = _NoLock()  # type: ignore[assignment]


def setup(level: str | int = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Route the root logger to one handler on `stream` (stderr) in `fmt`; replaces others."""
    handler = LineHandler(stream or sys.stderr)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # Temporal's adapters append their info dict to every message; in JSON it is a field.
    from temporalio import activity, workflow

    workflow.logger.workflow_info_on_message = fmt != "json"
    activity.logger.activity_info_on_message = fmt != "json"
    warm_levels()


def warm_levels() -> None:
    """Answer every logger's "is this level on?" once now, while nothing runs: a logger that
    has not been asked takes the logging module's own lock to find out, and a workflow thread
    the SDK interrupts there (its deadlock detector raises in it) would keep that lock for
    ever, as a handler's lock was kept (`LineHandler`). Setting a level clears these answers:
    call again after."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        if isinstance(logger, logging.Logger):
            for level in _LEVELS:
                logger.isEnabledFor(level)
