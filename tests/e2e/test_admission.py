"""Volcano objects go through the real apiserver: valid ones unchanged, invalid ones refused
with a message that names the field (CRD schema + CEL rules + ValidatingAdmissionPolicy)."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import pytest
from kubernetes import client

from models.scheduling import Queue
from models.vcjob import Job
from tests.builders import make_job

JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


def _valid_job(name: str = "train") -> dict[str, Any]:
    return (
        make_job(name)
        .task("master", replicas=1)
        .task("worker", replicas=2, policies=[{"event": "PodFailed", "action": "RestartTask"}])
        .spec(
            minAvailable=3,
            queue="default",
            schedulerName="volcano",
            maxRetry=3,
            policies=[{"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}],
            plugins={"svc": [], "env": [], "ssh": []},
        )
        .manifest()
    )


def _create_job(api: client.ApiClient, ns: str, doc: dict[str, Any]) -> dict[str, Any]:
    doc = {**doc, "metadata": {**doc["metadata"], "namespace": ns}}
    custom = client.CustomObjectsApi(api)
    created: dict[str, Any] = custom.create_namespaced_custom_object(*JOBS[:2], ns, JOBS[2], doc)
    return created


def _rejection(call: Any) -> str:
    with pytest.raises(client.ApiException) as err:
        call()
    assert err.value.status == 422, err.value.body
    message: str = json.loads(err.value.body)["message"]
    return message


def test_volcano_job_round_trips_unchanged(api: client.ApiClient, namespace: str) -> None:
    sent = _valid_job()
    got = _create_job(api, namespace, sent)
    assert got["spec"] == sent["spec"]
    # The model reads what the apiserver returns and writes it back byte for byte.
    assert Job.model_validate(got).dump() == got


def test_queue_round_trips_unchanged(api: client.ApiClient) -> None:
    name = f"q-{uuid.uuid4().hex[:8]}"
    sent = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {
            "weight": 3,
            "parent": "root",
            "reclaimable": False,
            "capability": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": 2},
            "guarantee": {"resource": {"cpu": "1"}},
        },
    }
    custom = client.CustomObjectsApi(api)
    got = custom.create_cluster_custom_object(*QUEUES[:2], QUEUES[2], sent)
    try:
        assert got["spec"] == sent["spec"]
        assert Queue.model_validate(got).dump() == got
    finally:
        custom.delete_cluster_custom_object(*QUEUES[:2], QUEUES[2], name)


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(_valid_job())
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


INVALID_JOBS = [
    pytest.param(_with(["spec", "tasks"], []), "spec.tasks", "at least 1", id="no-tasks"),
    pytest.param(
        _with(["spec", "minAvailable"], 4),
        "spec.minAvailable",
        "should not be greater than total replicas",
        id="minAvailable-over-total",
    ),
    pytest.param(
        _with(["spec", "tasks", 1, "minAvailable"], 3),
        "spec.tasks[1].minAvailable",
        "'minAvailable' is greater than 'replicas'",
        id="task-minAvailable-over-replicas",
    ),
    pytest.param(
        _with(["spec", "tasks", 1, "name"], "master"),
        "spec.tasks",
        "duplicated task name",
        id="duplicate-task-name",
    ),
    pytest.param(
        _with(["spec", "tasks", 0, "name"], "Master_0"),
        "spec.tasks[0].name",
        "DNS-1123 label",
        id="task-name-not-dns1123",
    ),
    pytest.param(
        _with(
            ["spec", "policies"], [{"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}]
        ),
        "spec.policies[0]",
        "must not specify event and exitCode simultaneously",
        id="event-and-exitCode",
    ),
    pytest.param(
        _with(["spec", "policies"], [{"exitCode": 0, "action": "RestartJob"}]),
        "spec.policies[0].exitCode",
        "0 is not a valid error code",
        id="exitCode-zero",
    ),
    pytest.param(
        _with(
            ["spec", "policies"],
            [
                {"event": "PodFailed", "action": "RestartJob"},
                {"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"},
            ],
        ),
        "spec.policies",
        "duplicate event",
        id="event-repeated-across-job-policies",
    ),
    pytest.param(
        _with(
            ["spec", "tasks", 1, "policies"],
            [
                {"event": "PodFailed", "action": "RestartTask"},
                {"event": "PodFailed", "action": "RestartJob"},
            ],
        ),
        "spec.tasks[1].policies",
        "duplicate event",
        id="event-repeated-across-task-policies",
    ),
    pytest.param(
        _with(
            ["spec", "policies"],
            [{"exitCode": 3, "action": "RestartJob"}, {"exitCode": 3, "action": "AbortJob"}],
        ),
        "spec.policies",
        "duplicate exitCode",
        id="exitCode-repeated",
    ),
    pytest.param(
        _with(
            ["spec", "policies"],
            [{"event": "*", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
        ),
        "spec.policies",
        "if there's * here",
        id="star-with-other-events",
    ),
    pytest.param(
        _with(["spec", "policies"], [{"event": "PodRunning", "action": "RestartJob"}]),
        "spec.policies[0].event",
        "Unsupported value",
        id="internal-event",
    ),
    pytest.param(
        _with(["spec", "maxRetry"], -1),
        "spec.maxRetry",
        "greater than or equal to 0",
        id="negative-maxRetry",
    ),
    pytest.param(
        _with(["spec", "tasks", 0, "name"], "m" * 60),
        "metadata.name",
        "at most 63 characters",
        id="pod-name-too-long",
    ),
]


@pytest.mark.parametrize(("doc", "field", "gist"), INVALID_JOBS)
def test_invalid_job_is_rejected_naming_the_field(
    api: client.ApiClient, namespace: str, doc: dict[str, Any], field: str, gist: str
) -> None:
    message = _rejection(lambda: _create_job(api, namespace, doc))
    assert f"{field}:" in message and gist in message, message


def test_job_queue_cannot_change_after_creation(api: client.ApiClient, namespace: str) -> None:
    _create_job(api, namespace, _valid_job("fixed"))
    custom = client.CustomObjectsApi(api)
    patch = {"spec": {"queue": "elsewhere"}}
    message = _rejection(
        lambda: custom.patch_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "fixed", patch)
    )
    assert "spec.queue:" in message and "immutable" in message, message


def test_job_replicas_can_change_after_creation(api: client.ApiClient, namespace: str) -> None:
    _create_job(api, namespace, _valid_job("scale"))
    custom = client.CustomObjectsApi(api)
    doc = custom.get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "scale")
    doc["spec"]["tasks"][1]["replicas"] = 5
    got = custom.replace_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "scale", doc)
    assert got["spec"]["tasks"][1]["replicas"] == 5


@pytest.mark.parametrize(
    ("spec", "field", "gist"),
    [
        pytest.param({"weight": 0}, "spec.weight", "greater than or equal to 1", id="weight-0"),
        pytest.param({"parent": "SELF"}, "spec.parent", "use itself as parent", id="own-parent"),
    ],
)
def test_invalid_queue_is_rejected_naming_the_field(
    api: client.ApiClient, spec: dict[str, Any], field: str, gist: str
) -> None:
    name = f"q-{uuid.uuid4().hex[:8]}"
    spec = {k: (name if v == "SELF" else v) for k, v in spec.items()}
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    custom = client.CustomObjectsApi(api)
    message = _rejection(lambda: custom.create_cluster_custom_object(*QUEUES[:2], QUEUES[2], doc))
    assert f"{field}:" in message and gist in message, message


@pytest.mark.parametrize("name", ["default", "root"])
def test_default_and_root_queues_cannot_be_deleted(api: client.ApiClient, name: str) -> None:
    custom = client.CustomObjectsApi(api)
    with pytest.raises(client.ApiException) as err:
        custom.delete_cluster_custom_object(*QUEUES[:2], QUEUES[2], name)
    assert err.value.status in (403, 422), err.value.body
    message = json.loads(err.value.body)["message"]
    assert f"queue `{name}` can not be deleted" in message, message
    assert (
        custom.get_cluster_custom_object(*QUEUES[:2], QUEUES[2], name)["metadata"]["name"] == name
    )
