"""Tenants' own queues on the real stack (Volcano's NamespaceQueue design).

An administrator lets namespace A attach NamespaceQueues to a cluster Queue; a tenant, a user
bound to Kubernetes' `admin` role in A and nothing else, makes a NamespaceQueue of 4 CPUs under
it and runs jobs in it: two jobs of 2 CPUs run, the third waits in spite of the free cluster
(the NamespaceQueue's capability), and runs once one of the two is gone. The webhook refuses a
NamespaceQueue of a namespace the Queue does not authorise, a job naming a NamespaceQueue its
namespace does not have, and the administrator's removal of A while `training` hangs under the
Queue. The tenant may not touch cluster Queues nor another namespace's NamespaceQueues.
The capacity plugin runs (the design's one plugin for NamespaceQueues); the session's kwok
nodes hold 12 pods of 2 CPUs.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import controlplane, processes
from scheduling.framework.conf import CALDERA_DEFAULT
from tests.e2e import sharing, volcano
from tests.e2e.conftest import E2EStack, eventually

SCHEDULER_OVERRIDE = None  # Caldera schedules: the capacity plugin decides
CAPACITY = CALDERA_DEFAULT.replace("name: proportion", "name: capacity")
_G, _V = "scheduling.volcano.sh", "v1beta1"
NQ = "namespacequeues"


@pytest.fixture
def capacity_conf(scheduler_conf: Path) -> Path:
    scheduler_conf.write_text(CAPACITY)
    return scheduler_conf


def _namespace(api: client.ApiClient) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})  # type: ignore[arg-type]
    yield name
    core.delete_namespace(name)


@pytest.fixture
def other_namespace(api: client.ApiClient) -> Iterator[str]:
    yield from _namespace(api)


@pytest.fixture
def research(api: client.ApiClient, namespace: str) -> Iterator[str]:
    """A cluster Queue under root that lets `namespace` (only) attach NamespaceQueues."""
    custom = client.CustomObjectsApi(api)
    name = f"research-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": f"{_G}/{_V}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": True, "allowedNamespaces": [namespace]},
    }
    custom.create_cluster_custom_object(_G, _V, "queues", body)
    volcano.state_becomes(api, name, "Open", timeout=30)
    yield name
    _clear(api, namespace)  # the webhook keeps a Queue with NamespaceQueues under it
    custom.delete_cluster_custom_object(_G, _V, "queues", name)


def _clear(api: client.ApiClient, ns: str) -> None:
    """The namespace's jobs, then (their PodGroups gone) its NamespaceQueues, leaves first."""
    custom = client.CustomObjectsApi(api)
    for job in custom.list_namespaced_custom_object(*volcano.JOBS, ns, "jobs")["items"]:
        custom.delete_namespaced_custom_object(*volcano.JOBS, ns, "jobs", job["metadata"]["name"])

    def listed(plural: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = custom.list_namespaced_custom_object(_G, _V, ns, plural)[
            "items"
        ]
        return items

    eventually(lambda: not listed("podgroups"), 120, "the jobs' PodGroups gone")

    def fewer_than(count: int) -> bool:
        return len(listed(NQ)) < count

    while queues := listed(NQ):
        parents = {(q.get("spec") or {}).get("parent") for q in queues}
        for q in queues:
            if q["metadata"]["name"] not in parents:
                custom.delete_namespaced_custom_object(_G, _V, ns, NQ, q["metadata"]["name"])
        eventually(functools.partial(fewer_than, len(queues)), 60, "leaf NamespaceQueues gone")


@pytest.fixture
def tenant(e2e_stack: E2EStack, api: client.ApiClient, namespace: str) -> client.ApiClient:
    """A client acting as user `tenant-<ns>`, bound to `admin` in the test's namespace only."""
    user = f"tenant-{namespace}"
    binding = {
        "metadata": {"name": "tenant-admin"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "admin",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(namespace, binding)
    acting = controlplane.api_client(e2e_stack.kubeconfig)
    acting.set_default_header("Impersonate-User", user)
    return acting


def _namespace_queue(ns: str, name: str, parent: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{_G}/{_V}",
        "kind": "NamespaceQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"parent": parent, "capability": {"cpu": cpu}},
    }


def _refused(call: Any) -> client.ApiException:
    with pytest.raises(client.ApiException) as refused:
        call()
    return refused.value


def _ready(api: client.ApiClient, ns: str, name: str) -> dict[str, Any] | None:
    got: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        _G, _V, ns, NQ, name
    )
    conditions = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}
    ready = conditions.get("Ready", {}).get("status") == "True"
    authorized = conditions.get("Authorized", {}).get("status") == "True"
    return got if ready and authorized else None


def _running_jobs(api: client.ApiClient, ns: str) -> set[str]:
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return {
        p.metadata.name.rsplit("-w-", 1)[0]
        for p in pods
        if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp
    }


def test_a_tenant_runs_jobs_in_its_own_queue_within_its_capability(
    controllers: list[processes.Process],
    api: client.ApiClient,
    tenant: client.ApiClient,
    namespace: str,
    other_namespace: str,
    research: str,
    capacity_conf: Path,
) -> None:
    mine = client.CustomObjectsApi(tenant)
    mine.create_namespaced_custom_object(
        _G, _V, namespace, NQ, _namespace_queue(namespace, "training", f"cluster/{research}", "4")
    )
    eventually(lambda: _ready(api, namespace, "training"), 60, "training Ready and Authorized")

    # The tenant's reach: its own namespace's NamespaceQueues, nothing cluster-wide.
    assert (
        _refused(
            lambda: mine.patch_cluster_custom_object(
                _G, _V, "queues", research, {"spec": {"allowedNamespaces": ["*"]}}
            )
        ).status
        == 403
    )
    assert (
        _refused(
            lambda: mine.create_namespaced_custom_object(
                _G,
                _V,
                other_namespace,
                NQ,
                _namespace_queue(other_namespace, "x", "cluster/default", "1"),
            )
        ).status
        == 403
    )

    for i in range(3):
        sharing.submit(api, namespace, f"t{i}", "namespace/training")
    eventually(lambda: len(_running_jobs(api, namespace)) == 2, 120, "two jobs of 2 CPUs running")
    waiting = ({"t0", "t1", "t2"} - _running_jobs(api, namespace)).pop()
    # The cluster has room for ten more: only the NamespaceQueue's 4 CPUs hold the third back,
    # session after session.
    worker = next(p for p in controllers if p.name == "worker")
    seen = sharing.sessions(worker)
    eventually(lambda: sharing.sessions(worker) >= seen + 3, 60, "three more sessions")
    assert _running_jobs(api, namespace) == {"t0", "t1", "t2"} - {waiting}
    assert volcano.job(api, namespace, waiting)["status"]["state"]["phase"] == "Pending"
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs", sorted(_running_jobs(api, namespace))[0]
    )
    eventually(lambda: waiting in _running_jobs(api, namespace), 120, f"{waiting} runs after")
    assert len(_running_jobs(api, namespace)) <= 2


