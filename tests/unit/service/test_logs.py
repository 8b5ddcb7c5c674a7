"""Log lines name the Job (or Queue) they are about, in text and in JSON: from the call site's
`extra`, an ObjectLogger, or the workflow id Temporal's activity/workflow loggers carry."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import io
import json
import logging
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from types import FrameType

import pytest
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from service import logs

pytestmark = pytest.mark.unit


def _record(msg: str = "pods created", exc: bool = False, **extra: object) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            info = sys.exc_info()
    record = logging.LogRecord("caldera.test", logging.INFO, __file__, 1, msg, None, info)
    record.__dict__.update(extra)
    return record


def _json(record: logging.LogRecord) -> dict[str, object]:
    line = logs.JsonFormatter().format(record)
    assert "\n" not in line, "one JSON object per line"
    parsed: dict[str, object] = json.loads(line)
    return parsed


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param({"job": "ns/a"}, {"job": "ns/a"}, id="explicit-job"),
        pytest.param({"queue": "q1"}, {"queue": "q1"}, id="explicit-queue"),
        pytest.param(
            {"temporal_workflow": {"workflow_id": "vcjob/ns/train", "run_id": "r"}},
            {"job": "ns/train"},
            id="workflow-logger",
        ),
        pytest.param(
            {"temporal_activity": {"workflow_id": "vcjob/team-a/big-job", "attempt": 2}},
            {"job": "team-a/big-job"},
            id="activity-logger",
        ),
        pytest.param(
            {"temporal_workflow": {"workflow_id": "queue/research"}},
            {"queue": "research"},
            id="queue-workflow",
        ),
        pytest.param(
            {"temporal_workflow": {"workflow_id": "scheduler/volcano"}}, {}, id="scheduler"
        ),
        pytest.param(
            {"job": "ns/explicit", "temporal_activity": {"workflow_id": "scheduler/volcano"}},
            {"job": "ns/explicit"},
            id="explicit-wins",
        ),
        pytest.param({}, {}, id="nothing"),
    ],
)
def test_object_keys_from_extra_or_workflow_id(
    extra: dict[str, object], expected: dict[str, str]
) -> None:
    assert logs.object_keys(_record(**extra)) == expected


def test_json_line_has_the_fields_and_the_job() -> None:
    details = {"workflow_id": "vcjob/ns/train", "attempt": 1, "activity_type": "create_pods"}
    entry = _json(_record("pods created created=%d", temporal_activity=details, count=3))
    assert entry["level"] == "INFO"
    assert entry["logger"] == "caldera.test"
    assert entry["msg"] == "pods created created=%d"
    assert entry["job"] == "ns/train"
    assert entry["temporal_activity"] == details  # Temporal's dict stays a nested object
    assert entry["count"] == 3
    assert datetime.fromisoformat(str(entry["ts"]).replace("Z", "+00:00")).tzinfo is not None
    assert str(entry["ts"]).endswith("Z")


def test_json_formats_args_and_survives_values_json_cannot_hold() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "n=%d", (5,), None)
    record.when = datetime(2026, 1, 2, 3, 4, 5)
    record.key = object()
    entry = _json(record)
    assert entry["msg"] == "n=5"
    assert entry["when"] == "2026-01-02 03:04:05"
    assert str(entry["key"]).startswith("<object object")
    assert entry["level"] == "WARNING"
    assert "job" not in entry


def test_json_carries_the_traceback() -> None:
    entry = _json(_record(exc=True, job="ns/a"))
    assert "RuntimeError: boom" in str(entry["exc"])
    assert entry["job"] == "ns/a"


def test_text_appends_the_job_when_the_message_lacks_it() -> None:
    line = logs.TextFormatter().format(
        _record("scheduler not told", temporal_workflow={"workflow_id": "vcjob/ns/a"})
    )
    assert line.endswith("INFO caldera.test scheduler not told job=ns/a")


def test_text_does_not_repeat_a_job_the_message_names() -> None:
    line = logs.TextFormatter().format(_record("phase changed job=ns/a to=Running", job="ns/a"))
    assert line.endswith("phase changed job=ns/a to=Running")
    assert line.count("job=ns/a") == 1


def test_text_puts_the_job_on_the_message_line_before_the_traceback() -> None:
    first, *rest = logs.TextFormatter().format(_record("failed", exc=True, job="ns/a")).split("\n")
    assert first.endswith("failed job=ns/a")
    assert "RuntimeError: boom" in rest[-1]


def test_object_logger_binds_the_key_for_both_formats() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("caldera.test.object")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logs.ObjectLogger(logger, "job", "ns/a").warning("signal lost signal=%s", "x")
    finally:
        logger.removeHandler(handler)
    entry = json.loads(stream.getvalue())
    assert entry["msg"] == "signal lost signal=x job=ns/a"
    assert entry["job"] == "ns/a"


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="text, json"):
        logs.formatter("xml")


@contextlib.contextmanager
def _set_up(fmt: str) -> Iterator[io.StringIO]:
    """The process's logging as `logs.setup` makes it, into a stream; restored after (the
    level's answers made again, as setting a level clears them)."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    logs.setup("INFO", fmt, stream)
    try:
        yield stream
    finally:
        logs.setup("INFO", "text", io.StringIO())
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved[0]:
            root.addHandler(h)
        root.setLevel(saved[1])
        logs.warm_levels()


