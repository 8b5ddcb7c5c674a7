"""Queues end to end: QueueWorkflows driven by the forwarder, closing and re-opening a
hierarchy with a job running in it, through a Command CR and through Temporal updates, and
Jobs refused at admission while their queue is not Open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from cli.devstack import caldera_processes as caldera
from cli.devstack.processes import Process
from models import keys
from models.scheduling import CLOSED_BY_PARENT
from models.signals import queue as queue_signals
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.volcano import QUEUES as Q

pytestmark = pytest.mark.usefixtures("controllers")


def _temporal_cli(stack: E2EStack, *args: str) -> str:
    binary = str(Path(sys.executable).with_name("temporal"))
    done = subprocess.run(
        [binary, *args, "--address", stack.temporal_address],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _queue(name: str, **spec: object) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, **spec},
    }


@pytest.fixture
def family(api: client.ApiClient) -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    parent, child = f"qp-{suffix}", f"qc-{suffix}"
    custom = client.CustomObjectsApi(api)
    for name, up in ((parent, "root"), (child, parent)):
        custom.create_cluster_custom_object(*Q, _queue(name, parent=up))
    volcano.state_becomes(api, parent, "Open")
    volcano.state_becomes(api, child, "Open")
    yield parent, child
    for name in (child, parent):
        try:
            custom.delete_cluster_custom_object(*Q, name)
        except client.ApiException as e:
            if e.status != 404:
                raise


def _job(name: str, queue: str, seconds: str | None) -> dict[str, Any]:
    annotations = {"sim.caldera.dev/run-seconds": seconds} if seconds else {}
    template = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    return make_job(name).task("w", replicas=1, template=template).spec(queue=queue).manifest()


def _submit(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> None:
    manifest["metadata"]["namespace"] = ns
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", manifest
    )


def _job_phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def test_closing_parent_with_running_child_job_then_reopening_by_command(
    api: client.ApiClient, namespace: str, family: tuple[str, str]
) -> None:
    parent, child = family
    _submit(api, namespace, _job("long", child, "8"))
    eventually(lambda: _job_phase(api, namespace, "long") == "Running", 60, "job Running")
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": f"{parent}-close"},
        "action": "CloseQueue",
        "target": {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "name": parent,
            "uid": volcano.queue(api, parent)["metadata"]["uid"],
        },
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", "default", "commands", command
    )
    volcano.state_becomes(api, parent, "Closing")
    marked = volcano.state_becomes(api, child, "Closing", "Closed")
    assert marked["metadata"]["annotations"][CLOSED_BY_PARENT] == "true"
    # A closing queue takes no new job; the running one runs to its end.
    with pytest.raises(client.ApiException) as err:
        _submit(api, namespace, _job("late", child, "1"))
    message = json.loads(err.value.body)["message"]
    assert child in message and "Clos" in message, message
    eventually(
        lambda: _job_phase(api, namespace, "long") == "Completed", 60, "running job completes"
    )
    volcano.state_becomes(api, child, "Closed")
    volcano.state_becomes(api, parent, "Closed")
    reopen = {**command, "metadata": {"name": f"{parent}-open"}, "action": "OpenQueue"}
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", "default", "commands", reopen
    )
    volcano.state_becomes(api, parent, "Open")
    reopened = volcano.state_becomes(api, child, "Open")
    assert reopened["metadata"]["annotations"][CLOSED_BY_PARENT] == "false"


async def test_temporal_updates_close_and_open_and_refuse_child_under_closed_parent(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, family: tuple[str, str]
) -> None:
    parent, child = family
    temporal = await Client.connect(
        e2e_stack.temporal_address, data_converter=pydantic_data_converter
    )
    p = temporal.get_workflow_handle(keys.queue_workflow_id(parent))
    c = temporal.get_workflow_handle(keys.queue_workflow_id(child))
    result = await c.execute_update(
        "close",
        queue_signals.QueueCommand(reason="test"),
        result_type=queue_signals.QueueCommandResult,
    )
    assert (result.state_before, result.state_after) == ("Open", "Closed")
    volcano.state_becomes(api, child, "Closed")
    # The same update from the `temporal` CLI, as an operator types it.
    closed = _temporal_cli(
        e2e_stack,
        "workflow",
        "update",
        "execute",
        "-w",
        keys.queue_workflow_id(parent),
        "--name",
        "close",
        "--input",
        '{"reason":"from the CLI"}',
    )
    assert "stateAfter:Closed" in closed, closed
    volcano.state_becomes(api, parent, "Closed")
    with pytest.raises(Exception) as err:
        await c.execute_update(
            "open", queue_signals.QueueCommand(), result_type=queue_signals.QueueCommandResult
        )
    assert f"open the parent queue {parent} first" in str(getattr(err.value, "cause", err.value))
    await p.execute_update(
        "open", queue_signals.QueueCommand(), result_type=queue_signals.QueueCommandResult
    )
    volcano.state_becomes(api, parent, "Open")
    assert volcano.queue(api, child)["status"]["state"] == "Closed"  # closed by hand: stays closed
    await c.execute_update(
        "open", queue_signals.QueueCommand(), result_type=queue_signals.QueueCommandResult
    )
    volcano.state_becomes(api, child, "Open")
    _submit(api, namespace, _job("ok", child, None))


def test_a_queue_created_again_while_caldera_was_down_is_written_open(
    api: client.ApiClient, e2e_stack: E2EStack, controllers: list[Process]
) -> None:
    """Regression: the queue's workflow believed it had written Open already (to the object
    of the same name it knew), so the new object's status.state stayed empty until a PodGroup
    arrived."""
    name = f"qr-{uuid.uuid4().hex[:6]}"
    custom = client.CustomObjectsApi(api)
    body = _queue(name)
    custom.create_cluster_custom_object(*Q, body)
    first = volcano.state_becomes(api, name, "Open")
    described = json.loads(
        _temporal_cli(
            e2e_stack, "workflow", "describe", "-w", keys.queue_workflow_id(name), "-o", "json"
        )
    )
    # Its own task queue: its tasks never wait behind a backlog of the jobs' after a restart.
    assert described["executionConfig"]["taskQueue"]["name"] == "caldera-queues"
    down = [p for p in controllers if p.name in ("forwarder", "worker")]
    for p in down:
        os.kill(p.pid, signal.SIGKILL)
    custom.delete_cluster_custom_object(*Q, name)

    def gone() -> bool:
        try:
            custom.get_cluster_custom_object(*Q, name)
        except client.ApiException as e:
            if e.status == 404:
                return True
            raise
        return False

    eventually(gone, 30, f"queue {name} deleted")
    custom.create_cluster_custom_object(*Q, body)
    assert e2e_stack.workdir is not None
    logs = e2e_stack.workdir / "logs"
    override = caldera.DEFAULT_SCHEDULER_OVERRIDE
    for p in down:
        start = caldera.start_forwarder if p.name == "forwarder" else caldera.start_worker
        controllers[controllers.index(p)] = start(
            e2e_stack.kubeconfig, e2e_stack.temporal_address, logs, override
        )
    try:
        again = volcano.state_becomes(api, name, "Open", timeout=120)
        assert again["metadata"]["uid"] != first["metadata"]["uid"]
    finally:
        custom.delete_cluster_custom_object(*Q, name)


def test_a_job_whose_queue_was_deleted_is_terminated_when_it_needs_its_pod_group_again(
    api: client.ApiClient, namespace: str
) -> None:
    """Volcano's outcome for a sync that keeps failing because the job's queue is gone: its
    requeues run out (about 164 s) and the job is Terminated. Here the queue goes while the
    job runs, then its PodGroup: the new one is refused for the queue. (A restarted job takes
    more rounds: a failure while Restarting only moves it to Pending, whose sync fails again,
    as in Volcano.)"""
    name = f"qv-{uuid.uuid4().hex[:6]}"
    custom = client.CustomObjectsApi(api)
    body = _queue(name)
    custom.create_cluster_custom_object(*Q, body)
    volcano.state_becomes(api, name, "Open")
    _submit(api, namespace, _job("orphan", name, None))
    running = volcano.phase_becomes(api, namespace, "orphan", "Running")
    custom.delete_cluster_custom_object(*Q, name)
    group = f"orphan-{running['metadata']['uid']}"
    custom.delete_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups", group
    )
    terminated = volcano.phase_becomes(api, namespace, "orphan", "Terminated", timeout=300)
    assert terminated["status"].get("retryCount", 0) == 0  # no restart: terminated outright
    events = client.CoreV1Api(api).list_namespaced_event(namespace).items
    failed = [e.message or "" for e in events if e.reason == "ActionFailed"]
    assert any(f'queue "{name}" does not exist' in m for m in failed), failed
