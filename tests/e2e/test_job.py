"""Volcano Jobs submitted with the Kubernetes API run as JobWorkflows end to end: real
apiserver, kube-scheduler, kwok pods, Temporal dev server, Caldera's worker and forwarder."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from typing import Any

import pytest
from kubernetes import client
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter

from cli.devstack import caldera_processes as caldera
from cli.devstack.processes import Process
from models import keys, labels
from models.signals import job as job_signals
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.volcano import EXIT, JOBS, RUN

pytestmark = pytest.mark.usefixtures("controllers")


def _submit(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["metadata"]["namespace"] = ns
    created: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        *JOBS, ns, "jobs", manifest
    )
    return created


async def _temporal(stack: E2EStack) -> Client:
    return await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)


def test_job_runs_to_completion_with_volcano_pods_and_status(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = (
        make_job("hello")
        .task("master", replicas=1, template=volcano.template({RUN: "2"}))
        .task("worker", replicas=2, template=volcano.template({RUN: "2"}))
        .spec(plugins={"svc": [], "env": []})
        .manifest()
    )
    created = _submit(api, namespace, manifest)
    running = volcano.phase_becomes(api, namespace, "hello", "Running")
    assert running["status"]["minAvailable"] == 3
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    assert sorted(p.metadata.name for p in pods) == [
        "hello-master-0",
        "hello-worker-0",
        "hello-worker-1",
    ]
    worker = next(p for p in pods if p.metadata.name == "hello-worker-1")
    assert worker.metadata.labels[labels.TASK_SPEC] == "worker"
    assert worker.metadata.annotations[labels.GROUP_NAME] == f"hello-{created['metadata']['uid']}"
    assert worker.metadata.owner_references[0].uid == created["metadata"]["uid"]
    env = {e.name: e.value for e in worker.spec.containers[0].env}
    assert env["VC_TASK_INDEX"] == "1"  # env plugin
    assert worker.spec.hostname == "hello-worker-1" and worker.spec.subdomain == "hello"
    client.CoreV1Api(api).read_namespaced_service("hello", namespace)  # svc plugin
    done = volcano.phase_becomes(api, namespace, "hello", "Completed")
    status = done["status"]
    assert status["succeeded"] == 3
    assert status["taskStatusCount"]["worker"]["phase"]["Succeeded"] == 2
    assert [c["status"] for c in status["conditions"]][-1] == "Completed"
    assert status["state"]["reason"] == "Completed"


def test_pod_failure_policy_restarts_until_max_retry(api: client.ApiClient, namespace: str) -> None:
    manifest = (
        make_job("flaky")
        .task("worker", replicas=2, template=volcano.template({RUN: "1", EXIT: "3"}))
        .spec(maxRetry=2, policies=[{"exitCode": 3, "action": "RestartJob"}])
        .manifest()
    )
    _submit(api, namespace, manifest)
    failed = volcano.phase_becomes(api, namespace, "flaky", "Failed", timeout=120)
    status = failed["status"]
    assert status["retryCount"] == 2
    assert status["version"] >= 1
    assert status["state"]["reason"] == "MaxRetryExceeded"
    events = client.CoreV1Api(api).list_namespaced_event(namespace).items
    messages = [e.message for e in events if e.involved_object.name == "flaky"]
    assert any("Start to execute action RestartJob: PodFailed" in m for m in messages), messages


async def test_command_cr_and_temporal_update_abort_and_resume(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    manifest = make_job("svc").task("server", replicas=2, template=volcano.template({})).manifest()
    created = _submit(api, namespace, manifest)
    volcano.phase_becomes(api, namespace, "svc", "Running")
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "svc-abortjob-1"},
        "action": "AbortJob",
        "target": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "svc",
            "uid": created["metadata"]["uid"],
            "controller": True,
        },
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", namespace, "commands", command
    )
    volcano.phase_becomes(api, namespace, "svc", "Aborted")
    commands = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", namespace, "commands"
    )
    assert commands["items"] == []  # consumed once
    temporal = await _temporal(e2e_stack)
    handle = temporal.get_workflow_handle(keys.job_workflow_id(namespace, "svc"))
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await handle.execute_update(
            "abort", job_signals.JobCommand(), result_type=job_signals.JobCommandResult
        )
    assert "AbortJob does not apply to a finished job" in str(err.value.cause)
    result = await handle.execute_update(
        "resume", job_signals.JobCommand(reason="back"), result_type=job_signals.JobCommandResult
    )
    assert (result.phase_before, result.phase_after) == ("Aborted", "Restarting")
    running = volcano.phase_becomes(api, namespace, "svc", "Running")
    assert running["status"]["retryCount"] == 1


async def test_ttl_deletes_job_and_same_name_gets_a_fresh_run(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    manifest = (
        make_job("short")
        .task("w", replicas=1, template=volcano.template({RUN: "1"}))
        .spec(ttlSecondsAfterFinished=2)
        .manifest()
    )
    _submit(api, namespace, json.loads(json.dumps(manifest)))
    custom = client.CustomObjectsApi(api)
    phases: set[str] = set()

    def gone() -> bool:
        """Gone; its phases are read while it exists (it lives 2 s after finishing)."""
        jobs = custom.list_namespaced_custom_object(*JOBS, namespace, "jobs")["items"]
        short = [j for j in jobs if j["metadata"]["name"] == "short"]
        phases.update((j.get("status") or {}).get("state", {}).get("phase", "") for j in short)
        return not short

    eventually(gone, 90, "job deleted by its TTL")
    assert "Completed" in phases  # seen Completed before the TTL removed it
    temporal = await _temporal(e2e_stack)
    wid = keys.job_workflow_id(namespace, "short")
    deadline = time.monotonic() + 30
    first = await temporal.get_workflow_handle(wid).describe()
    while time.monotonic() < deadline and (
        first.status is None or first.status.name != "COMPLETED"
    ):
        await asyncio.sleep(0.2)
        first = await temporal.get_workflow_handle(wid).describe()
    assert first.status is not None and first.status.name == "COMPLETED"
    again = json.loads(json.dumps(manifest))
    again["spec"]["ttlSecondsAfterFinished"] = 600
    _submit(api, namespace, again)
    volcano.phase_becomes(api, namespace, "short", "Completed")
    second = await temporal.get_workflow_handle(wid).describe()
    assert second.run_id != first.run_id


def test_a_pod_deleted_while_no_forwarder_leads_reaches_its_job(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, controllers: list[Process]
) -> None:
    """Regression (chaos soak): a pod deleted between two forwarder leaders was in no watch and
    no list, so its Job never heard of it (one killed by a restart waited in Restarting for
    ever). The new leader's list now tells every Job which of its pods exist."""
    manifest = (
        make_job("lone")
        .task("w", replicas=1, template=volcano.template({}))
        .spec(policies=[{"event": "PodEvicted", "action": "AbortJob"}])
        .manifest()
    )
    _submit(api, namespace, manifest)
    volcano.phase_becomes(api, namespace, "lone", "Running")
    forwarder = next(p for p in controllers if p.name == "forwarder")
    os.kill(forwarder.pid, signal.SIGKILL)
    core = client.CoreV1Api(api)
    core.delete_namespaced_pod("lone-w-0", namespace, grace_period_seconds=0)

    def gone() -> bool:
        return not [p for p in core.list_namespaced_pod(namespace).items]

    eventually(gone, 30, "the pod deleted")
    assert e2e_stack.workdir is not None
    controllers[controllers.index(forwarder)] = caldera.start_forwarder(
        e2e_stack.kubeconfig,
        e2e_stack.temporal_address,
        e2e_stack.workdir / "logs",
        caldera.DEFAULT_SCHEDULER_OVERRIDE,
    )
    volcano.phase_becomes(api, namespace, "lone", "Aborted", timeout=90)
    events = core.list_namespaced_event(namespace).items
    messages = [e.message for e in events if e.involved_object.name == "lone"]
    assert any("AbortJob: PodEvicted" in m for m in messages), messages
