"""NamespaceQueues on the real apiserver, as Volcano's design has the API, the webhook and RBAC
keep them: a namespace's admin manages its NamespaceQueues and nothing else of Caldera's (the
tenant roles aggregated into Kubernetes' `admin`); the webhook, registered by the `controllers`
fixture, keeps them under the cluster Queues that allow their namespace, one attachment per
namespace, with their resources in order; a Queue cannot revoke a namespace or go while
NamespaceQueues hang under it; a NamespaceQueue cannot go while children name it; and Jobs and
PodGroups name `namespace/<name>` of their own namespace only.

Every queue has a unique name and is deleted at the end (children first). Workloads are sent
as dry runs: admission runs, nothing is stored, nothing is scheduled.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from cli.devstack import controlplane, webhook
from tests.builders import make_job
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")

SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
JOBS = ("batch.volcano.sh", "v1alpha1")
NQ = "namespacequeues"
Refusal = Callable[[Callable[[], object]], str]


@pytest.fixture(autouse=True)
def registered(api: client.ApiClient, e2e_stack: E2EStack) -> None:
    try:
        client.AdmissionregistrationV1Api(api).read_validating_webhook_configuration(webhook.NAME)
    except client.ApiException as e:
        if e.status == 404 and e2e_stack.workdir is None:
            pytest.skip("the reused dev stack runs no admission webhook: restart `caldera dev up`")
        raise


def _refused(call: Callable[[], object], statuses: tuple[int, ...] = (403,)) -> str:
    """The message of a refused request: 403 from the webhook, 422 from the CRD's own rules
    (which run first); fails if it was admitted."""
    try:
        call()
    except client.ApiException as e:
        assert e.status in statuses, e.body
        return str(json.loads(e.body)["message"])
    raise AssertionError("admitted")


def _nq(name: str, parent: str | None, **spec: Any) -> dict[str, Any]:
    body = {**spec, **({} if parent is None else {"parent": parent})}
    return {
        "apiVersion": "/".join(SCHEDULING),
        "kind": "NamespaceQueue",
        "metadata": {"name": name},
        "spec": body,
    }


@pytest.fixture
def made(api: client.ApiClient) -> Iterator[list[tuple[str, str]]]:
    """(namespace, name) of NamespaceQueues ("" namespace: a cluster Queue) to delete, last
    made first."""
    custom = client.CustomObjectsApi(api)
    objects: list[tuple[str, str]] = []
    yield objects
    for namespace, name in reversed(objects):
        eventually(
            functools.partial(_deleted, custom, namespace, name), 30, f"{namespace}/{name} gone"
        )


def _deleted(custom: client.CustomObjectsApi, namespace: str, name: str) -> bool:
    """Whether the delete went through (or found nothing); False while the webhook still
    refuses it (the children deleted a moment ago still in its watch, or still finalizing)."""
    try:
        if namespace:
            custom.delete_namespaced_custom_object(*SCHEDULING, namespace, NQ, name)
        else:
            custom.delete_cluster_custom_object(*SCHEDULING, "queues", name)
    except client.ApiException as e:
        if e.status == 403:
            return False
        if e.status != 404:
            raise
    return True


def _review(api: client.ApiClient, user: str, verb: str, resource: str, **kw: str) -> bool:
    resource, _, subresource = resource.partition("/")
    attributes = client.V1ResourceAttributes(
        verb=verb, resource=resource, subresource=subresource or None, **kw
    )
    spec = client.V1SubjectAccessReviewSpec(
        user=user, groups=["system:authenticated"], resource_attributes=attributes
    )
    review = client.AuthorizationV1Api(api).create_subject_access_review(
        client.V1SubjectAccessReview(spec=spec)
    )
    return bool(review.status.allowed)


def test_a_namespace_admin_manages_its_namespace_queues_and_nothing_else(
    api: client.ApiClient, e2e_stack: E2EStack, namespace: str
) -> None:
    user = f"tenant-{uuid.uuid4().hex[:6]}"
    binding = {
        "metadata": {"name": f"{user}-admin"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "admin",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(namespace, binding)
    group = SCHEDULING[0]
    # kube-controller-manager aggregates the tenant roles into `admin` a moment after install.
    eventually(
        lambda: _review(api, user, "create", NQ, group=group, namespace=namespace),
        30,
        "admin aggregates caldera-namespacequeue-editor",
    )
    for verb in ("get", "list", "watch", "update", "patch", "delete"):
        assert _review(api, user, verb, NQ, group=group, namespace=namespace), verb
    assert not _review(api, user, "patch", f"{NQ}/status", group=group, namespace=namespace)
    assert not _review(api, user, "create", NQ, group=group, namespace="default")
    assert not _review(api, user, "update", "queues", group=group)
    assert not _review(api, user, "create", "jobs", group=JOBS[0], namespace=namespace)
    assert not _review(api, user, "create", "commands", group="bus.volcano.sh", namespace=namespace)

    tenant = controlplane.api_client(e2e_stack.kubeconfig)
    tenant.set_default_header("Impersonate-User", user)
    custom = client.CustomObjectsApi(tenant)
    created = cast(
        dict[str, Any],
        custom.create_namespaced_custom_object(*SCHEDULING, namespace, NQ, _nq("mine", None)),
    )
    assert created["spec"]["parent"] == "cluster/default"  # the CRD's default
    assert created["spec"]["dequeueStrategy"] == "traverse"
    custom.delete_namespaced_custom_object(*SCHEDULING, namespace, NQ, "mine")


def test_namespace_queues_hang_only_where_their_namespace_is_allowed(
    api: client.ApiClient, namespace: str, made: list[tuple[str, str]]
) -> None:
    custom = client.CustomObjectsApi(api)
    research = f"research-{uuid.uuid4().hex[:6]}"
    queue = {
        "apiVersion": "/".join(SCHEDULING),
        "kind": "Queue",
        "metadata": {"name": research},
        "spec": {"weight": 1, "parent": "root", "allowedNamespaces": [namespace]},
    }
    custom.create_cluster_custom_object(*SCHEDULING, "queues", queue)
    made.append(("", research))

    def create(ns: str, body: dict[str, Any]) -> object:
        return custom.create_namespaced_custom_object(*SCHEDULING, ns, NQ, body)

    create(namespace, _nq("dept", f"cluster/{research}"))
    made.append((namespace, "dept"))
    create(namespace, _nq("training", "dept", deserved={"cpu": "2"}, capability={"cpu": "2"}))
    made.append((namespace, "training"))

    second = _refused(lambda: create(namespace, _nq("other", f"cluster/{research}")))
    assert f'NamespaceQueue "{namespace}/dept" already attaches' in second
    elsewhere = _refused(lambda: create("default", _nq("intruder", f"cluster/{research}")))
    assert 'does not allow NamespaceQueues of namespace "default"' in elsewhere
    missing = _refused(lambda: create(namespace, _nq("lost", "cluster/no-such-queue-here")))
    assert 'queue "no-such-queue-here" does not exist' in missing
    greedy = _nq("greedy", "dept", deserved={"cpu": "1500m"}, guarantee={"resource": {"cpu": "2"}})
    shares = _refused(lambda: create(namespace, greedy))
    assert "guarantee[cpu] must be <= deserved[cpu]=1500m" in shares
    root = _refused(lambda: create(namespace, _nq("top", "cluster/root")), (403, 422))
    assert "cluster/root" in root  # the CRD's CEL rule refuses it before the webhook

    revoke = {"spec": {"allowedNamespaces": ["someone-else"]}}
    revoked = _refused(
        lambda: custom.patch_cluster_custom_object(*SCHEDULING, "queues", research, revoke)
    )
    assert f'"{namespace}/dept"' in revoked and "unauthorised" in revoked
    gone = _refused(lambda: custom.delete_cluster_custom_object(*SCHEDULING, "queues", research))
    assert "NamespaceQueues hang under it" in gone
    parent = _refused(
        lambda: custom.delete_namespaced_custom_object(*SCHEDULING, namespace, NQ, "dept")
    )
    assert 'child NamespaceQueues: "training"' in parent


def test_workloads_name_namespace_queues_of_their_own_namespace(
    api: client.ApiClient, namespace: str, made: list[tuple[str, str]]
) -> None:
    custom = client.CustomObjectsApi(api)
    body = _nq("training", None, deserved={"cpu": "2"})
    custom.create_namespaced_custom_object(*SCHEDULING, namespace, NQ, body)
    made.append((namespace, "training"))

    def job(queue: str) -> object:
        name = f"j-{uuid.uuid4().hex[:6]}"
        doc = make_job(name, namespace).task("worker").spec(queue=queue).manifest()
        return custom.create_namespaced_custom_object(*JOBS, namespace, "jobs", doc, dry_run="All")

    job("namespace/training")  # admitted (a dry run stores nothing)
    missing = _refused(lambda: job("namespace/nope"))
    assert f'NamespaceQueue "nope" does not exist in namespace "{namespace}"' in missing
    crossing = _refused(lambda: job("default/training"))
    assert "no other namespace can be named" in crossing
    podgroup = {
        "apiVersion": "/".join(SCHEDULING),
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 1, "queue": "namespace/training"},
    }
    custom.create_namespaced_custom_object(
        *SCHEDULING, namespace, "podgroups", podgroup, dry_run="All"
    )
