"""Caldera's image run for real: the worker and the forwarder from `localhost/caldera:0.1.0`
(built by deploy/image/build.sh), not from this checkout, on the e2e stack; a Volcano Job goes
from created to Completed through them. Skips with its reason where buildah or the image is
missing: every behaviour here is also covered by the local processes' e2e tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from cli.devstack import caldera_processes as caldera
from cli.devstack import image, processes
from cli.devstack.processes import Process
from tests.builders import make_job
from tests.e2e.conftest import E2EStack, eventually

IMAGE = os.environ.get("CALDERA_E2E_IMAGE", image.DEFAULT_IMAGE)


@pytest.fixture
def from_image(e2e_stack: E2EStack) -> Iterator[list[Process]]:
    why = image.unavailable(IMAGE)
    if why is not None:
        pytest.skip(f"image: {why}")
    if e2e_stack.workdir is None:
        pytest.skip("a reused dev stack runs its own worker and forwarder")
    token = uuid.uuid4().hex[:6]
    logs = e2e_stack.workdir / "logs"
    started: list[Process] = []
    names = []
    try:
        for role, command, ready in (
            ("worker", image.WORKER, "worker started"),
            ("forwarder", image.FORWARDER, "leader elected"),
        ):
            name = f"caldera-e2e-{role}-{token}"
            names.append(image.container(IMAGE, name))
            address = f"--metrics-address=127.0.0.1:{processes.free_port()}"
            started.append(
                image.start(
                    name,
                    (*command, address),
                    ready,
                    e2e_stack.kubeconfig,
                    e2e_stack.temporal_address,
                    logs,
                    caldera.DEFAULT_SCHEDULER_OVERRIDE,
                )
            )
        yield started
    finally:
        for p in reversed(started):
            processes.stop(p)
        for name in names:
            image.remove(name)


def test_the_image_runs_a_job_to_completion(
    api: client.ApiClient, namespace: str, from_image: list[Process]
) -> None:
    template = {
        "metadata": {"annotations": {"sim.caldera.dev/run-seconds": "1"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    doc = make_job("imaged", namespace=namespace).task("w", replicas=2, template=template)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", doc.manifest()
    )

    def phase() -> str:
        job = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", "imaged"
        )
        return str((job.get("status") or {}).get("state", {}).get("phase", ""))

    eventually(lambda: phase() == "Completed", 120, "the job Completed by the image's worker")
    worker_log = processes.log_text(from_image[0])
    assert "/opt/python" in worker_log or "worker started" in worker_log
    assert f"job={namespace}/imaged" in worker_log  # this worker, in the image, ran the job
