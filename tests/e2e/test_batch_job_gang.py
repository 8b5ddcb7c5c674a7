"""A plain batch/v1 Job managed by Caldera whose pods name Caldera's gang scheduler: its
PodGroup, sessions in the SchedulerWorkflow, binding by the BatchJobWorkflow."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from models import keys
from tests.e2e import test_batch_job as plain
from tests.e2e.conftest import E2EStack

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler runs (schedulerName: volcano)


async def _activities(stack: E2EStack, ns: str, name: str) -> list[str]:
    temporal = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    handle = temporal.get_workflow_handle(keys.batch_job_workflow_id(ns, name))
    ran = []
    async for e in handle.fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            ran.append(e.activity_task_scheduled_event_attributes.activity_type.name)
        elif e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = e.marker_recorded_event_attributes
            if marker.marker_name == "core_local_activity":  # short writes run locally
                (data,) = marker.details["data"].payloads
                ran.append(json.loads(data.data)["activity_type"])
    return ran


async def test_pods_naming_calderas_scheduler_are_placed_by_it(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    manifest = plain._manifest("gang", {plain.RUN: "1"}, completions=3, parallelism=3)
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    spec["schedulerName"] = "volcano"
    plain._create(api, namespace, copy.deepcopy(manifest))
    job = plain._finished(api, namespace, "gang", "Complete", timeout=90)
    assert job["status"]["succeeded"] == 3
    group = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        namespace,
        "podgroups",
        f"podgroup-{job['metadata']['uid']}",
    )
    assert group["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    pods = plain._pods(api, namespace, "gang")
    assert len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods)
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {
        group["metadata"]["name"]
    }
    # kube-scheduler leaves pods of another schedulerName alone: a node means Caldera bound it.
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    ran = await _activities(e2e_stack, namespace, "gang")
    assert ran.index("ensure_batch_pod_group") < ran.index("create_job_pods")
    assert "bind_placements" not in ran  # the scheduler bound what it placed