@pytest.fixture
def json_root() -> Iterator[io.StringIO]:
    """The process's logging in JSON (as `--log-format json` sets it up), restored after."""
    with _set_up("json") as stream:
        yield stream


def test_an_activity_log_line_names_its_job(json_root: io.StringIO) -> None:
    @activity.defn(name="create_pods")
    def create_pods(n: int) -> None:
        activity.logger.info("pods created created=%d", n)

    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="vcjob/ns/train")
    env.run(create_pods, 2)
    (entry,) = [json.loads(line) for line in json_root.getvalue().splitlines()]
    # JSON mode: Temporal's info dict is a field, not appended to the message.
    assert entry["msg"] == "pods created created=2"
    assert entry["job"] == "ns/train"
    assert entry["temporal_activity"]["workflow_id"] == "vcjob/ns/train"


def test_setup_reads_the_format_flag_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(logs.ENV_FORMAT, "json")
    p = argparse.ArgumentParser()
    logs.add_arguments(p)
    assert p.parse_args([]).log_format == "json"
    assert p.parse_args(["--log-format", "text"]).log_format == "text"
    with pytest.raises(SystemExit):
        p.parse_args(["--log-format", "yaml"])


# -- a thread interrupted while logging never stops the others ---------------------------------


class _Interrupted(Exception):
    """What the Temporal SDK raises in a workflow thread it finds deadlocked."""


def _after_acquire() -> tuple[int, bool]:
    """The line of logging.Handler.handle right after it takes the handler's lock, and whether
    the stdlib's lock would stay taken there (False where this Python takes it with `with`:
    then the line that emits, inside the `with`)."""
    lines, first = inspect.getsourcelines(logging.Handler.handle)
    index = next((i for i, line in enumerate(lines) if "self.acquire()" in line), None)
    if index is not None:
        return first + index + 1, True
    emits = next(i for i, line in enumerate(lines) if "self.emit(record)" in line)
    return first + emits, False


@contextlib.contextmanager
def _interrupted_after_acquire(handler: logging.Handler, line: int) -> Iterator[None]:
    """Log one record through `handler` in a thread that an exception interrupts at `line` of
    Handler.handle, as the SDK's interruption can land (deterministic, by a trace function).
    The thread lives on meanwhile, as a workflow thread of the SDK's pool does (a thread that
    ended could hand its id, and so the lock, to the next one); leaving, it lets go of what it
    still holds."""
    interrupted, leave = threading.Event(), threading.Event()

    def local(frame: FrameType, event: str, arg: object) -> object:
        if event == "line" and frame.f_lineno == line:
            raise _Interrupted
        return local

    def tracer(frame: FrameType, event: str, arg: object) -> object:
        return local if frame.f_code is logging.Handler.handle.__code__ else None

    def run() -> None:
        sys.settrace(tracer)
        try:
            handler.handle(_record("interrupted"))
        except _Interrupted:
            interrupted.set()
        finally:
            sys.settrace(None)
        leave.wait()
        with contextlib.suppress(RuntimeError):  # not held: nothing to let go of
            handler.release()

    thread = threading.Thread(target=run)
    thread.start()
    assert interrupted.wait(5), "the interruption landed"
    try:
        yield
    finally:
        leave.set()
        thread.join(5)


def _logs_within(handler: logging.Handler, seconds: float) -> bool:
    done = threading.Event()
    thread = threading.Thread(target=lambda: (handler.handle(_record("after")), done.set()))
    thread.daemon = True
    thread.start()
    return done.wait(seconds)


@pytest.mark.parametrize("kind", ["stdlib", "caldera"])
def test_a_thread_interrupted_while_logging_does_not_wedge_the_others(kind: str) -> None:
    line, leaks = _after_acquire()
    if kind == "stdlib" and not leaks:
        pytest.skip("this Python's Handler.handle takes its lock with `with`: nothing leaks")
    out = io.StringIO()
    handler = logging.StreamHandler(out) if kind == "stdlib" else logs.LineHandler(out)
    with _interrupted_after_acquire(handler, line):
        logged = _logs_within(handler, 0.5 if kind == "stdlib" else 5)
    if kind == "stdlib":  # the hazard itself: the lock stays taken, the next line waits
        assert not logged
        return
    assert logged, "a line logged after the interruption"
    assert out.getvalue().splitlines()[-1].endswith("after")


def test_a_workflow_line_after_setup_never_waits_for_the_logging_module_lock() -> None:
    """A logger not yet asked about a level takes the logging module's lock to find out; a
    workflow thread interrupted there would keep it. After setup every logger has its answers,
    so a workflow's line goes through while another thread holds that lock."""
    from temporalio import workflow

    underneath = workflow.logger.logger  # what the adapter logs through (none outside a workflow)
    held, release, done = threading.Event(), threading.Event(), threading.Event()

    def holder() -> None:
        with logging._lock:  # type: ignore[attr-defined]
            held.set()
            release.wait(10)

    with _set_up("text") as out:
        thread = threading.Thread(target=holder, daemon=True)
        thread.start()
        try:
            assert held.wait(5)
            line = threading.Thread(
                target=lambda: (underneath.warning("phase changed"), done.set()), daemon=True
            )
            line.start()
            assert done.wait(5), "the line waited for the logging module's lock"
        finally:
            release.set()
            thread.join(5)
        assert "phase changed" in out.getvalue()
