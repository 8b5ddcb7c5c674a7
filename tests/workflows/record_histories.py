"""Record the JobWorkflow, BatchJobWorkflow and QueueWorkflow histories the replay test guards.

Usage: `python -m tests.workflows.record_histories [NAME ...]`.

Run it on purpose when a change to the workflow is meant to alter its commands (behind a
`workflow.patched` gate), then commit the files: they stand for histories of workflows that
were already running when the change shipped.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from models import keys
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.builders import make_job
from tests.workflows import batch_harness as batch
from tests.workflows.conftest import _test_server, register_search_attributes
from tests.workflows.harness import SKIP_PAST, Harness, phase_is, pod, pods_changed, until
from workflows.job import JobWorkflow
from workflows.queue import QueueWorkflow, QueueWorkflowInput

HISTORIES = Path(__file__).with_name("histories")


async def _restart_with_timeout(h: Harness) -> str:
    """Running → PodEvicted with a 5m timeout → restart → Pending → Running → Completed."""
    policy = {"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}
    manifest = (
        make_job("story", namespace="test")
        .task("master")
        .task("worker", replicas=2)
        .spec(policies=[policy], ttlSecondsAfterFinished=30)
        .manifest()
    )
    handle = await h.submit(manifest)
    everyone = [("master", 0), ("worker", 0), ("worker", 1)]
    await pods_changed(handle, *[pod("story", t, i) for t, i in everyone])
    await until(handle, phase_is("Running"), "Running")
    await pods_changed(handle, pod("story", "worker", 1, deleted=True))
    await until(handle, lambda v: len(v.delayed) == 1, "armed")
    await h.env.sleep(SKIP_PAST)
    await until(handle, phase_is("Restarting"), "Restarting")
    await pods_changed(
        handle, *[pod("story", t, i, deleted=True, out_of_sync=True) for t, i in everyone[:2]]
    )
    await until(handle, phase_is("Pending"), "Pending")
    await pods_changed(handle, *[pod("story", t, i, version=1) for t, i in everyone])
    await until(handle, phase_is("Running"), "Running again")
    await pods_changed(
        handle, *[pod("story", t, i, phase="Succeeded", version=1) for t, i in everyone]
    )
    await until(handle, phase_is("Completed"), "Completed")
    await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="uid-1"))
    await handle.result()
    history = await handle.fetch_history()
    return history.to_json()


async def _volumes_and_plugins(h: Harness) -> str:
    """A job with a claim to create and the svc and env plugins: Running, restarted by a
    command (a full kill: the plugins removed), Running again, Completed, deleted."""
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    manifest = (
        make_job("vols", namespace="test")
        .task("worker", replicas=2)
        .spec(
            volumes=[{"mountPath": "/data", "volumeClaim": claim}],
            plugins={"svc": [], "env": []},
        )
        .manifest()
    )
    handle = await h.submit(manifest)
    everyone = [("worker", 0), ("worker", 1)]
    await until(handle, lambda v: len(h.calls.named("create_pods")) == 1, "pods created")
    await pods_changed(handle, *[pod("vols", t, i) for t, i in everyone])
    await until(handle, phase_is("Running"), "Running")
    await handle.execute_update(JobWorkflow.restart, job_signals.JobCommand(reason="story"))
    await pods_changed(
        handle, *[pod("vols", t, i, deleted=True, out_of_sync=True) for t, i in everyone]
    )
    await until(handle, phase_is("Pending"), "Pending")
    await pods_changed(handle, *[pod("vols", t, i, version=1) for t, i in everyone])
    await until(handle, phase_is("Running"), "Running again")
    await pods_changed(
        handle, *[pod("vols", t, i, phase="Succeeded", version=1) for t, i in everyone]
    )
    await until(handle, phase_is("Completed"), "Completed")
    await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="uid-1"))
    await handle.result()
    history = await handle.fetch_history()
    return history.to_json()


async def _batch_backoff_then_ttl(h: batch.BatchHarness) -> str:
    """A batch/v1 Job: two failures with 10 s and 20 s back-off, success, TTL delete."""
    handle = await h.submit(backoffLimit=3, ttlSecondsAfterFinished=60)
    for attempt in (1, 2):
        await batch.until(handle, lambda v, n=attempt: len(h.calls.created()) == n, "pod")
        now = await h.env.get_current_time()
        name = h.calls.created()[-1]
        await batch.pods_changed(handle, batch.pod(name, "Failed", finished_at=now))
        await batch.until(handle, lambda v: "backoff" in v.timers, "back-off armed")
        await h.env.sleep(timedelta(seconds=10 * attempt + 1))
    await batch.until(handle, lambda v: len(h.calls.created()) == 3, "third pod")
    name = h.calls.created()[-1]
    await batch.pods_changed(handle, batch.pod(name))
    await batch.pods_changed(handle, batch.pod(name, "Succeeded", ready=False))
    await batch.until(handle, lambda v: v.phase == "Complete", "Complete")
    await h.env.sleep(timedelta(seconds=61))
    await batch.until(handle, lambda v: bool(h.calls.named("delete_batch_job")), "TTL")
    await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="job-uid"))
    await handle.result()
    history = await handle.fetch_history()
    return history.to_json()


async def _queue_close_and_open(h: Harness) -> str:
    """A Queue: Open, a PodGroup holds a close at Closing, drained → Closed, reopened, deleted."""
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "story-q", "uid": "uid-story-q"},
        "spec": {"weight": 1, "parent": "root"},
    }
    handle = await h.env.client.start_workflow(
        QueueWorkflow.run,
        QueueWorkflowInput(),
        id=keys.queue_workflow_id("story-q"),
        task_queue=h.task_queue,
        start_signal=queue_signals.SIGNAL_QUEUE_OBSERVED,
        start_signal_args=[queue_signals.QueueObserved(queue=queue)],
    )

    async def state_is(state: str) -> None:
        for _ in range(200):
            view = await handle.query(QueueWorkflow.status)
            if view.backlog == 0 and view.state == state:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"queue not {state}")

    await state_is("Open")
    group = queue_signals.PodGroupRef(key="test/pg-1", phase="Running")
    await handle.signal(
        queue_signals.SIGNAL_POD_GROUPS_CHANGED, queue_signals.PodGroupsChanged(groups=[group])
    )
    await handle.execute_update(QueueWorkflow.close, queue_signals.QueueCommand(reason="story"))
    await state_is("Closing")
    gone = group.model_copy(update={"deleted": True})
    await handle.signal(
        queue_signals.SIGNAL_POD_GROUPS_CHANGED, queue_signals.PodGroupsChanged(groups=[gone])
    )
    await state_is("Closed")
    await handle.execute_update(QueueWorkflow.open, queue_signals.QueueCommand(reason="story"))
    await state_is("Open")
    await handle.signal(
        queue_signals.SIGNAL_QUEUE_DELETED, queue_signals.QueueDeleted(uid="uid-story-q")
    )
    await handle.result()
    history = await handle.fetch_history()
    return history.to_json()


STORIES = {
    "restart_with_timeout": (Harness, _restart_with_timeout),
    "batch_backoff_then_ttl": (batch.BatchHarness, _batch_backoff_then_ttl),
    "queue_close_and_open": (Harness, _queue_close_and_open),
    "entity_restart_with_timeout": (Harness, _restart_with_timeout),
    "entity_batch_backoff_then_ttl": (batch.BatchHarness, _batch_backoff_then_ttl),
    "entity_batch_unique_pod_names": (batch.BatchHarness, _batch_backoff_then_ttl),
    # Recorded before the `caldera-job-io` patch (claim names in the spec, markers), and on it.
    "volumes_and_plugins": (Harness, _volumes_and_plugins),
    "job_io_volumes_and_plugins": (Harness, _volumes_and_plugins),
    # On `caldera-one-write-per-decision`: a decision's writes by one local activity.
    "one_write_restart_with_timeout": (Harness, _restart_with_timeout),
}


async def main(names: list[str]) -> None:
    """Record the named stories, or those without a file yet: a committed history stands for
    workflows already running, so it is re-recorded only when asked by name."""
    wanted = names or [n for n in STORIES if not (HISTORIES / f"{n}.json").exists()]
    async with await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=_test_server(), data_converter=pydantic_data_converter
    ) as env:
        await register_search_attributes(env)
        for name in wanted:
            harness, story = STORIES[name]
            async with harness.running(env) as h:
                text = await story(h)
            HISTORIES.mkdir(exist_ok=True)
            (HISTORIES / f"{name}.json").write_text(text)
            print(f"wrote {HISTORIES / name}.json")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
