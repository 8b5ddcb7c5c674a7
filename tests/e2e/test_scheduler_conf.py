"""The gang scheduler's configuration on the real stack: Volcano's YAML in the stack's
volcano-scheduler.conf, an edit taken by the next session without a restart, and a broken
edit logged while the last good configuration stays in force."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import processes
from scheduling.framework.conf import CALDERA_DEFAULT
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the pods

# Caldera's defaults with binpack in nodeorder's place: binpack alone scores nodes, so a
# gang's pods fill one node before the next.
BINPACK = CALDERA_DEFAULT.replace(
    "  - name: nodeorder\n", "  - name: binpack\n    arguments:\n      binpack.weight: 10\n"
)


def _gang(api: client.ApiClient, namespace: str, name: str) -> set[str]:
    """A two-pod gang of 1 cpu each, run until Running; the nodes its pods were bound to."""
    template: dict[str, Any] = volcano.template({volcano.RUN: "600"})
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    doc = (
        make_job(name, namespace=namespace)
        .task("w", replicas=2, template=template)
        .spec(minAvailable=2, schedulerName="volcano")
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs", doc
    )
    volcano.phase_becomes(api, namespace, name, "Running", timeout=120)
    pods = [
        p
        for p in client.CoreV1Api(api).list_namespaced_pod(namespace).items
        if p.metadata.name.startswith(f"{name}-")
    ]
    assert len(pods) == 2
    return {p.spec.node_name for p in pods}


def test_an_edited_configuration_is_taken_by_the_next_session_and_a_broken_one_is_refused(
    api: client.ApiClient,
    namespace: str,
    scheduler_conf: Path,
    controllers: list[processes.Process],
) -> None:
    assert len(_gang(api, namespace, "spread")) == 2  # the defaults spread a gang out
    scheduler_conf.write_text(BINPACK)
    assert len(_gang(api, namespace, "packed")) == 1  # binpack, without a restart
    scheduler_conf.write_text(BINPACK.replace("name: binpack", "name: binpak"))
    assert len(_gang(api, namespace, "still")) == 1  # the last good configuration holds
    worker = controllers[0]
    eventually(
        lambda: "unknown plugin(s) ['binpak']" in processes.log_text(worker),
        30,
        "the broken configuration's error in the worker's log",
    )
    scheduler_conf.write_text(CALDERA_DEFAULT)
    assert len(_gang(api, namespace, "again")) == 2
