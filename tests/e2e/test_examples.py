"""The feature examples under deploy/examples/ (queues/, network-topology/, workloads/,
devices/), each applied as `kubectl apply -f` would and run on the session's stack to the end
its header promises: the hierarchical queues' Jobs Completed with the parent's capacity shared
out as written, the rack-local gang placed within one rack and Completed, the managedBy
batch/v1 Job Complete, the managedBy Job with spec.scheduling Running as its Kubernetes
PodGroup's gang, the Deployment's and the StatefulSet's gangs Running with their
PodGroups, the Kubernetes PodGroup's pods Running as one gang with its condition written, the
GPU gang given one device each by DRA (this one needs Dynamic Resource Allocation in Caldera's
gang scheduler) and Completed.

The session's three kwok nodes (kwok-node-0..2, 8 CPUs) are what the examples expect of the
dev stack's; its fourth node (rack-b's kwok-node-3) is simply absent here. The framework Jobs
are run by test_plugin_jobs, the CronJob by test_cronjob, the JobFlow by test_jobflow."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ApiException

from models import labels
from models.quantity import parse_quantity
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the pods naming `volcano`

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def _apply(api: client.ApiClient, ns: str, name: str) -> list[dict[str, Any]]:
    """Create every object of the example file, in order: namespaced ones in `ns`."""
    dynamic = DynamicClient(api)
    made = []
    for doc in _docs(name):
        resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        kwargs = {"namespace": ns} if resource.namespaced else {}
        made.append(resource.create(body=doc, **kwargs).to_dict())
    return made


@pytest.fixture
def cleanup(api: client.ApiClient, namespace: str) -> Iterator[list[dict[str, Any]]]:
    """Cluster-scoped objects a test created (Queues, HyperNodes), deleted last to first once
    the namespace's Volcano Jobs and their PodGroups are gone (a PodGroup holds its queue)."""
    created: list[dict[str, Any]] = []
    yield created
    custom = client.CustomObjectsApi(api)
    listed: Any = custom.list_namespaced_custom_object(*volcano.JOBS, namespace, "jobs")
    for job in listed["items"]:
        custom.delete_namespaced_custom_object(
            *volcano.JOBS, namespace, "jobs", job["metadata"]["name"]
        )
    eventually(lambda: not _groups(api, namespace), 90, f"the PodGroups of {namespace} gone")
    dynamic = DynamicClient(api)
    for obj in reversed(created):
        resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        name = obj["metadata"]["name"]
        # The webhook may still see a child queue deleted a moment ago.
        eventually(lambda r=resource, n=name: _deleted(r, n), 30, f"{obj['kind']} {name} deleted")


def _deleted(resource: Any, name: str) -> bool:
    try:
        resource.delete(name=name)
    except ApiException as e:
        if e.status == 404:
            return True
        if e.status in (400, 403):  # refused by the webhook: try again
            return False
        raise
    return True


def _groups(api: client.ApiClient, ns: str) -> list[dict[str, Any]]:
    listed: Any = client.CustomObjectsApi(api).list_namespaced_custom_object(
        PODGROUPS[0], PODGROUPS[1], ns, PODGROUPS[2]
    )
    groups: list[dict[str, Any]] = listed["items"]
    return groups


def _pods(api: client.ApiClient, ns: str, selector: str = "") -> list[client.V1Pod]:
    return list(client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=selector).items)


def _cpu(resources: dict[str, Any] | None) -> Fraction:
    return parse_quantity((resources or {}).get("cpu") or "0")


def _allocated_cpu(api: client.ApiClient, queue: str) -> Fraction:
    return _cpu((volcano.queue(api, queue).get("status") or {}).get("allocated"))


def _all_completed(api: client.ApiClient, ns: str, names: list[str]) -> bool:
    phases = [
        (volcano.job(api, ns, n).get("status") or {}).get("state", {}).get("phase") for n in names
    ]
    return all(p == "Completed" for p in phases)


def test_hierarchical_queues_share_the_parents_capacity_and_their_jobs_complete(
    api: client.ApiClient,
    namespace: str,
    scheduler_conf: Path,
    cleanup: list[dict[str, Any]],
) -> None:
    # Written before the Jobs exist: every session after this reads it.
    scheduler_conf.write_text((EXAMPLES / "queues" / "volcano-scheduler.conf").read_text())
    queues = _apply(api, namespace, "queues/hierarchical-queues.yaml")
    cleanup.extend(queues)
    for queue in queues:
        volcano.state_becomes(api, queue["metadata"]["name"], "Open")
    jobs = [j["metadata"]["name"] for j in _apply(api, namespace, "queues/hierarchical-jobs.yaml")]
    assert jobs == ["nlp-train", "vision-a", "vision-b"]

    vision_running: list[int] = []  # pods of vision-a and vision-b Running, at each look

    def allocated() -> bool:
        vision_running.append(_running_besides(api, namespace, "nlp-train"))
        cpus = (_allocated_cpu(api, "research-nlp"), _allocated_cpu(api, "research-vision"))
        return cpus == (4, 2)

    # research-nlp holds its guarantee while research-vision holds the 2 CPUs left of 6.
    eventually(allocated, 90, "research-nlp 4 CPUs and research-vision 2 allocated at once")

    def completed() -> bool:
        vision_running.append(_running_besides(api, namespace, "nlp-train"))
        return _all_completed(api, namespace, jobs)

    eventually(completed, 120, "nlp-train, vision-a and vision-b Completed")
    assert max(vision_running) == 1  # the two vision Jobs ran one after the other


