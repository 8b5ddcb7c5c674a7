"""A gang job on K3s and a containerised Temporal server: created, gang-scheduled by Caldera
onto K3s's node, run by its kubelet to completion, its workflow readable in Temporal."""

from __future__ import annotations

import asyncio
import uuid

from kubernetes import client
from temporalio.client import Client

from models import keys
from tests.builders import make_job
from tests.containers.conftest import ContainerStack
from tests.e2e.conftest import eventually


def _phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def test_gang_job_completes_on_k3s(api: client.ApiClient, container_stack: ContainerStack) -> None:
    ns = f"smoke-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    container = {"name": "c", "image": "busybox:1.36", "command": ["true"]}
    template = {
        "spec": {"schedulerName": "volcano", "restartPolicy": "Never", "containers": [container]}
    }
    doc = make_job("smoke", namespace=ns).task("w", replicas=2, template=template)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc.spec(minAvailable=2).manifest()
    )
    eventually(lambda: _phase(api, ns, "smoke") == "Completed", 300, "smoke job Completed")

    async def described() -> str:
        temporal = await Client.connect(container_stack.temporal_address)
        handle = temporal.get_workflow_handle(keys.job_workflow_id(ns, "smoke"))
        status = (await handle.describe()).status
        return status.name if status is not None else ""

    assert asyncio.run(described()) in {"RUNNING", "COMPLETED"}
    client.CoreV1Api(api).delete_namespace(ns)
