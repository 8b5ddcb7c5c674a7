"""A namespace that is going: what the real apiserver answers a write into it, and how
activities read it (not an error to retry, the namespace's end: `NamespaceGone`); and the
forwarder's one notice for it, which ends its Jobs' workflows at once."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kubernetes import client
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

from activities import errors
from cli.devstack.processes import Process
from models import batchv1, keys
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.volcano import JOBS, RUN

HOLD = "caldera.dev/e2e-hold"


def test_a_create_in_a_namespace_being_terminated_ends_the_work(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    ns = f"e2e-going-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    # A finalizer keeps the namespace Terminating until this test lets it go.
    held = {"metadata": {"name": "hold", "finalizers": [HOLD]}}
    core.create_namespaced_config_map(ns, held)  # type: ignore[arg-type]
    try:
        core.delete_namespace(ns)
        eventually(lambda: core.read_namespace(ns).status.phase == "Terminating", 30, "Terminating")
        pod = {
            "metadata": {"name": "late"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        with pytest.raises(ApplicationError) as failed, errors.kube_call(f"create pod {ns}/late"):
            core.create_namespaced_pod(ns, pod)  # type: ignore[arg-type]
        assert failed.value.type == "NamespaceGone" and failed.value.non_retryable
        assert "being terminated" in failed.value.message
    finally:
        core.patch_namespaced_config_map("hold", ns, {"metadata": {"finalizers": None}})


async def test_deleting_a_namespace_ends_its_jobs_workflows_before_the_jobs_go(
    api: client.ApiClient, e2e_stack: E2EStack, controllers: list[Process]
) -> None:
    """One notice for the namespace: its Job's workflow ends as soon as the namespace starts
    going, even while the Job itself is still there (held here by a finalizer, so its own
    DELETED event cannot be what told the workflow)."""
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ns = f"e2e-going-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    manifest = (
        make_job("held", namespace=ns)
        .task("w", replicas=1, template=volcano.template({RUN: "600"}))
        .manifest()
    )
    manifest["metadata"]["finalizers"] = [HOLD]
    custom.create_namespaced_custom_object(*JOBS, ns, "jobs", manifest)
    try:
        volcano.phase_becomes(api, ns, "held", "Running")
        temporal = await Client.connect(
            e2e_stack.temporal_address, data_converter=pydantic_data_converter
        )
        handle = temporal.get_workflow_handle(keys.job_workflow_id(ns, "held"))
        core.delete_namespace(ns)
        deadline = time.monotonic() + 60
        status = (await handle.describe()).status
        while time.monotonic() < deadline and (status is None or status.name != "COMPLETED"):
            await asyncio.sleep(0.2)
            status = (await handle.describe()).status
        assert status is not None and status.name == "COMPLETED"
        # The Job is still there (the namespace controller may not even have reached it).
        custom.get_namespaced_custom_object(*JOBS, ns, "jobs", "held")
    finally:
        custom.patch_namespaced_custom_object(
            *JOBS, ns, "jobs", "held", {"metadata": {"finalizers": None}}
        )


def test_a_namespace_with_a_running_batch_job_goes_whole(
    api: client.ApiClient, controllers: list[Process]
) -> None:
    """Regression (CI rehearsal): a Caldera-run batch/v1 Job's pods carry the job-tracking
    finalizer, which its workflow removes as they terminate; told early of its namespace's
    deletion, the workflow ended first and the namespace stayed Terminating for good (its pods
    held their nodes' room from every later test)."""
    core = client.CoreV1Api(api)
    ns = f"e2e-going-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    template = {
        "metadata": {"annotations": {RUN: "600"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"template": template, "managedBy": batchv1.CONTROLLER_NAME, "parallelism": 2},
    }
    client.BatchV1Api(api).create_namespaced_job(ns, job)  # type: ignore[arg-type]

    def running() -> bool:
        pods = core.list_namespaced_pod(ns).items
        return len(pods) == 2 and all(p.status.phase == "Running" for p in pods)

    eventually(running, 60, "the Job's two pods Running")
    core.delete_namespace(ns)

    def gone() -> bool:
        try:
            core.read_namespace(ns)
        except client.ApiException as e:
            return e.status == 404
        return False

    eventually(gone, 120, f"namespace {ns} gone")