def _running_besides(api: client.ApiClient, ns: str, job: str) -> int:
    running = [p for p in _pods(api, ns) if p.status.phase == "Running"]
    return sum(p.metadata.labels.get("volcano.sh/job-name") != job for p in running)


def _members(doc: dict[str, Any]) -> set[str]:
    return {m["selector"]["exactMatch"]["name"] for m in doc["spec"]["members"]}


def test_rack_local_gang_is_placed_within_one_rack_and_completes(
    api: client.ApiClient, namespace: str, cleanup: list[dict[str, Any]]
) -> None:
    hyper_nodes = _apply(api, namespace, "network-topology/hypernodes.yaml")
    cleanup.extend(hyper_nodes)
    racks = {h["metadata"]["name"]: _members(h) for h in hyper_nodes if h["spec"]["tier"] == 1}
    assert sorted(racks) == ["rack-a", "rack-b"]
    [job] = _apply(api, namespace, "network-topology/topology-job.yaml")
    name = job["metadata"]["name"]

    def bound() -> list[str] | None:
        nodes = [p.spec.node_name for p in _pods(api, namespace) if p.spec.node_name]
        return nodes if len(nodes) == 3 else None

    nodes = set(eventually(bound, 90, f"the three pods of {name} bound"))
    assert [r for r, members in racks.items() if nodes <= members], nodes
    [group] = _groups(api, namespace)
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    volcano.phase_becomes(api, namespace, name, "Completed", timeout=90)


def test_managed_by_batch_job_is_run_by_caldera_to_complete(
    api: client.ApiClient, namespace: str
) -> None:
    [made] = _apply(api, namespace, "workloads/batch-job.yaml")
    name = made["metadata"]["name"]
    batch = client.BatchV1Api(api)

    def complete() -> client.V1Job | None:
        job = batch.read_namespaced_job(name, namespace)
        conditions = job.status.conditions or []
        return job if any(c.type == "Complete" and c.status == "True" for c in conditions) else None

    job = eventually(complete, 120, f"job {name} Complete")
    assert job.spec.managed_by == "caldera.dev/job-controller"
    assert (job.status.succeeded, job.status.failed or 0) == (4, 0)


def _gang_running(api: client.ApiClient, ns: str, app: str) -> list[client.V1Pod] | None:
    pods = _pods(api, ns, f"app={app}")
    running = [p for p in pods if p.status.phase == "Running" and p.spec.node_name]
    return running if len(running) == 3 else None


def _check_gang(api: client.ApiClient, ns: str, app: str, owner_kind: str) -> None:
    """Three Running pods of one PodGroup of minMember 3 in `default`, owned by `owner_kind`,
    and the workload (Deployment or StatefulSet `app`) 3/3 ready."""
    pods = eventually(lambda: _gang_running(api, ns, app), 90, f"three {app} pods Running")
    assert {p.spec.scheduler_name for p in pods} == {"volcano"}  # so Caldera bound them
    [group_name] = {p.metadata.annotations.get(labels.GROUP_NAME) for p in pods}
    [group] = [g for g in _groups(api, ns) if g["metadata"]["name"] == group_name]
    assert (group["spec"]["minMember"], group["spec"]["queue"]) == (3, "default")
    assert _cpu(group["spec"]["minResources"]) == Fraction(3, 2)
    [owner] = group["metadata"]["ownerReferences"]
    assert owner["kind"] == owner_kind
    apps = client.AppsV1Api(api)
    read = (
        apps.read_namespaced_stateful_set
        if owner_kind == "StatefulSet"
        else (apps.read_namespaced_deployment)
    )
    eventually(lambda: read(app, ns).status.ready_replicas == 3, 60, f"{app} 3/3 ready")


def test_deployment_gang_gets_one_podgroup_and_runs_its_replicas(
    api: client.ApiClient, namespace: str
) -> None:
    _apply(api, namespace, "workloads/deployment-gang.yaml")
    _check_gang(api, namespace, "web", "ReplicaSet")


