"""JobWorkflow behaviour beyond single policies: continue-as-new, commands as updates, the
PodGroup gate, TTL and deletion."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from forwarder import signaller
from forwarder.routing.envelopes import JobRef
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import scheduler as scheduler_signals
from service import search_attributes
from tests.builders import make_job
from tests.workflows.harness import (
    SKIP_PAST,
    Calls,
    Harness,
    last_run,
    phase_is,
    pod,
    pods_changed,
    serving,
    until,
    view,
)
from workflows.job import JobWorkflow, JobWorkflowInput


def _manifest(**spec: object) -> dict[str, object]:
    return make_job("train", namespace="test").task("worker", replicas=2).spec(**spec).manifest()


async def test_continue_as_new_carries_state_and_timers_and_loses_no_signal(h: Harness) -> None:
    policy = {"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}
    handle = await h.submit(_manifest(policies=[policy]), max_history=40)
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    await pods_changed(handle, pod("train", "worker", 1, deleted=True))
    await until(handle, lambda v: len(v.delayed) == 1, "armed")
    for restarts in range(1, 31):  # noise: container restarts below the TaskFailed threshold
        await pods_changed(handle, pod("train", "worker", 0, restart_count=restarts % 2))
    current = await last_run(h.env.client, handle.id, max_history=40)
    status = await until(current, lambda v: len(v.delayed) == 1, "still armed after the noise")
    latest = await current.describe()
    assert handle.result_run_id is not None and latest.run_id != handle.result_run_id, (
        "the workflow continued as new"
    )
    # The evicted pod was re-created and is Pending: the gang is incomplete (Volcano's f_running).
    assert status.phase == "Pending" and status.delayed[0].pod == "train-worker-1"
    await h.env.sleep(SKIP_PAST)
    status = await until(current, phase_is("Restarting"), "the carried timer fired")
    assert status.retry_count == 1


@pytest.fixture
def h(harness: Harness) -> Harness:
    return harness


async def test_update_refuses_impossible_command_with_its_reason(h: Harness) -> None:
    handle = await h.submit(_manifest())
    await until(handle, phase_is("Pending"), "Pending")
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await handle.execute_update(JobWorkflow.resume, job_signals.JobCommand())
    assert "only an Aborting or Aborted job can be resumed" in str(err.value.cause)


async def test_abort_then_resume_through_updates(h: Harness) -> None:
    handle = await h.submit(_manifest())
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    result = await handle.execute_update(
        JobWorkflow.abort, job_signals.JobCommand(reason="maintenance")
    )
    assert (result.phase_before, result.phase_after) == ("Running", "Aborting")
    await pods_changed(
        handle,
        pod("train", "worker", 0, deleted=True, out_of_sync=True),
        pod("train", "worker", 1, deleted=True, out_of_sync=True),
    )
    await until(handle, phase_is("Aborted"), "Aborted")
    result = await handle.execute_update(JobWorkflow.resume, job_signals.JobCommand())
    assert result.phase_after == "Restarting"
    assert (await view(handle)).retry_count == 1  # Volcano counts a resume as a retry (#3067)


async def test_gate_waits_for_podgroup_before_creating_pods(h: Harness) -> None:
    handle = await h.submit(_manifest(), settings=job_signals.ControllerSettings())
    await until(handle, phase_is("Pending"), "Pending")
    assert not h.calls.named("create_pods")
    assert h.calls.named("ensure_pod_group")
    group = f"train-{h.calls.named('ensure_pod_group')[0]['job']['metadata']['uid']}"
    await handle.signal(
        job_signals.SIGNAL_POD_GROUP_OBSERVED,
        job_signals.PodGroupObserved(name=group, phase="Inqueue"),
    )
    await until(handle, lambda v: v.pod_group_phase == "Inqueue", "gate open")
    (created,) = h.calls.named("create_pods")
    assert created.pods == [("worker", 0), ("worker", 1)]


async def test_ttl_deletes_finished_job_and_deletion_ends_workflow(h: Harness) -> None:
    handle = await h.submit(_manifest(ttlSecondsAfterFinished=120))
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await pods_changed(
        handle,
        pod("train", "worker", 0, phase="Succeeded"),
        pod("train", "worker", 1, phase="Succeeded"),
    )
    await until(handle, phase_is("Completed"), "Completed")
    assert not h.calls.named("delete_job")
    await h.env.sleep(SKIP_PAST)
    await until(handle, lambda v: True, "ttl processed")
    (deleted,) = h.calls.named("delete_job")
    assert deleted["name"] == "train"
    await handle.signal(
        job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid=deleted["uid"])
    )
    await handle.result()


async def test_placed_pods_are_bound_and_a_failed_bind_is_reported(h: Harness) -> None:
    handle = await h.submit(_manifest(), settings=job_signals.ControllerSettings())
    await until(handle, phase_is("Pending"), "Pending")
    placed = scheduler_signals.PodsPlaced(
        session=3,
        placements=[
            scheduler_signals.PlacedPod(pod="train-worker-0", node="kwok-node-0"),
            scheduler_signals.PlacedPod(pod="train-worker-1", node="gone"),
        ],
    )
    await pods_changed(
        handle,
        pod("train", "worker", 0, phase="Pending"),
        pod("train", "worker", 1, phase="Pending"),
    )
    await handle.signal(scheduler_signals.SIGNAL_PODS_PLACED, placed)
    await until(handle, lambda v: bool(h.calls.named("mark_unschedulable")), "failure handled")
    (bound,) = h.calls.named("bind_placements")
    assert [p.pod for p in bound.placements] == ["train-worker-0", "train-worker-1"]
    (marked,) = h.calls.named("mark_unschedulable")
    (entry,) = marked["pods"]
    assert (entry["pod"], entry["reason"], entry["message"]) == (
        "train-worker-1",
        "SchedulerError",
        "failed to bind to node gone: node not found",
    )


async def test_a_namespace_going_ends_the_job_quietly(h: Harness) -> None:
    handle = await h.submit(_manifest())
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    # The namespace is deleted: its pods go first, and every write is refused from now on.
    h.calls.gone = True
    await pods_changed(handle, pod("train", "worker", 0, deleted=True))
    await handle.result()  # completed, not failed: no retry, no JobDeleted needed
    # The refused pod re-creation was the last write tried: no status, no Event after it.
    assert h.calls.log[-1][0] == "create_pods"


async def test_a_forwarder_started_run_writes_only_what_it_learns(h: Harness) -> None:
    manifest = _manifest(queue="default")  # as the apiserver stores it (the CRD's default)
    observed = job_signals.JobObserved(job=manifest)
    attributes = signaller.start_attributes(JobRef(namespace="test", name="train"), observed)
    handle = await h.submit(manifest, attributes=attributes)
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    events = [e async for e in handle.fetch_history_events()]
    upserts = [
        e for e in events if e.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    markers = [
        e.marker_recorded_event_attributes.marker_name
        for e in events
        if e.HasField("marker_recorded_event_attributes")
    ]
    # Namespace, name, queue and the first phase (Pending) came with the start: only Running
    # is upserted, and no patch marker is needed to learn that writes are local and go
    # together (ensure PodGroup, create pods, write status Pending: one marker).
    assert len(upserts) == 1 and "core_patch" not in markers, (len(upserts), markers)
    assert markers == ["core_local_activity"] * 2, markers
    described = (await handle.describe()).typed_search_attributes
    assert described.get(search_attributes.QUEUE) == "default"
    assert described.get(search_attributes.NAMESPACE) == "test"
    assert described.get(search_attributes.JOB_PHASE) == "Running"


async def test_a_job_made_again_as_its_deleted_run_ends_gets_a_fresh_run(h: Harness) -> None:
    """`kubectl replace --force`: the deletion and the new object reach the workflow in one
    task. The run that ends for the deletion hands the new object to a fresh run instead of
    dropping it (the forwarder says nothing more of it until it changes)."""
    queue = f"tq-{uuid.uuid4()}"  # no worker yet: every signal below lands in one task
    manifest = _manifest()
    first = {**manifest, "metadata": {**manifest["metadata"], "uid": "uid-old", "generation": 1}}
    again = {**manifest, "metadata": {**manifest["metadata"], "uid": "uid-new", "generation": 1}}
    handle = await h.env.client.start_workflow(
        JobWorkflow.run,
        JobWorkflowInput(settings=job_signals.ControllerSettings(scheduler_override="default")),
        id=f"vcjob/test/{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        start_signal=job_signals.SIGNAL_JOB_OBSERVED,
        start_signal_args=[job_signals.JobObserved(job=first)],
    )
    await handle.signal(job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="uid-old"))
    await handle.signal(job_signals.SIGNAL_JOB_OBSERVED, job_signals.JobObserved(job=again))
    async with serving(h.env, queue, Calls()):
        current = await last_run(h.env.client, handle.id, max_history=10_000)
        status = await until(current, phase_is("Pending"), "the new Job's run")
    assert status.uid == "uid-new"
    assert (await current.describe()).run_id != handle.result_run_id, "a fresh run"


async def test_a_command_behind_a_new_object_is_answered_not_left_waiting(h: Harness) -> None:
    """`kubectl replace --force` then `caldera job abort` while no worker ran: the run starts
    over for the new object, and the command queued behind it, which that run will not carry
    out, is refused with why. It used to wait for ever, and with it the run, which waits for
    every handler to finish before it continues as new: the Job was wedged."""
    queue = f"tq-{uuid.uuid4()}"
    manifest = _manifest()
    first = {**manifest, "metadata": {**manifest["metadata"], "uid": "uid-old", "generation": 1}}
    again = {**manifest, "metadata": {**manifest["metadata"], "uid": "uid-new", "generation": 1}}
    handle = await h.env.client.start_workflow(
        JobWorkflow.run,
        JobWorkflowInput(settings=job_signals.ControllerSettings(scheduler_override="default")),
        id=f"vcjob/test/{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        start_signal=job_signals.SIGNAL_JOB_OBSERVED,
        start_signal_args=[job_signals.JobObserved(job=first)],
    )
    async with serving(h.env, queue, Calls(), cached=False):
        await until(handle, phase_is("Pending"), "the first Job's run")
    # The worker is gone: the new object and the command reach the run in one task.
    await handle.signal(job_signals.SIGNAL_JOB_OBSERVED, job_signals.JobObserved(job=again))
    command = asyncio.create_task(
        handle.execute_update(JobWorkflow.abort, job_signals.JobCommand(reason="maintenance"))
    )
    async with serving(h.env, queue, Calls()):
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await asyncio.wait_for(command, 30)
        assert "replaced by a new object" in str(err.value.cause), err.value.cause
        current = await last_run(h.env.client, handle.id, max_history=10_000)
        status = await until(current, phase_is("Pending"), "the new Job's run")
    assert status.uid == "uid-new"


async def _details(handle: WorkflowHandle[Any, Any]) -> str:
    """The current details the UI shows for the workflow."""
    metadata: WorkflowMetadata = await handle.query(
        "__temporal_workflow_metadata", result_type=WorkflowMetadata
    )
    return str(metadata.current_details)


async def test_current_details_say_phase_pods_and_next_delayed_action(h: Harness) -> None:
    policy = {"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}
    handle = await h.submit(_manifest(policies=[policy]))
    await pods_changed(handle, pod("train", "worker", 0), pod("train", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    details = await _details(handle)
    assert details.startswith("Running: ") and details.endswith(" · 2 running"), details
    await pods_changed(handle, pod("train", "worker", 1, deleted=True))
    await until(handle, lambda v: len(v.delayed) == 1, "armed")
    details = await _details(handle)
    assert " · next: RestartJob in 5m0s: PodEvicted on task worker at " in details, details
