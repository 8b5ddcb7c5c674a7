"""What the real apiserver answers a write into a namespace that is going, and how activities
read it: not an error to retry, the namespace's end (`NamespaceGone`)."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError

from activities import errors
from tests.e2e.conftest import eventually

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