def test_statefulset_gang_gets_one_podgroup_and_runs_its_replicas(
    api: client.ApiClient, namespace: str
) -> None:
    _apply(api, namespace, "workloads/statefulset-gang.yaml")
    _check_gang(api, namespace, "db", "StatefulSet")
    pods = sorted(p.metadata.name for p in _pods(api, namespace, "app=db"))
    assert pods == ["db-0", "db-1", "db-2"]


def _three_running(api: client.ApiClient, ns: str, selector: str) -> list[client.V1Pod]:
    """An example's three pods (by label `selector`), once all are Running."""

    def running() -> list[client.V1Pod] | None:
        pods = _pods(api, ns, selector)
        return pods if len(pods) == 3 and all(p.status.phase == "Running" for p in pods) else None

    found: list[client.V1Pod] = eventually(running, 90, f"three pods {selector} Running")
    return found


def test_kubernetes_gang_example_runs_its_three_pods_and_marks_its_podgroup(
    api: client.ApiClient, namespace: str
) -> None:
    _apply(api, namespace, "workloads/kubernetes-gang.yaml")
    pods = _three_running(api, namespace, "app=kube-gang")
    assert len({p.metadata.annotations[labels.GROUP_NAME] for p in pods}) == 1
    custom = client.CustomObjectsApi(api)

    def marked() -> bool:
        group: Any = custom.get_namespaced_custom_object(
            "scheduling.k8s.io", "v1beta1", namespace, "podgroups", "train-workers"
        )
        conditions = (group.get("status") or {}).get("conditions") or []
        return any(
            c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "True" for c in conditions
        )

    eventually(marked, 30, "PodGroupInitiallyScheduled=True on train-workers")


def test_kubernetes_gang_job_example_runs_its_three_pods_through_its_podgroup(
    api: client.ApiClient, namespace: str
) -> None:
    _apply(api, namespace, "workloads/kubernetes-gang-job.yaml")
    pods = _three_running(api, namespace, "job-name=train-gang")
    [named] = {p.spec.scheduling_group.pod_group_name for p in pods}
    [mirror_name] = {p.metadata.annotations[labels.GROUP_NAME] for p in pods}
    [mirror] = [g for g in _groups(api, namespace) if g["metadata"]["name"] == mirror_name]
    assert (mirror["spec"]["minMember"], mirror["spec"]["queue"]) == (3, "default")
    [owner] = mirror["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("PodGroup", named)


def _claim_of(api: client.ApiClient, pod: client.V1Pod) -> Any:
    """The ResourceClaim kube-controller-manager made for the pod's `gpu` entry, or None."""
    statuses = pod.status.resource_claim_statuses or []
    [name] = [s.resource_claim_name for s in statuses if s.name == "gpu"] or [None]
    if not name:
        return None
    return client.ResourceV1Api(api).read_namespaced_resource_claim(name, pod.metadata.namespace)


def _claims(api: client.ApiClient, ns: str) -> list[Any]:
    return list(client.ResourceV1Api(api).list_namespaced_resource_claim(ns).items)


def test_gpu_gang_gets_a_device_of_its_node_for_each_pod_and_completes(
    api: client.ApiClient, namespace: str, cleanup: list[dict[str, Any]]
) -> None:
    """Needs Dynamic Resource Allocation in Caldera's gang scheduler: the claims are allocated
    and reserved by the session that places the gang, from the fake `gpu.caldera.dev` driver's
    slices the session's nodes publish (tests/e2e/test_devices_stack.py: the same objects with
    kube-scheduler)."""
    made = _apply(api, namespace, "devices/gpu-job.yaml")
    assert [d["kind"] for d in made] == ["ResourceClaimTemplate", "Job"]
    name = made[1]["metadata"]["name"]

    def bound() -> list[client.V1Pod] | None:
        pods = [p for p in _pods(api, namespace) if p.spec.node_name]
        return pods if len(pods) == 2 else None

    pods = eventually(bound, 90, f"the two pods of {name} bound")
    devices_given = set()
    for pod in pods:
        claim = _claim_of(api, pod)
        assert claim is not None and claim.status.allocation, pod.metadata.name
        [result] = claim.status.allocation.devices.results
        assert (result.driver, result.pool) == ("gpu.caldera.dev", pod.spec.node_name)
        assert pod.metadata.uid in {r.uid for r in claim.status.reserved_for or []}
        devices_given.add((result.pool, result.device))
    assert len(devices_given) == 2  # one device each, never the same one twice
    volcano.phase_becomes(api, namespace, name, "Completed", timeout=90)

    # The ResourceClaim controller deletes a pod's generated claim once the pod is done.
    eventually(lambda: not _claims(api, namespace), 60, f"the claims of {name}'s pods deleted")
