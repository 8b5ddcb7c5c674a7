"""A Volcano Job's short writes of one decision go by one local activity (`apply_writes`): a
one-pod job reaches Running with one marker per decision, and a write that fails comes back to
the core exactly as when each write went alone (the patch refused: runs from before it)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from forwarder import signaller
from forwarder.routing.envelopes import JobRef
from models.signals import job as job_signals
from service import search_attributes
from tests.builders import make_job
from tests.workflows.harness import UID, Calls, Harness, phase_is, pod, pods_changed, until
from workflows import writes

ALONE = frozenset({writes.ONE_WRITE})  # a worker from before the patch
# As the forwarder starts a job: the PodGroup gate in force, writes local and batched.
FORWARDER = job_signals.ControllerSettings(
    local_pod_writes=True, local_writes=True, one_write_per_decision=True
)
UNTOLD = FORWARDER.model_copy(update={"one_write_per_decision": False})


@pytest.fixture
def h(harness: Harness) -> Harness:
    return harness


def _one_pod() -> dict[str, Any]:
    return make_job("one", namespace="test").task("worker").spec(queue="default").manifest()


async def _to_running(
    h: Harness, settings: job_signals.ControllerSettings
) -> WorkflowHandle[Any, Any]:
    """A one-pod job the forwarder starts, through the gate (Inqueue), to Running."""
    manifest = _one_pod()
    observed = job_signals.JobObserved(job=manifest)
    attributes = signaller.start_attributes(JobRef(namespace="test", name="one"), observed)
    handle = await h.submit(manifest, settings=settings, attributes=attributes)
    await until(handle, phase_is("Pending"), "Pending")
    inqueue = job_signals.PodGroupObserved(name=f"one-{UID}", phase="Inqueue")
    await handle.signal(job_signals.SIGNAL_POD_GROUP_OBSERVED, inqueue)
    await until(handle, lambda v: bool(h.calls.named("create_pods")), "pods created")
    await pods_changed(handle, pod("one", "worker", 0))
    await until(handle, phase_is("Running"), "Running")
    return handle


def _summary(event: HistoryEvent) -> str:
    text: str = json.loads(event.user_metadata.summary.data or b'""')
    return text


def _local(event: HistoryEvent) -> tuple[str, str]:
    """A local activity's marker: its activity type and summary."""
    details = event.marker_recorded_event_attributes.details["data"].payloads[0].data
    return json.loads(details)["activity_type"], _summary(event)


