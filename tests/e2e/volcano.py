"""Shared by the e2e modules that run real Volcano Jobs and Queues: simulated pod templates,
reading the objects back (PodGroups too), and waiting for a job's phase or a queue's state.
The `queue` fixture (a Queue of the test's own) is in conftest.py."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.e2e.conftest import eventually

JOBS = ("batch.volcano.sh", "v1alpha1")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
POD_GROUPS = ("scheduling.volcano.sh", "v1beta1")
RUN = "sim.caldera.dev/run-seconds"
EXIT = "sim.caldera.dev/exit-code"


def template(annotations: dict[str, str]) -> dict[str, Any]:
    """A one-container pod template whose kwok run is set by the `sim.caldera.dev` annotations."""
    return {
        "metadata": {"annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


def job(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    got: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        *JOBS, ns, "jobs", name
    )
    return got


def phase_becomes(
    api: client.ApiClient, ns: str, name: str, phase: str, timeout: float = 60
) -> dict[str, Any]:
    """The job once its status says `phase`; the failure lists every phase seen on the way."""
    seen: list[str] = []

    def probe() -> dict[str, Any] | None:
        current_job = job(api, ns, name)
        current = (current_job.get("status") or {}).get("state", {}).get("phase", "")
        if not seen or seen[-1] != current:
            seen.append(current)
        return current_job if current == phase else None

    try:
        return eventually(probe, timeout, f"job {ns}/{name} {phase}")
    except AssertionError as e:
        raise AssertionError(f"{e}; phases seen {seen}") from None


def pod_group(api: client.ApiClient, ns: str, name: str) -> dict[str, Any] | None:
    """None while there is none: a test waits for the controller to make it."""
    try:
        got: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
            *POD_GROUPS, ns, "podgroups", name
        )
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise
    return got


def queue(api: client.ApiClient, name: str) -> dict[str, Any]:
    got: dict[str, Any] = client.CustomObjectsApi(api).get_cluster_custom_object(*QUEUES, name)
    return got


def state_becomes(
    api: client.ApiClient, name: str, *states: str, timeout: float = 60
) -> dict[str, Any]:
    """The queue once its status says one of `states`."""

    def probe() -> dict[str, Any] | None:
        current = queue(api, name)
        return current if (current.get("status") or {}).get("state") in states else None

    return eventually(probe, timeout, f"queue {name} {states}")
