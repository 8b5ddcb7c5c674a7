"""deploy/examples/namespace-queues/ on the real stack, end to end (docs/user-guide/
namespace-queues.md): the administrator's cluster Queue allows the tenant's namespace and makes
the tenant its admin; the tenant, under its own name, creates its NamespaceQueue, which its
controller reports Authorized and Ready; a Job naming `namespace/training` runs in it under the
capacity plugin, the NamespaceQueue's `allocated` shows its two pods' CPUs while it runs, and it
ends Completed.

The example's names are made unique (namespace, cluster Queue, tenant) so the shared session
stack keeps no trace of it; everything else is applied as the files say.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from cli.devstack import controlplane
from models.quantity import parse_quantity
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the pods naming `volcano`

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "namespace-queues"
SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
CAPACITY_CONF = EXAMPLE.parent / "queues" / "volcano-scheduler.conf"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLE / name).read_text()) if d]


@pytest.fixture
def names(api: client.ApiClient) -> Iterator[dict[str, str]]:
    """The example's names made unique; the namespace and the cluster Queue deleted after."""
    suffix = uuid.uuid4().hex[:6]
    made = {
        "namespace": f"team-a-{suffix}",
        "queue": f"research-{suffix}",
        "user": f"alice-{suffix}",
    }
    yield made
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.delete_namespace(made["namespace"])

    def queue_gone() -> bool:
        try:
            custom.delete_cluster_custom_object(*SCHEDULING, "queues", made["queue"])
        except client.ApiException as e:
            return e.status == 404  # 403: its NamespaceQueue is still being deleted
        return True

    eventually(queue_gone, 90, f"queue {made['queue']} deleted")


def _allocated_cpu(api: client.ApiClient, namespace: str, name: str) -> Fraction:
    nq: Any = client.CustomObjectsApi(api).get_namespaced_custom_object(
        *SCHEDULING, namespace, "namespacequeues", name
    )
    allocated = (nq.get("status") or {}).get("allocated") or {}
    return parse_quantity(allocated.get("cpu") or "0")


def _conditions(api: client.ApiClient, namespace: str, name: str) -> dict[str, str]:
    nq: Any = client.CustomObjectsApi(api).get_namespaced_custom_object(
        *SCHEDULING, namespace, "namespacequeues", name
    )
    listed = (nq.get("status") or {}).get("conditions") or []
    return {c["type"]: c["status"] for c in listed}


def test_a_tenant_runs_a_job_in_its_own_namespace_queue(
    api: client.ApiClient, e2e_stack: E2EStack, scheduler_conf: Path, names: dict[str, str]
) -> None:
    scheduler_conf.write_text(CAPACITY_CONF.read_text())  # the capacity plugin, as admin.yaml says
    ns, research, user = names["namespace"], names["queue"], names["user"]
    namespace_doc, queue_doc, binding_doc = _docs("admin.yaml")
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.create_namespace({**namespace_doc, "metadata": {"name": ns}})
    queue_doc["metadata"]["name"] = research
    queue_doc["spec"]["allowedNamespaces"] = [ns]
    custom.create_cluster_custom_object(*SCHEDULING, "queues", queue_doc)
    volcano.state_becomes(api, research, "Open")
    binding_doc["metadata"]["namespace"] = ns
    binding_doc["subjects"][0]["name"] = user
    client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(ns, binding_doc)

    # The tenant, under its own name, once its admin role carries NamespaceQueues.
    tenant = controlplane.api_client(e2e_stack.kubeconfig)
    tenant.set_default_header("Impersonate-User", user)
    [nq_doc] = _docs("training-queue.yaml")
    nq_doc["metadata"]["namespace"] = ns
    nq_doc["spec"]["parent"] = f"cluster/{research}"

    def created() -> bool:
        try:
            client.CustomObjectsApi(tenant).create_namespaced_custom_object(
                *SCHEDULING, ns, "namespacequeues", nq_doc
            )
        except client.ApiException as e:
            if e.status == 403 and "forbidden" in str(e.body).lower():
                return False  # admin does not carry the editor role yet (aggregation lags)
            raise
        return True

    eventually(created, 30, f"{user} creates {ns}/training")
    eventually(
        lambda: _conditions(api, ns, "training") == {"Authorized": "True", "Ready": "True"},
        60,
        f"{ns}/training Authorized and Ready",
    )

    [job_doc] = _docs("training-job.yaml")
    job_doc["metadata"]["namespace"] = ns
    custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", ns, "jobs", job_doc)
    name = job_doc["metadata"]["name"]
    eventually(
        lambda: _allocated_cpu(api, ns, "training") == 4, 90, f"{ns}/training allocated 4 CPUs"
    )
    groups: Any = custom.list_namespaced_custom_object(*SCHEDULING, ns, "podgroups")
    assert [g["spec"]["queue"] for g in groups["items"]] == ["namespace/training"]  # raw, kept
    volcano.phase_becomes(api, ns, name, "Completed", timeout=120)
