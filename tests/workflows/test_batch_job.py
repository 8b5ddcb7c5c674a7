"""BatchJobWorkflow on the time-skipping server: the back-off and deadline timers are durable
timers, they survive continue-as-new, and TTL and deletion end the story."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from models.signals import common as common_signals
from models.signals import job as job_signals
from tests.workflows.batch_harness import BatchHarness, pod, pods_changed, until, view
from tests.workflows.harness import last_run


@pytest_asyncio.fixture
async def h(env: WorkflowEnvironment) -> AsyncIterator[BatchHarness]:
    async with BatchHarness.running(env) as harness:
        yield harness


async def _timers(handle: WorkflowHandle[Any, Any]) -> list[float]:
    """Durations of the durable timers the workflow started, from its history."""
    out = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            out.append(event.timer_started_event_attributes.start_to_fire_timeout.ToSeconds())
    return out


async def _fail_latest(h: BatchHarness, handle: WorkflowHandle[Any, Any]) -> datetime:
    now = await h.env.get_current_time()
    name = h.calls.created()[-1]
    await pods_changed(handle, pod(name, "Failed", finished_at=now))
    return now


def _conditions(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in status.get("conditions", [])]


async def test_failed_pods_wait_10s_then_20s_then_backoff_limit_fails(h: BatchHarness) -> None:
    handle = await h.submit(backoffLimit=2)
    await until(handle, lambda v: len(h.calls.created()) == 1, "first pod created")
    for attempt, wait in ((1, 10), (2, 20)):
        failed_at = await _fail_latest(h, handle)
        status = await until(handle, lambda v: "backoff" in v.timers, f"back-off {attempt}")
        fires = datetime.fromisoformat(status.timers["backoff"])
        # At the first whole second from then: the controller's syncs see whole seconds.
        assert timedelta(seconds=wait) <= fires - failed_at < timedelta(seconds=wait + 1)
        await h.env.sleep(timedelta(seconds=wait - 2))
        assert len(h.calls.created()) == attempt, "no pod before the back-off is over"
        await h.env.sleep(timedelta(seconds=3))
        count = attempt + 1
        await until(handle, lambda v, n=count: len(h.calls.created()) == n, "re-created")
    await _fail_latest(h, handle)
    final = await until(handle, lambda v: v.phase == "Failed", "Failed")
    assert _conditions(final.status) == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]
    assert final.status["failed"] == 3
    assert h.calls.statuses()[-1] == final.status
    # Started when the failure was processed, to fire 10 s and 20 s after the pod finished.
    started = await _timers(handle)
    failed_tasks = [
        e
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]
    assert not failed_tasks, "a fired timer must not spin the workflow (deadlock detector)"
    assert len(started) == 2
    assert all(w - 3 < t <= w for t, w in zip(started, (10, 20), strict=True))


async def test_active_deadline_is_a_durable_timer_that_fails_the_job(h: BatchHarness) -> None:
    handle = await h.submit(activeDeadlineSeconds=60, parallelism=2, completions=4)
    await until(handle, lambda v: len(v.pods) == 2, "two pods")
    names = h.calls.created()
    await pods_changed(handle, *(pod(n) for n in names))
    await until(handle, lambda v: v.status.get("ready") == 2, "running")
    await h.env.sleep(timedelta(seconds=61))
    failing = await until(handle, lambda v: v.phase == "Failing", "deadline decided")
    (deleted,) = h.calls.named("delete_job_pods")
    assert deleted.keep_finalizers and sorted(deleted.names) == sorted(names)
    assert _conditions(failing.status) == [("FailureTarget", "DeadlineExceeded")]
    assert failing.status["terminating"] == 2
    await pods_changed(handle, *(pod(n, deleting=True, deleted=True) for n in names))
    final = await until(handle, lambda v: v.phase == "Failed", "Failed once pods are gone")
    assert _conditions(final.status)[-1] == ("Failed", "DeadlineExceeded")
    assert final.status["failed"] == 2 and final.status["terminating"] == 0
    assert any(55 < t <= 60 for t in await _timers(handle))


async def test_continue_as_new_keeps_the_deadline_timer(h: BatchHarness) -> None:
    handle = await h.submit(max_history=40, activeDeadlineSeconds=300)
    await until(handle, lambda v: len(v.pods) == 1, "pod created")
    (name,) = h.calls.created()
    for i in range(30):  # readiness flapping: news, but nothing to do
        await pods_changed(handle, pod(name, ready=i % 2 == 0))
    current = await last_run(h.env.client, handle.id, max_history=40)
    armed = await until(current, lambda v: "deadline" in v.timers, "still armed")
    assert armed.status["ready"] == 0, "the last readiness news (not ready) was carried over"
    latest = await current.describe()
    assert handle.result_run_id is not None and latest.run_id != handle.result_run_id, (
        "the workflow continued as new"
    )
    await h.env.sleep(timedelta(seconds=301))
    status = await until(current, lambda v: v.phase == "Failing", "carried timer fired")
    assert _conditions(status.status) == [("FailureTarget", "DeadlineExceeded")]


async def test_ttl_deletes_the_job_and_deletion_ends_the_workflow(h: BatchHarness) -> None:
    handle = await h.submit(ttlSecondsAfterFinished=120)
    await until(handle, lambda v: len(v.pods) == 1, "pod created")
    (name,) = h.calls.created()
    await pods_changed(handle, pod(name, "Succeeded", ready=False))
    done = await until(handle, lambda v: v.phase == "Complete", "Complete")
    assert done.status["succeeded"] == 1 and "completionTime" in done.status
    assert not h.calls.named("delete_batch_job")
    await h.env.sleep(timedelta(seconds=121))
    await until(handle, lambda v: bool(h.calls.named("delete_batch_job")), "TTL expired")
    (deleted,) = h.calls.named("delete_batch_job")
    assert (deleted["name"], deleted["uid"]) == ("train", "job-uid")
    await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="job-uid"))
    await handle.result()
    assert (await view(handle)).phase == "Complete"
