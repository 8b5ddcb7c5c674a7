"""The preempt action on the real stack: within one queue, a high-priority job that does not
fit evicts a lower-priority job's pod, waits on that pod's node with it as its
nominatedNodeName while the victim goes, and is bound there.

The stack's volcano-scheduler.conf gets `preempt` in its actions for the test. Caldera's gang
scheduler runs on the session's 3 kwok nodes of 8 CPUs: five pods of 4 CPUs leave 4 free,
too little for one pod of 8.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from urllib3.exceptions import ProtocolError

from scheduling.framework.conf import CALDERA_DEFAULT
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the pods
PREEMPT = CALDERA_DEFAULT.replace("backfill, reclaim", "backfill, reclaim, preempt")


@pytest.fixture
def high(api: client.ApiClient) -> Iterator[str]:
    name = f"high-{uuid.uuid4().hex[:6]}"
    body = {"metadata": {"name": name}, "value": 1000}
    client.SchedulingV1Api(api).create_priority_class(body)
    yield name
    client.SchedulingV1Api(api).delete_priority_class(name)


def _job(
    api: client.ApiClient, namespace: str, name: str, replicas: int, cpu: str, **spec: Any
) -> None:
    template: dict[str, Any] = volcano.template({volcano.RUN: "600"})
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    doc = (
        make_job(name, namespace=namespace)
        .task("w", replicas=replicas, template=template)
        .spec(minAvailable=1, schedulerName="volcano", **spec)
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs", doc
    )


def _pods(api: client.ApiClient, namespace: str, job: str) -> list[Any]:
    return [
        p
        for p in client.CoreV1Api(api).list_namespaced_pod(namespace).items
        if p.metadata.name.startswith(f"{job}-")
    ]


@pytest.fixture
def nominations(api: client.ApiClient, namespace: str) -> Iterator[list[tuple[str, str]]]:
    """(pod, nominatedNodeName) each time a pod is seen nominated while still unbound: a bind
    may clear the field, so it is watched for rather than read afterwards."""
    seen: list[tuple[str, str]] = []
    core = client.CoreV1Api(api)
    version = core.list_namespaced_pod(namespace).metadata.resource_version
    stream = watch.Watch()

    def follow() -> None:
        with contextlib.suppress(ProtocolError):  # the stream closes under it at the end
            for event in stream.stream(
                core.list_namespaced_pod, namespace, resource_version=version
            ):
                pod = event["object"]
                if pod.status.nominated_node_name and not pod.spec.node_name:
                    seen.append((pod.metadata.name, pod.status.nominated_node_name))

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    yield seen
    stream.stop()


def test_a_higher_priority_job_preempts_within_its_queue_and_is_nominated_first(
    api: client.ApiClient,
    namespace: str,
    scheduler_conf: Path,
    high: str,
    nominations: list[tuple[str, str]],
) -> None:
    scheduler_conf.write_text(PREEMPT)
    _job(api, namespace, "low", replicas=5, cpu="4")
    eventually(
        lambda: sum(1 for p in _pods(api, namespace, "low") if p.spec.node_name) == 5,
        120,
        "the five low-priority pods bound",
    )
    _job(api, namespace, "urgent", replicas=1, cpu="8", priorityClassName=high)

    def bound() -> Any:
        pods = _pods(api, namespace, "urgent")
        return pods[0] if pods and pods[0].spec.node_name else None

    eventually(lambda: bound() is not None, 120, "the preemptor bound")
    preemptor = bound()
    # While its victims went it was nominated to the node it waited on, where it then went.
    eventually(
        lambda: (preemptor.metadata.name, preemptor.spec.node_name) in nominations,
        30,
        f"{preemptor.metadata.name} seen nominated to {preemptor.spec.node_name}",
    )
    evicted = [
        e
        for e in client.CoreV1Api(api).list_namespaced_event(namespace).items
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    ]
    assert evicted and all(e.involved_object.name.startswith("low-") for e in evicted)
    assert all("preempt" in e.message for e in evicted), [e.message for e in evicted]