@pytest.mark.usefixtures("controllers")
def test_the_webhook_keeps_namespace_queues_to_authorised_namespaces(
    api: client.ApiClient,
    namespace: str,
    other_namespace: str,
    research: str,
) -> None:
    custom = client.CustomObjectsApi(api)
    refused = _refused(
        lambda: custom.create_namespaced_custom_object(
            _G,
            _V,
            other_namespace,
            NQ,
            _namespace_queue(other_namespace, "training", f"cluster/{research}", "4"),
        )
    )
    assert refused.status in (400, 403, 422) and "allowedNamespaces" in str(refused.body)

    custom.create_namespaced_custom_object(
        _G, _V, namespace, NQ, _namespace_queue(namespace, "training", f"cluster/{research}", "4")
    )
    eventually(lambda: _ready(api, namespace, "training"), 60, "training Ready")
    # No NamespaceQueue `training` in the other namespace: the job is refused, never defaulted.
    refused = _refused(lambda: sharing.submit(api, other_namespace, "j", "namespace/training"))
    assert "training" in str(refused.body)
    # Removing the namespace from the Queue would orphan `training`: refused, naming it.
    refused = _refused(
        lambda: custom.patch_cluster_custom_object(
            _G, _V, "queues", research, {"spec": {"allowedNamespaces": [other_namespace]}}
        )
    )
    assert "training" in str(refused.body)
