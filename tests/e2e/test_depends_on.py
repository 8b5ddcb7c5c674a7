"""Task start order (`dependsOn`) on the real stack, and its admission.

A task's pods are created only once the tasks it depends on have their minAvailable pods
Running and ready (`iteration: all`, the default), or once any one of them has
(`iteration: any`). The order is read from one watch of the namespace's pods, whose events come
in the order the apiserver stored them, so "created after the other task ran" needs no clock.
A task is held back with a scheduling gate on its template, lifted by the test.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client, watch
from urllib3.exceptions import ProtocolError

from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually
from tests.e2e.volcano import JOBS

pytestmark = pytest.mark.usefixtures("controllers")

GATE = "caldera.dev/test-hold"


@dataclass
class PodLog:
    """Each pod's first ADDED and first Running-and-ready event, by position in the watch."""

    events: list[tuple[str, str]] = field(default_factory=list)  # (pod, "added" | "running")
    phases: dict[str, str] = field(default_factory=dict)

    def at(self, pod: str, what: str) -> int | None:
        return next((i for i, e in enumerate(self.events) if e == (pod, what)), None)

    def task(self, job: str, task: str) -> list[str]:
        return sorted({p for p, _ in self.events if p.startswith(f"{job}-{task}-")})


@pytest.fixture
def pods(api: client.ApiClient, namespace: str) -> Iterator[PodLog]:
    log = PodLog()
    core = client.CoreV1Api(api)
    version = core.list_namespaced_pod(namespace).metadata.resource_version
    stream = watch.Watch()

    def follow() -> None:
        with contextlib.suppress(ProtocolError):  # the stream closes under it at the end
            record(stream.stream(core.list_namespaced_pod, namespace, resource_version=version))

    def record(events: Iterator[dict[str, Any]]) -> None:
        for event in events:
            pod = event["object"]
            name = pod.metadata.name
            if log.at(name, "added") is None:
                log.events.append((name, "added"))
            statuses = pod.status.container_statuses or []
            ready = bool(statuses) and all(s.ready for s in statuses)
            log.phases[name] = pod.status.phase
            if pod.status.phase == "Running" and ready and log.at(name, "running") is None:
                log.events.append((name, "running"))

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    yield log
    stream.stop()


Task = tuple[str, int, dict[str, Any]]


def _task(name: str, replicas: int, *deps: str, held: bool = False) -> Task:
    """A task of long-running pods; `held`: its template carries the test's scheduling gate."""
    template = volcano.template({})
    if held:
        template["spec"]["schedulingGates"] = [{"name": GATE}]
    fields: dict[str, Any] = {"template": template}
    if deps:
        fields["dependsOn"] = {"name": list(deps)}
    return name, replicas, fields


def _job(name: str, *tasks: Task, iteration: str | None = None) -> dict[str, Any]:
    """minAvailable 1, so the gang does not wait for the pods dependsOn holds back."""
    builder = make_job(name).spec(minAvailable=1)
    for task, replicas, fields in tasks:
        if iteration and "dependsOn" in fields:
            fields["dependsOn"]["iteration"] = iteration
        builder.task(task, replicas=replicas, **fields)
    return builder.manifest()


def _submit(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> None:
    manifest["metadata"]["namespace"] = ns
    client.CustomObjectsApi(api).create_namespaced_custom_object(*JOBS, ns, "jobs", manifest)


def _release(api: client.ApiClient, ns: str, pod: str) -> None:
    """Lift the test's scheduling gate: the pod may be scheduled from now on."""
    client.CoreV1Api(api).patch_namespaced_pod(
        pod, ns, [{"op": "remove", "path": "/spec/schedulingGates"}]
    )


def test_a_task_starts_only_once_every_task_it_depends_on_runs(
    api: client.ApiClient, namespace: str, pods: PodLog
) -> None:
    manifest = _job(
        "order",
        _task("data", 1, held=True),
        _task("ps", 2),
        _task("train", 2, "data", "ps"),
    )
    _submit(api, namespace, manifest)
    eventually(
        lambda: all(pods.at(p, "running") is not None for p in ("order-ps-0", "order-ps-1")),
        60,
        "both ps pods Running while data is held",
    )
    assert pods.phases["order-data-0"] == "Pending"
    assert pods.task("order", "train") == []  # ps alone does not start train
    _release(api, namespace, "order-data-0")
    eventually(lambda: len(pods.task("order", "train")) == 2, 60, "the train pods created")
    data_ran = pods.at("order-data-0", "running")
    assert data_ran is not None
    for pod in ("order-train-0", "order-train-1"):
        added = pods.at(pod, "added")
        assert added is not None and added > data_ran, pods.events
    volcano.phase_becomes(api, namespace, "order", "Running")


def test_with_iteration_any_a_task_starts_once_one_of_its_dependencies_runs(
    api: client.ApiClient, namespace: str, pods: PodLog
) -> None:
    manifest = _job(
        "anyof",
        _task("slow", 1, held=True),
        _task("fast", 1),
        _task("train", 1, "slow", "fast"),
        iteration="any",
    )
    _submit(api, namespace, manifest)
    eventually(lambda: pods.at("anyof-train-0", "added") is not None, 60, "the train pod created")
    fast_ran = pods.at("anyof-fast-0", "running")
    assert fast_ran is not None and fast_ran < (pods.at("anyof-train-0", "added") or 0)
    assert pods.at("anyof-slow-0", "running") is None
    assert pods.phases["anyof-slow-0"] == "Pending"


def _refusal(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> str:
    with pytest.raises(client.ApiException) as err:
        _submit(api, ns, manifest)
    assert err.value.status == 403, err.value.body
    message: str = json.loads(err.value.body)["message"]
    return message


def test_a_dependency_cycle_is_refused_naming_the_field(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = _job("loop", _task("a", 1, "b"), _task("b", 1, "a"))
    message = _refusal(api, namespace, manifest)
    assert "spec.tasks[0].dependsOn.name: the tasks' dependencies form a cycle" in message
    assert '("a" → "b" → "a")' in message


def test_a_dependency_on_a_task_the_job_lacks_is_refused(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = _job("typo", _task("a", 1), _task("b", 1, "A"))
    message = _refusal(api, namespace, manifest)
    assert 'spec.tasks[1].dependsOn.name: "A" is not a task of this job' in message
