"""The one way workflow shells call activities: options from `activities.options`, a summary
for the UI timeline, and the result typed by the activity's own signature.

Short writes run as local activities (`ActivityOptions.local`) in workflows started since the
`local-kube-writes` patch; a history recorded before it replays with regular activities. A run
whose input already says so (`KnowsLocalWrites`) does not evaluate the patch.

A local activity's retries wait on a workflow timer, never inside the worker
(`LOCAL_RETRY_THRESHOLD`): temporalio 1.35.0's core arms a start-to-close timer per attempt of
an in-worker retry and aborts only the last one (`TimeoutBag::mark_started`, sdk-core
`crates/sdk-core/src/worker/activities/local_activities.rs`). The earlier attempts' timers stay
armed: while the worker runs, each one times out the attempt running when it fires (a retry got
what was left of the first attempt's 30 s, not its own); once the worker has shut down, each one
panics the core's thread ("receive half not dropped", local_activities.rs:1120) in a process
that lives on, as the workflow tests' does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, Protocol, TypeVar, overload, runtime_checkable

from temporalio import workflow
from temporalio.exceptions import ActivityError, FailureError

with workflow.unsafe.imports_passed_through():
    from activities.options import ActivityOptions

A = TypeVar("A")
R = TypeVar("R")
SUMMARY_LIMIT = 200  # Temporal keeps at most 200 bytes of an activity summary
LOCAL_WRITES = "local-kube-writes"
# Every back-off is longer, so each retry of a local activity is a new schedule after a workflow
# timer (its failed attempt a marker in the history), not an attempt the worker starts itself. Not
# zero: the SDK sends a zero threshold as unset, which the core reads as its default, one minute.
LOCAL_RETRY_THRESHOLD = timedelta(microseconds=1)


@runtime_checkable
class KnowsLocalWrites(Protocol):
    """A workflow whose own input says its run began with local writes in force, so it needs
    no patch marker (and the search attribute upsert that comes with one) to learn it."""

    def local_writes(self) -> bool: ...


def _known_local() -> bool:
    shell = workflow.instance()
    return isinstance(shell, KnowsLocalWrites) and shell.local_writes()


def local() -> bool:
    """Short writes run as local activities in this run (asks the patch unless the run's
    input says so)."""
    return _known_local() or workflow.patched(LOCAL_WRITES)


def fit(summary: str) -> str:
    """A summary cut to Temporal's limit, which counts bytes, on a character's boundary."""
    return summary.encode()[:SUMMARY_LIMIT].decode(errors="ignore")


@overload
async def run(
    activity: Callable[[A], Awaitable[R]], arg: A, options: ActivityOptions, summary: str
) -> R: ...  # an async activity (one that calls Temporal itself)


@overload
async def run(activity: Callable[[A], R], arg: A, options: ActivityOptions, summary: str) -> R: ...


async def run(activity: Callable[[A], Any], arg: A, options: ActivityOptions, summary: str) -> Any:
    if options.local and local():
        try:
            return await workflow.execute_local_activity(
                activity,
                arg,
                start_to_close_timeout=options.start_to_close,
                schedule_to_close_timeout=options.schedule_to_close,
                retry_policy=options.retry,
                local_retry_threshold=LOCAL_RETRY_THRESHOLD,
                summary=fit(summary),
            )
        except ActivityError:
            raise
        except FailureError as e:
            # A local activity's failure arrives bare (its ApplicationError or timeout), and a
            # bare FailureError escaping the shell fails the whole workflow: callers meet
            # ActivityError whichever way the activity ran.
            raise ActivityError(
                str(e),
                scheduled_event_id=0,
                started_event_id=0,
                identity="",
                activity_type=getattr(activity, "__name__", ""),
                activity_id="",
                retry_state=None,
            ) from e
    return await workflow.execute_activity(
        activity,
        arg,
        start_to_close_timeout=options.start_to_close,
        schedule_to_close_timeout=options.schedule_to_close,
        heartbeat_timeout=options.heartbeat,
        retry_policy=options.retry,
        task_queue=options.task_queue,
        cancellation_type=options.cancellation,
        summary=fit(summary),
    )
