"""The `temporal-floor` side: what a workflow per job costs Temporal before Caldera does anything.

Each job is a bare workflow of the shape a one-pod Volcano Job needs on its way to Running:
started by signal-with-start with the job's search attributes (as the forwarder starts a
JobWorkflow), one local activity (the PodGroup create), a signal and a local activity (its
PodGroup Inqueue: the pod create), a signal and a local activity (the pod Running: the status
write), then a last signal that ends it. The activities do nothing and no Kubernetes object is
made, so the side's CPU is the Temporal server's plus this process's (client and worker in one)
and its makespan is how fast the dev server alone can carry that story for N jobs: the floor
under any design that gives every job its own workflow on this stack.

Run as `python -m bench.sidebyside.floor ADDRESS JOBS CONCURRENCY`; prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Final

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
)
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from service import search_attributes

STEPS: Final = 2  # signals that each run one more local activity (Inqueue, Running)
SIGNAL: Final = "observed"


@activity.defn(name="floor_write")
def floor_write(name: str) -> str:
    """Stands in for one apiserver write; it writes nothing."""
    return name


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    @workflow.init
    def __init__(self, name: str) -> None:
        self.heard = 0

    @workflow.signal(name=SIGNAL)
    def observed(self) -> None:
        self.heard += 1

    async def _write(self, name: str) -> None:
        await workflow.execute_local_activity(
            floor_write, name, start_to_close_timeout=timedelta(seconds=30)
        )

    def _heard(self, wanted: int) -> Callable[[], bool]:
        return lambda: self.heard >= wanted

    @workflow.run
    async def run(self, name: str) -> int:
        for wanted in range(1, STEPS + 2):  # the start signal, then Inqueue and Running
            await workflow.wait_condition(self._heard(wanted))
            await self._write(name)
        await workflow.wait_condition(self._heard(STEPS + 2))
        return self.heard


def _attributes(namespace: str, name: str) -> TypedSearchAttributes:
    return TypedSearchAttributes(
        [
            SearchAttributePair(search_attributes.NAMESPACE, namespace),
            SearchAttributePair(search_attributes.JOB_NAME, name),
            SearchAttributePair(search_attributes.QUEUE, "default"),
        ]
    )


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _job(client: Client, gate: asyncio.Semaphore, ns: str, i: int, queue: str) -> int:
    name = f"s-{i:05d}"
    async with gate:
        handle: WorkflowHandle[FloorWorkflow, int] = await client.start_workflow(
            FloorWorkflow.run,
            name,
            id=f"floor/{ns}/{name}",
            task_queue=queue,
            start_signal=SIGNAL,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            search_attributes=_attributes(ns, name),
        )
    for _ in range(STEPS + 1):
        async with gate:
            await handle.signal(SIGNAL)
    return await handle.result()


async def run(address: str, jobs: int, concurrency: int) -> dict[str, float | int]:
    client = await Client.connect(address)
    queue = f"floor-{uuid.uuid4().hex[:6]}"
    ns = queue
    with ThreadPoolExecutor(8) as pool:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[FloorWorkflow],
            activities=[floor_write],
            activity_executor=pool,
            workflow_runner=UnsandboxedWorkflowRunner(),
            max_cached_workflows=max(1000, jobs + 100),
        ):
            gate = asyncio.Semaphore(concurrency)
            cpu0, t0 = _cpu(), time.monotonic()
            heard = await asyncio.gather(*(_job(client, gate, ns, i, queue) for i in range(jobs)))
            seconds, cpu = time.monotonic() - t0, _cpu() - cpu0
    events = [
        e async for e in client.get_workflow_handle(f"floor/{ns}/s-00000").fetch_history_events()
    ]
    return {
        "jobs": jobs,
        "completed": sum(1 for h in heard if h == STEPS + 2),
        "makespan_s": round(seconds, 2),
        "process_cpu_s": round(cpu, 2),
        "events_per_job": len(events),
    }


def main() -> None:
    address, jobs, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(asyncio.run(run(address, jobs, concurrency))), flush=True)
    sys.stderr.flush()
    # Ends without the interpreter's finalization: the SDK's Rust thread that handed the last
    # result to the event loop may still be in Python then, and Python 3.11 ends such a thread
    # with pthread_exit, whose unwinding releases a thread state no longer current ("Fatal Python
    # error: PyGILState_Release", SIGABRT; temporalio/sdk-python#300): 49 of 318 bare runs of a
    # client and worker on this machine, none of 459 with this exit.
    os._exit(0)


if __name__ == "__main__":
    main()
