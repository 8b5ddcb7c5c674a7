"""Several workers on one task queue: they share the jobs' workflow tasks, the scheduler still
runs one session at a time (a session's binding may run beside the next session: that is by
design, the session's placements are assumed first), its placements overbook no node, and a
worker killed mid-run loses nothing: every job completes with exactly its pods, on the worker
that is left.

Nodes: the session's 3 kwok nodes of 8 CPUs (24 in all)."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from collections import Counter
from datetime import UTC, datetime

import pytest
from kubernetes import client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from cli.devstack import caldera_processes as caldera
from cli.devstack import processes
from cli.devstack.processes import Process
from tests.builders import make_job
from tests.e2e.conftest import NODES, E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler: its sessions are the singleton checked
JOBS = 16  # enough first workflow tasks that both workers get some
REPLICAS = 2
CPU = 1  # 32 CPUs asked of 24: gangs wait for room, so placements must honour each other
SCHEDULER_WORKFLOW = "scheduler/volcano"


def _submit(api: client.ApiClient, ns: str, name: str) -> None:
    template = {
        "metadata": {"annotations": {"sim.caldera.dev/run-seconds": "6"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": str(CPU)}}}
            ],
        },
    }
    doc = make_job(name, namespace=ns).task("w", replicas=REPLICAS, template=template)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc.manifest()
    )


def _phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def _phases(api: client.ApiClient, ns: str) -> Counter[str]:
    return Counter(_phase(api, ns, f"w{i}") for i in range(JOBS))


def _jobs_in_log(p: Process) -> set[str]:
    """The jobs whose workflow logged a phase change in this worker (since it started)."""
    found = set()
    for line in processes.log_text(p).splitlines():
        if "phase changed" in line and "job=" in line:
            found.add(line.split("job=", 1)[1].split()[0])
    return found


async def _session_intervals(address: str, since: datetime) -> list[tuple[datetime, datetime]]:
    """Start and close of every schedule_session attempt the scheduler ran since `since`."""
    temporal = await Client.connect(address)
    handle = temporal.get_workflow_handle(SCHEDULER_WORKFLOW)
    sessions: set[int] = set()  # scheduled event ids of schedule_session (binds overlap them)
    started: dict[int, datetime] = {}
    closed: list[tuple[datetime, datetime]] = []
    async for event in handle.fetch_history_events():
        at = event.event_time.ToDatetime()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == "schedule_session":
                sessions.add(event.event_id)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attempt = event.activity_task_started_event_attributes
            if attempt.scheduled_event_id in sessions:
                started[attempt.scheduled_event_id] = at
        elif event.event_type in (
            EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
        ):
            attrs = (
                event.activity_task_completed_event_attributes
                if event.HasField("activity_task_completed_event_attributes")
                else event.activity_task_failed_event_attributes
                if event.HasField("activity_task_failed_event_attributes")
                else event.activity_task_timed_out_event_attributes
            )
            begun = started.pop(attrs.scheduled_event_id, None)
            if begun is not None and begun >= since:
                closed.append((begun, at))
    return closed


def test_two_workers_share_jobs_and_one_killed_mid_run_loses_nothing(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, controllers: list[Process]
) -> None:
    assert e2e_stack.workdir is not None
    since = datetime.now(UTC).replace(tzinfo=None)  # event times read as naive UTC
    second = caldera.start_worker(
        e2e_stack.kubeconfig, e2e_stack.temporal_address, e2e_stack.workdir / "logs-2", None
    )
    controllers.append(second)  # stopped with the others, whatever happens here
    first = next(p for p in controllers if p.name == "worker")
    for i in range(JOBS):
        _submit(api, namespace, f"w{i}")
    eventually(
        lambda: _phases(api, namespace)["Running"] >= JOBS // 2, 120, "half the jobs Running"
    )
    # Both workers carried jobs' workflow tasks before one of them goes.
    ran = {p.name + str(p.pid): _jobs_in_log(p) for p in (first, second)}
    assert all(ran.values()), ran
    os.kill(first.pid, signal.SIGKILL)  # no goodbye: its workflows and activities move over

    def completed() -> bool:
        # No node ever holds more running pods than its CPUs, before or after the kill.
        running = Counter(
            p.spec.node_name
            for p in client.CoreV1Api(api).list_namespaced_pod(namespace).items
            if p.status.phase == "Running"
        )
        assert not running or max(running.values()) * CPU <= int(NODES.cpu), running
        return _phases(api, namespace)["Completed"] == JOBS

    eventually(completed, 240, f"all {JOBS} jobs Completed on the worker left")
    pods = [
        p
        for p in client.CoreV1Api(api).list_namespaced_pod(namespace).items
        if p.metadata.labels and p.metadata.labels.get("volcano.sh/job-name")
    ]
    per_job = Counter(p.metadata.labels["volcano.sh/job-name"] for p in pods)
    assert per_job == {f"w{i}": REPLICAS for i in range(JOBS)}, per_job  # none lost or doubled
    assert all(p.status.phase == "Succeeded" for p in pods)
    # One session at a time, across both workers and the kill.
    intervals = sorted(asyncio.run(_session_intervals(e2e_stack.temporal_address, since)))
    assert intervals
    overlapping = [(a, b) for a, b in itertools.pairwise(intervals) if b[0] < a[1]]
    assert overlapping == []
