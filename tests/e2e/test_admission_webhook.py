"""Caldera's admission webhook, registered by the `controllers` fixture, on the real apiserver:
Jobs and PodGroups only go to existing Open queues (Jobs to leaves), and Queues only hang under
existing parents without cycles.

The stack is shared by the whole session: every queue made here has a unique name and is
deleted at the end of its test (children first), so no Closed queue or cycle is left behind.
Queues are closed by patching their status, which is what the webhook reads; when a queue
controller runs, that waits for its first status write, which would otherwise reopen the queue.
The webhook answers from a watch of the queues, so a close reaches it a moment later (as with
Volcano's lister): a test that closes a queue first waits, with dry-run requests that store
nothing, until the webhook refuses, and then asserts on a real request.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import caldera_processes as caldera
from cli.devstack import processes, webhook
from tests.builders import make_job
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")

JOBS = ("batch.volcano.sh", "v1alpha1")
SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
MakeQueue = Callable[..., str]


@pytest.fixture(autouse=True)
def registered(api: client.ApiClient, e2e_stack: E2EStack) -> None:
    """A reused `caldera dev up` stack from before the webhook existed has no registration."""
    try:
        client.AdmissionregistrationV1Api(api).read_validating_webhook_configuration(webhook.NAME)
    except client.ApiException as e:
        if e.status == 404 and e2e_stack.workdir is None:
            pytest.skip("the reused dev stack runs no admission webhook: restart `caldera dev up`")
        raise


def _state(api: client.ApiClient, name: str) -> str | None:
    queue = client.CustomObjectsApi(api).get_cluster_custom_object(*SCHEDULING, "queues", name)
    state: str | None = (queue.get("status") or {}).get("state")
    return state


@pytest.fixture(scope="module")
def status_writer(api: client.ApiClient) -> bool:
    """Whether a queue controller writes queue status on this stack (`default` gets a state)."""
    try:
        eventually(lambda: _state(api, "default"), 10, "a state on the default queue")
    except AssertionError:
        return False
    return True


@pytest.fixture
def queues(api: client.ApiClient, status_writer: bool) -> Iterator[MakeQueue]:
    """Create uniquely named queues; all are deleted at the end, newest (children) first."""
    custom = client.CustomObjectsApi(api)
    made: list[str] = []
    suffix = uuid.uuid4().hex[:6]

    def make(name: str, parent: str | None = "root", **extra: Any) -> str:
        full = f"{name}-{suffix}"
        spec: dict[str, Any] = {"weight": 1, **extra} | (
            {} if parent is None else {"parent": parent}
        )
        body = {"apiVersion": "/".join(SCHEDULING), "kind": "Queue", "metadata": {"name": full}}
        custom.create_cluster_custom_object(*SCHEDULING, "queues", {**body, "spec": spec})
        made.append(full)
        if status_writer:
            eventually(lambda: _state(api, full) == "Open", 30, f"queue {full} Open")
        return full

    yield make
    for name in reversed(made):
        try:
            custom.delete_cluster_custom_object(*SCHEDULING, "queues", name)
        except client.ApiException as e:
            if e.status != 404:
                raise


def _close(api: client.ApiClient, name: str) -> None:
    client.CustomObjectsApi(api).patch_cluster_custom_object_status(
        *SCHEDULING, "queues", name, {"status": {"state": "Closed"}}
    )


def _job(name: str, queue: str) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": {"sim.caldera.dev/run-seconds": "1"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }
    return make_job(name).task("worker", replicas=1, template=template).spec(queue=queue).manifest()


def _submit(
    api: client.ApiClient, ns: str, manifest: dict[str, Any], dry_run: bool = False
) -> dict[str, Any]:
    manifest["metadata"]["namespace"] = ns
    extra = {"dry_run": "All"} if dry_run else {}
    created: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        *JOBS, ns, "jobs", manifest, **extra
    )
    return created


def _podgroup(
    api: client.ApiClient, ns: str, name: str, queue: str, dry_run: bool = False
) -> object:
    body = {
        "apiVersion": "/".join(SCHEDULING),
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": 1, "queue": queue},
    }
    extra = {"dry_run": "All"} if dry_run else {}
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        *SCHEDULING, ns, "podgroups", body, **extra
    )


def _refused_once_seen(dry_run: Callable[[], object]) -> None:
    """Wait until the webhook's watch holds a change just made: a dry-run request (admitted or
    refused, nothing is stored) is refused."""

    def refused() -> bool:
        try:
            dry_run()
        except client.ApiException as e:
            if e.status == 403:
                return True
            raise
        return False

    eventually(refused, 30, "the webhook refuses once it has seen the change")


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(client.ApiException) as err:
        call()
    assert err.value.status == 403, err.value.body
    message: str = json.loads(err.value.body)["message"]
    return message


def test_job_to_closed_queue_is_refused(
    api: client.ApiClient, namespace: str, queues: MakeQueue
) -> None:
    queue = queues("closed")
    _close(api, queue)
    _refused_once_seen(lambda: _submit(api, namespace, _job("late", queue), dry_run=True))
    message = _refusal(lambda: _submit(api, namespace, _job("late", queue)))
    expected = (
        f"job {namespace}/late: spec.queue: can only submit job to queue with state Open, "
        f'queue "{queue}" status is "Closed"'
    )
    assert expected in message, message


def test_job_to_missing_queue_is_refused(api: client.ApiClient, namespace: str) -> None:
    queue = f"missing-{uuid.uuid4().hex[:6]}"
    message = _refusal(lambda: _submit(api, namespace, _job("lost", queue)))
    assert f'job {namespace}/lost: spec.queue: queue "{queue}" does not exist' in message, message


def test_job_to_non_leaf_queue_is_refused(
    api: client.ApiClient, namespace: str, queues: MakeQueue
) -> None:
    parent = queues("org")
    child = queues("team", parent=parent)
    _refused_once_seen(lambda: _submit(api, namespace, _job("wide", parent), dry_run=True))
    message = _refusal(lambda: _submit(api, namespace, _job("wide", parent)))
    expected = f'can only submit job to leaf queue, queue "{parent}" has 1 child queues: "{child}"'
    assert f"job {namespace}/wide: spec.queue: {expected}" in message, message


def test_job_to_open_leaf_queue_is_accepted_and_gets_its_podgroup(
    api: client.ApiClient, namespace: str, queues: MakeQueue
) -> None:
    parent = queues("org")
    leaf = queues("team", parent=parent)
    created = _submit(api, namespace, _job("fits", leaf))
    assert created["spec"]["queue"] == leaf
    custom = client.CustomObjectsApi(api)

    def podgroup_queues() -> list[str]:
        listed = custom.list_namespaced_custom_object(*SCHEDULING, namespace, "podgroups")
        return [pg["spec"].get("queue") for pg in listed["items"]]

    # The worker's PodGroup goes through the webhook too, and is admitted: its queue is Open.
    assert eventually(podgroup_queues, 60, "the job's PodGroup") == [leaf]
    custom.delete_namespaced_custom_object(*JOBS, namespace, "jobs", "fits")


def test_a_job_update_may_change_only_what_volcano_lets_change(
    api: client.ApiClient, namespace: str
) -> None:
    _submit(api, namespace, _job("edits", "default"))
    custom = client.CustomObjectsApi(api)

    def patch(body: dict[str, Any]) -> object:
        return custom.patch_namespaced_custom_object(*JOBS, namespace, "jobs", "edits", body)

    patch({"spec": {"minAvailable": 1, "priorityClassName": "low"}})
    patch({"metadata": {"labels": {"team": "a"}}})  # not the spec: the webhook is not called
    message = _refusal(lambda: patch({"spec": {"maxRetry": 9}}))
    expected = (
        f"job {namespace}/edits: spec.maxRetry: job updates may not change fields other than "
        "minAvailable, priorityClassName, and tasks[*].replicas and tasks[*].minAvailable"
    )
    assert expected in message, message
    stored = custom.get_namespaced_custom_object(*JOBS, namespace, "jobs", "edits")
    assert stored["spec"]["maxRetry"] != 9 and stored["spec"]["priorityClassName"] == "low"
    custom.delete_namespaced_custom_object(*JOBS, namespace, "jobs", "edits")


def test_podgroup_to_closed_queue_is_refused(
    api: client.ApiClient, namespace: str, queues: MakeQueue
) -> None:
    queue = queues("closed")
    _close(api, queue)
    _refused_once_seen(lambda: _podgroup(api, namespace, "gang", queue, dry_run=True))
    message = _refusal(lambda: _podgroup(api, namespace, "gang", queue))
    expected = (
        f"podgroup {namespace}/gang: spec.queue: can only submit PodGroup to queue with state "
        f'Open, queue "{queue}" status is "Closed"'
    )
    assert expected in message, message


def test_queue_parent_cycle_is_refused(api: client.ApiClient, queues: MakeQueue) -> None:
    a = queues("a")
    b = queues("b", parent=a)
    custom = client.CustomObjectsApi(api)
    message = _refusal(
        lambda: custom.patch_cluster_custom_object(
            *SCHEDULING, "queues", a, {"spec": {"parent": b}}
        )
    )
    expected = f'queue {a}: spec.parent: queue "{a}" is an ancestor of "{b}": parent cycles'
    assert f"{expected} are not allowed" in message, message
    stored = custom.get_cluster_custom_object(*SCHEDULING, "queues", a)
    assert stored["spec"]["parent"] == "root"


def test_queue_with_missing_parent_is_refused(queues: MakeQueue) -> None:
    parent = f"missing-{uuid.uuid4().hex[:6]}"
    message = _refusal(lambda: queues("orphan", parent=parent))
    assert f'spec.parent: parent queue "{parent}" does not exist' in message, message


def test_a_queue_that_deserves_more_than_its_capability_is_refused(queues: MakeQueue) -> None:
    message = _refusal(lambda: queues("greedy", deserved={"cpu": "8"}, capability={"cpu": "4"}))
    assert 'spec.deserved.cpu: Invalid value: "8": deserved[cpu] must be <= capability[cpu]=4' in (
        message
    ), message


def test_a_child_queue_may_not_exceed_its_parents_capability(
    api: client.ApiClient, queues: MakeQueue
) -> None:
    parent = queues("org", capability={"cpu": "10"})
    child = f"big-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "/".join(SCHEDULING),
        "kind": "Queue",
        "metadata": {"name": child},
        "spec": {"weight": 1, "parent": parent, "capability": {"cpu": "12"}},
    }
    custom = client.CustomObjectsApi(api)

    def create(dry_run: bool) -> object:
        extra = {"dry_run": "All"} if dry_run else {}
        return custom.create_cluster_custom_object(*SCHEDULING, "queues", body, **extra)

    _refused_once_seen(lambda: create(dry_run=True))  # the parent has reached the webhook
    message = _refusal(lambda: create(dry_run=False))
    expected = (
        f'spec.capability.cpu: Invalid value: "12": queue "{child}" capability[cpu] exceeds '
        f'its ancestor "{parent}"\'s capability 10'
    )
    assert expected in message, message
    queues("fits", parent=parent, capability={"cpu": "10"})


def test_a_queue_with_a_child_cannot_be_deleted(api: client.ApiClient, queues: MakeQueue) -> None:
    parent = queues("org")
    child = queues("team", parent=parent)
    custom = client.CustomObjectsApi(api)

    def delete(name: str, dry_run: bool = False) -> object:
        extra = {"dry_run": "All"} if dry_run else {}
        return custom.delete_cluster_custom_object(*SCHEDULING, "queues", name, **extra)

    _refused_once_seen(lambda: delete(parent, dry_run=True))  # the child has reached it
    message = _refusal(lambda: delete(parent))
    expected = (
        f'queue {parent}: metadata.name: queue "{parent}" can not be deleted because it has 1 '
        f"child queues: {child}"
    )
    assert expected in message, message
    stored = custom.get_cluster_custom_object(*SCHEDULING, "queues", parent)
    assert stored["metadata"]["name"] == parent  # still there


def test_a_job_whose_queue_closed_before_its_podgroup_was_made_runs_once_it_opens(
    api: client.ApiClient,
    namespace: str,
    queues: MakeQueue,
    e2e_stack: E2EStack,
    controllers: list[processes.Process],
) -> None:
    """Regression (chaos soak): the webhook's refusal of the PodGroup was taken as final and the
    job Terminated at once; as Volcano retries a failed sync, the job runs once the queue opens."""
    if e2e_stack.workdir is None:
        pytest.skip("stops and starts the worker: needs the session's own stack")
    queue = queues("flip")
    worker = next(p for p in controllers if p.name == "worker")
    processes.stop(worker)  # nothing of the job is decided until the queue is closed
    try:
        _submit(api, namespace, _job("early", queue))  # admitted: the queue is Open
        _close(api, queue)
        _refused_once_seen(lambda: _podgroup(api, namespace, "probe", queue, dry_run=True))
    finally:
        logs = e2e_stack.workdir / "logs"
        started = caldera.start_worker(
            e2e_stack.kubeconfig,
            e2e_stack.temporal_address,
            logs,
            caldera.DEFAULT_SCHEDULER_OVERRIDE,
        )
        controllers[controllers.index(worker)] = started

    def refused() -> bool:
        # The PodGroup is ensured with the decision's other writes (`apply_writes`).
        return any(
            "apply_writes" in line and f"vcjob/{namespace}/early" in line
            for line in processes.log_text(started).splitlines()
            if "Completing activity as failed" in line
        )

    eventually(refused, 60, "the PodGroup refused while the queue is Closed")
    client.CustomObjectsApi(api).patch_cluster_custom_object_status(
        *SCHEDULING, "queues", queue, {"status": {"state": "Open"}}
    )

    def phase() -> str:
        job = client.CustomObjectsApi(api).get_namespaced_custom_object(
            *JOBS, namespace, "jobs", "early"
        )
        found: str = ((job.get("status") or {}).get("state") or {}).get("phase", "")
        return found

    reached = eventually(lambda: phase() in ("Running", "Completed", "Terminated") and phase(), 90)
    assert reached in ("Running", "Completed"), reached
