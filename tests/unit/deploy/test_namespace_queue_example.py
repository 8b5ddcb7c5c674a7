"""The NamespaceQueue example (deploy/examples/namespace-queues/, docs/user-guide/
namespace-queues.md) reads as Volcano's objects, and the webhook admits each step in order
against what the steps before it made: the cluster Queue, the tenant's NamespaceQueue under
it, the Job naming `namespace/training`; and refuses the same NamespaceQueue in a namespace
the Queue does not list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from admission import jobspec, reads, rules, templates
from models import queue_refs
from models.namespacequeue import NamespaceQueue
from models.quantity import parse_quantity
from models.scheduling import Queue
from models.vcjob import Job
from tests.unit.admission.test_rules import Queues

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "examples" / "namespace-queues"
TENANT = "team-a"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLE / name).read_text()) if d]


def _request(plural: str, group: str, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "uid": "1",
        "resource": {"group": group, "version": "v1", "resource": plural},
        "operation": "CREATE",
        "name": meta["name"],
        "namespace": meta.get("namespace", ""),
        "object": obj,
    }


def _cluster() -> tuple[dict[str, Any], Queue, dict[str, Any]]:
    namespace, queue, binding = _docs("admin.yaml")
    return namespace, Queue.model_validate(queue), binding


def test_the_administrator_allows_team_a_and_makes_alice_its_admin() -> None:
    namespace, queue, binding = _cluster()
    assert (namespace["kind"], namespace["metadata"]["name"]) == ("Namespace", TENANT)
    assert queue.spec.allowed_namespaces == [TENANT]
    assert binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] == TENANT
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "admin",
    }
    assert [s["name"] for s in binding["subjects"]] == ["alice"]


def test_each_step_is_admitted_by_the_webhook_in_order() -> None:
    _, queue, _ = _cluster()
    cluster = Queues([rules.QueueInfo("root"), rules.queue_info(queue.dump())])
    assert rules.review(_request("queues", "scheduling.volcano.sh", queue.dump()), cluster).allowed

    [nq_doc] = _docs("training-queue.yaml")
    nq = NamespaceQueue.model_validate(nq_doc)
    assert nq.metadata.namespace == TENANT
    assert queue_refs.parent(TENANT, nq.spec.parent) == queue_refs.cluster(queue.metadata.name)
    request = _request("namespacequeues", "scheduling.volcano.sh", nq_doc)
    assert rules.review(request, cluster) == rules.ALLOW

    elsewhere = {**nq_doc, "metadata": {**nq_doc["metadata"], "namespace": "team-z"}}
    refused = rules.review(_request("namespacequeues", "scheduling.volcano.sh", elsewhere), cluster)
    assert not refused.allowed and "does not allow NamespaceQueues" in refused.message

    [job_doc] = _docs("training-job.yaml")
    job = Job.model_validate(job_doc)
    target = queue_refs.workload(TENANT, job.spec.queue)
    assert target.id == f"{TENANT}/{nq.metadata.name}"
    assert [*jobspec.create_problems(job_doc), *templates.problems(job_doc)] == []
    tenant = Queues(
        [rules.QueueInfo("root"), rules.queue_info(queue.dump())],
        [reads.namespace_queue_info(nq_doc)],
    )
    assert rules.review(_request("jobs", "batch.volcano.sh", job_doc), tenant) == rules.ALLOW


def test_the_namespace_queue_fits_its_parent_and_the_job_fits_the_namespace_queue() -> None:
    """The controller's rule (capability within the parent's) and the example's promise (the
    Job's two pods fill training's CPUs)."""
    _, queue, _ = _cluster()
    [nq_doc] = _docs("training-queue.yaml")
    nq = NamespaceQueue.model_validate(nq_doc)
    parent_capability = queue.spec.capability or {}
    for resource, value in (nq.spec.capability or {}).items():
        assert parse_quantity(value) <= parse_quantity(parent_capability[resource])
    [job_doc] = _docs("training-job.yaml")
    (task,) = job_doc["spec"]["tasks"]
    (container,) = task["template"]["spec"]["containers"]
    cpus = task["replicas"] * parse_quantity(container["resources"]["requests"]["cpu"])
    assert cpus == parse_quantity((nq.spec.capability or {})["cpu"])