async def _markers_and_upserts(
    handle: WorkflowHandle[Any, Any],
) -> tuple[list[tuple[str, str]], list[str], list[list[str]]]:
    """The history's local activities, patch markers and upserted attribute names, in order."""
    events = [e async for e in handle.fetch_history_events()]
    markers = [e for e in events if e.HasField("marker_recorded_event_attributes")]
    local = [
        _local(e)
        for e in markers
        if e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    patches = [
        json.loads(e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)["id"]
        for e in markers
        if e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    upserts = [
        sorted(
            e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        )
        for e in events
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    return local, patches, upserts


async def test_a_one_pod_job_reaches_running_with_one_marker_per_decision(h: Harness) -> None:
    handle = await _to_running(h, FORWARDER)
    local, patches, upserts = await _markers_and_upserts(handle)
    assert local == [
        ("apply_writes", "ensure PodGroup · write status Pending"),
        ("apply_writes", "create 1 pods (version 0) · write status Pending"),
        ("write_job_status", "write status Running"),  # one write: alone, as before
    ]
    # The forwarder's settings say the writes go together, and its start request said Pending.
    assert patches == []
    assert upserts == [[search_attributes.JOB_PHASE.name]]  # Running
    # Every write was carried out, in the order it was decided, with the same input.
    assert [name for name, _ in h.calls.log] == [
        "ensure_pod_group",
        "write_job_status",
        "create_pods",
        "write_job_status",
        "write_job_status",
    ]
    assert [s["status"]["state"]["phase"] for s in h.calls.named("write_job_status")] == [
        "Pending",
        "Pending",
        "Running",
    ]


async def test_each_write_alone_in_a_run_from_before_the_patch(env: WorkflowEnvironment) -> None:
    """The same job on a worker that refuses the patch: a marker per write, as before."""
    async with Harness.running(env, refused=ALONE) as h:
        handle = await _to_running(h, UNTOLD)
        local, patches, upserts = await _markers_and_upserts(handle)
    assert [name for name, _ in local] == [
        "ensure_pod_group",
        "write_job_status",
        "create_pods",
        "write_job_status",
        "write_job_status",
    ]
    assert patches == [] and upserts == [[search_attributes.JOB_PHASE.name]]


async def test_a_run_not_told_asks_the_patch_once(h: Harness) -> None:
    handle = await _to_running(h, UNTOLD)
    local, patches, _ = await _markers_and_upserts(handle)
    assert patches == [writes.ONE_WRITE]
    assert [name for name, _ in local] == ["apply_writes", "apply_writes", "write_job_status"]


async def _wrote(h: Harness, count: int) -> None:
    """Until `count` writes were made and their workflow task is done (polled without queries,
    each of which the test server answers with a workflow task of its own)."""
    while len(h.calls.log) < count:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)


@pytest.mark.parametrize(
    ("phase_at_start", "together", "markers", "upserts"),
    [
        pytest.param(False, False, 5, 2, id="before"),
        pytest.param(True, False, 5, 1, id="first-phase-at-start"),
        pytest.param(False, True, 3, 2, id="one-write-per-decision"),
        pytest.param(True, True, 3, 1, id="both"),
    ],
)
async def test_a_one_pod_jobs_history_to_running(
    env: WorkflowEnvironment, phase_at_start: bool, together: bool, markers: int, upserts: int
) -> None:
    """The events to Running of a one-pod job the forwarder starts (gate: Inqueue first): 20
    before; its first phase in the start request saves the Pending upsert, one local activity
    per decision two markers; 17 with both."""
    async with Harness.running(env, refused=frozenset() if together else ALONE) as h:
        manifest = _one_pod()
        observed = job_signals.JobObserved(job=manifest)
        given = signaller.start_attributes(JobRef(namespace="test", name="one"), observed)
        if not phase_at_start:
            given = TypedSearchAttributes(
                [p for p in given if p.key.name != search_attributes.JOB_PHASE.name]
            )
        settings = FORWARDER.model_copy(update={"one_write_per_decision": together})
        handle = await h.submit(manifest, settings=settings, attributes=given)
        await _wrote(h, 2)  # ensure PodGroup, write status Pending
        inqueue = job_signals.PodGroupObserved(name=f"one-{UID}", phase="Inqueue")
        await handle.signal(job_signals.SIGNAL_POD_GROUP_OBSERVED, inqueue)
        await _wrote(h, 4)  # create pods, write status Pending
        await pods_changed(handle, pod("one", "worker", 0))
        await _wrote(h, 5)  # write status Running
        events = [e async for e in handle.fetch_history_events()]
    kinds = Counter(EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in events)
    assert kinds["MARKER_RECORDED"] == markers
    assert kinds["UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"] == upserts
    # Started, three signals, a workflow task for each (scheduled, started, completed).
    assert len(events) == 1 + 3 + 3 * 3 + markers + upserts, kinds


# -- failures come back as when each write went alone ------------------------------------------


def _permanent() -> Exception:
    return ApplicationError(
        "create podgroup test/one-uid-1: 422 Invalid: spec.minMember",
        type="Invalid",
        non_retryable=True,
    )


def _transient() -> Exception:
    # The retry comes at once, not after the write policy's back-off (a workflow timer for a
    # local activity, `activity_call.LOCAL_RETRY_THRESHOLD`): the 15 attempts are quick.
    return ApplicationError(
        "create pod: 500 Internal Server Error",
        type="KubernetesError",
        next_retry_delay=timedelta(milliseconds=1),
    )


def _gone() -> Exception:
    return ApplicationError(
        "namespace test is being terminated", type="NamespaceGone", non_retryable=True
    )


def _story(calls: Calls, left_out: str = "") -> list[tuple[str, ...]]:
    """What was written, as comparable across runs (statuses by phase, Events by text)."""
    out: list[tuple[str, ...]] = []
    for name, arg in calls.log:
        if name == left_out:
            continue
        if name == "write_job_status":
            out.append((name, arg["status"]["state"]["phase"]))
        elif name == "record_event":
            out.append((name, arg["reason"], arg["message"]))
        elif name in ("create_pods", "delete_pods"):
            out.append((name, json.dumps(arg.pods if name == "create_pods" else arg.names)))
        else:
            out.append((name,))
    return out


async def _settle(h: Harness, handle: WorkflowHandle[Any, Any]) -> job_signals.JobView:
    """Once nothing more is written for a while and every input was carried out."""
    seen = -1
    while seen != len(h.calls.log):
        seen = len(h.calls.log)
        await asyncio.sleep(0.5)
    return await until(handle, lambda v: True, "settled")


async def _failing(
    env: WorkflowEnvironment, refused: frozenset[str], activity: str, error: Callable[[], Exception]
) -> tuple[Calls, job_signals.JobView | None]:
    """A two-pod job without the gate (one decision: ensure PodGroup, create pods, write
    status Pending) whose `activity` fails with `error` every time."""
    async with Harness.running(env, refused=refused) as h:
        h.calls.failing[activity] = error
        manifest = make_job("one", namespace="test").task("worker", replicas=2).manifest()
        handle = await h.submit(
            manifest, settings=UNTOLD.model_copy(update={"scheduler_override": "default-scheduler"})
        )
        if error is _gone:
            await handle.result()  # the namespace went: the workflow ends, nothing more written
            return h.calls, None
        return h.calls, await _settle(h, handle)


@pytest.mark.parametrize(
    ("activity", "error"),
    [
        pytest.param("ensure_pod_group", _permanent, id="permanent-first-step"),
        pytest.param("create_pods", _permanent, id="permanent-middle-step"),
        pytest.param("ensure_pod_group", _transient, id="attempts-run-out-first-step"),
        pytest.param("ensure_pod_group", _gone, id="namespace-gone-first-step"),
        pytest.param("create_pods", _gone, id="namespace-gone-middle-step"),
    ],
)
async def test_a_failed_write_comes_back_as_when_each_went_alone(
    env: WorkflowEnvironment, activity: str, error: Callable[[], Exception]
) -> None:
    together, end = await _failing(env, frozenset(), activity, error)
    alone, end_alone = await _failing(env, ALONE, activity, error)
    assert _story(together) == _story(alone)
    assert end == end_alone
    if error is not _gone:
        # Handed to the core, which warns and terminates the job (Volcano's out-of-sync).
        failed = next(s for s in _story(together) if s[0] == "record_event")
        assert failed[1:] == (
            "ActionFailed",
            f"{_effect(activity)} failed, retries exhausted: " + str(error()),
        )
        assert end is not None and end.phase in ("Terminating", "Terminated")


def _effect(activity: str) -> str:
    return {"ensure_pod_group": "EnsurePodGroup", "create_pods": "CreatePods"}[activity]


async def test_attempts_run_out_at_a_later_step_then_the_rest_is_written(
    env: WorkflowEnvironment,
) -> None:
    """The pods' creation fails until its attempts run out: the batch's retries ensure the
    PodGroup again each time (idempotent), that failure alone comes back to the core, and
    the status write after it is still made, as when each went alone."""
    together, end = await _failing(env, frozenset(), "create_pods", _transient)
    alone, end_alone = await _failing(env, ALONE, "create_pods", _transient)
    assert _story(together, left_out="ensure_pod_group") == _story(alone, "ensure_pod_group")
    assert end == end_alone
    assert len(alone.named("create_pods")) == len(together.named("create_pods")) == 15
    assert len(together.named("ensure_pod_group")) == 15  # every attempt of the batch
    assert len(alone.named("ensure_pod_group")) == 1
    story = _story(together, left_out="ensure_pod_group")
    assert story[15] == ("write_job_status", "Pending"), story  # the step after the failed one
