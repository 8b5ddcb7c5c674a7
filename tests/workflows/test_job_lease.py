"""The fencing of a dispatched copy by its worker cluster's JobWorkflow, on the time-skipping
server: a lease not renewed aborts the job when it runs out; a renewal re-arms the timer; a
Job without a lease arms no timer at all."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from controllers.dispatch import copies
from models.dispatch import GENERATION_ANNOTATION, LEASE_ANNOTATION, ORIGIN_ANNOTATION
from models.signals import job as job_signals
from tests.builders import make_job
from tests.workflows.harness import UID, Harness, phase_is, pod, pods_changed, until, view


def _copy(lease_until: datetime | None) -> dict[str, Any]:
    doc = make_job("train", namespace="test").task("worker", replicas=1).manifest()
    if lease_until is not None:
        doc["metadata"]["annotations"] = {
            ORIGIN_ANNOTATION: "manager-uid",
            GENERATION_ANNOTATION: "1",
            LEASE_ANNOTATION: copies.stamp(lease_until),
        }
    return doc


async def _running(h: Harness, doc: dict[str, Any]) -> WorkflowHandle[Any, Any]:
    handle = await h.submit(doc)
    await until(handle, phase_is("Pending"), "Pending")
    await pods_changed(handle, pod("train", "worker", 0))
    await until(handle, phase_is("Running"), "Running")
    return handle


async def _timers(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.user_metadata.summary.data.decode()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    ]


async def test_lease_run_out_aborts_the_copy(harness: Harness) -> None:
    now = await harness.env.get_current_time()
    handle = await _running(harness, _copy(now + timedelta(seconds=60)))
    await harness.env.sleep(timedelta(seconds=61))
    await until(handle, lambda v: v.phase in ("Aborting", "Aborted"), "aborted by its lease")
    assert any("dispatch lease" in t for t in await _timers(handle))
    reasons = [e["reason"] for e in harness.calls.named("record_event")]
    assert "DispatchLeaseExpired" in reasons


async def test_renewed_lease_rearms_the_timer(harness: Harness) -> None:
    now = await harness.env.get_current_time()
    doc = _copy(now + timedelta(seconds=60))
    handle = await _running(harness, doc)
    renewed = _copy(now + timedelta(seconds=180))
    renewed["metadata"]["uid"] = UID
    await handle.signal(job_signals.SIGNAL_JOB_OBSERVED, job_signals.JobObserved(job=renewed))
    await until(handle, phase_is("Running"), "renewal handled")
    await harness.env.sleep(timedelta(seconds=90))
    assert (await view(handle)).phase == "Running"
    await harness.env.sleep(timedelta(seconds=100))
    await until(handle, lambda v: v.phase in ("Aborting", "Aborted"), "aborted after renewal")


async def test_job_without_a_lease_arms_no_timer(harness: Harness) -> None:
    handle = await _running(harness, _copy(None))
    await harness.env.sleep(timedelta(minutes=10))
    assert (await view(handle)).phase == "Running"
    assert await _timers(handle) == []
