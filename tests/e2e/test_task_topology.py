"""The task-topology plugin on the real stack: a Volcano Job's roles placed together or apart.

A Job with roles `ps` (1 pod) and `worker` (2 pods) of 1 CPU each, on the session's 3 kwok nodes
of 8 CPUs, carries the task-topology annotations; the job controller copies them onto its
PodGroup, where the scheduler reads them. With `volcano.sh/task-topology-affinity: ps,worker`
and nodeorder's spreading (which alone puts the three pods on three nodes) the pods land on one
node; with `volcano.sh/task-topology-anti-affinity: ps,worker;worker` and binpack (which alone
packs them onto one node) each lands on a node of its own. Observed as the pods' nodes. A Job
whose annotation names a task it does not have is refused by the webhook, naming it.

Each test writes its own volcano-scheduler.conf (the next session reads it; restored after).
Volcano has no e2e for the plugin; its unit cases are in `tests/unit/scheduling/
test_task_topology.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import pytest
from kubernetes import client

from models import labels
from scheduling.api.taskaffinity import AFFINITY, ANTI_AFFINITY
from scheduling.framework import conf
from tests.builders import make_job
from tests.e2e import sharing
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
_TOPOLOGY: Final = "  - name: task-topology\n    arguments:\n      task-topology.weight: 50\n"
SPREADING: Final = conf.CALDERA_DEFAULT + _TOPOLOGY
PACKING: Final = SPREADING + "  - name: binpack\n    arguments:\n      binpack.weight: 5\n"
ROLES: Final = {"ps": 1, "worker": 2}


def _submit(api: client.ApiClient, ns: str, name: str, annotations: Mapping[str, str]) -> None:
    """Job `name` with ROLES' pods of 1 CPU that run until deleted, and `annotations`."""
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        }
    }
    doc = make_job(name, namespace=ns)
    for role, replicas in ROLES.items():
        doc = doc.task(role, replicas=replicas, template=template)
    manifest = doc.manifest()
    manifest["metadata"]["annotations"] = dict(annotations)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", manifest
    )


def _nodes(api: client.ApiClient, ns: str, job: str) -> dict[str, str] | None:
    """Each pod's node by pod name once every pod of the job has one; None before."""
    pods = client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=f"{labels.JOB_NAME}={job}")
    placed = {p.metadata.name: p.spec.node_name for p in pods.items if p.spec.node_name}
    return placed if len(placed) == sum(ROLES.values()) else None


def _placed(api: client.ApiClient, ns: str, scheduler_conf: Path, text: str, **given: str) -> Any:
    conf.load(text)  # the file the scheduler will read loads
    scheduler_conf.write_text(text)
    eventually(lambda: not sharing.reserving(api, ns), 120, "the cluster to this test alone")
    _submit(api, ns, "tf", given)
    return eventually(lambda: _nodes(api, ns, "tf"), 90, "every pod of tf on a node")


def test_affinity_puts_the_roles_on_one_node(
    api: client.ApiClient, namespace: str, scheduler_conf: Path
) -> None:
    nodes = _placed(api, namespace, scheduler_conf, SPREADING, **{AFFINITY: "ps,worker"})
    assert len(set(nodes.values())) == 1, nodes


def test_anti_affinity_puts_each_pod_on_a_node_of_its_own(
    api: client.ApiClient, namespace: str, scheduler_conf: Path
) -> None:
    nodes = _placed(api, namespace, scheduler_conf, PACKING, **{ANTI_AFFINITY: "ps,worker;worker"})
    assert len(set(nodes.values())) == 3, nodes


def test_a_job_naming_a_task_it_lacks_is_refused(api: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        _submit(api, namespace, "bad", {AFFINITY: "ps,chief"})
    assert err.value.status == 403, err.value.body
    message = json.loads(err.value.body)["message"]
    assert f"metadata.annotations[{AFFINITY}]: task 'chief' is not a task of the job" in message
