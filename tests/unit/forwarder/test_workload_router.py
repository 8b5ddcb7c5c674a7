"""Pods Caldera did not create, through the router: which reach a PodGroupWorkflow, under which
id, and when the scheduler is woken."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder import signaller
from forwarder.routing import envelopes, router
from models import batchv1, labels
from models.signals import podgroup as podgroup_signals
from tests.unit.forwarder.inbound import added, deleted, modified, route_all

pytestmark = pytest.mark.unit

K = envelopes.Kind
RS_REF = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "web-1",
    "uid": "rs-uid",
    "controller": True,
}
VCJOB_REF = {**RS_REF, "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "uid": "vc"}
BATCH_REF = {**RS_REF, "apiVersion": "batch/v1", "kind": "Job", "uid": "batch-uid"}


def pod(
    uid: str = "pod-uid",
    owners: tuple[dict[str, Any], ...] = (RS_REF,),
    scheduler: str = "volcano",
    notes: dict[str, str] | None = None,
    deleting: bool = False,
    node: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"web-{uid}",
        "namespace": "ns",
        "uid": uid,
        "ownerReferences": list(owners),
        "annotations": notes or {},
    }
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def managed_job() -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "namespace": "ns", "uid": "batch-uid"},
        "spec": {"managedBy": batchv1.CONTROLLER_NAME},
    }


GROUPED = {labels.GROUP_NAME: "podgroup-rs-uid"}
ROUTE_CASES = [
    pytest.param(pod(), "podgroup/ns/rs-uid", id="replicaset-pod"),
    pytest.param(pod(owners=()), "podgroup/ns/pod-uid", id="bare-pod"),
    pytest.param(pod(owners=(BATCH_REF,)), "podgroup/ns/batch-uid", id="unmanaged-batch-job"),
    pytest.param(pod(scheduler="default-scheduler"), None, id="other-scheduler"),
    pytest.param(pod(notes=GROUPED), None, id="has-group-name"),
    pytest.param(pod(deleting=True), None, id="deleting"),
    pytest.param(pod(owners=(VCJOB_REF,)), None, id="volcano-job-pod"),
]


@pytest.mark.parametrize(("obj", "workflow_id"), ROUTE_CASES)
def test_pod_added_routed_to_its_gang(obj: dict[str, Any], workflow_id: str | None) -> None:
    out = router.Router().route(added(K.WORKLOAD_POD, obj))
    if workflow_id is None:
        assert out == []
        return
    [signal] = out
    assert isinstance(signal, envelopes.Signal)
    assert (signal.target.workflow_id, signal.name, signal.start) == (
        workflow_id,
        podgroup_signals.SIGNAL_WORKLOAD_POD_SEEN,
        True,
    )


def test_caldera_batch_job_pod_not_routed() -> None:
    r = router.Router()
    r.route(added(K.BATCH_JOB, managed_job()))
    assert r.route(added(K.WORKLOAD_POD, pod(owners=(BATCH_REF,)))) == []


def test_caldera_batch_job_pod_naming_a_kubernetes_podgroup_goes_to_its_gang() -> None:
    r = router.Router()
    r.route(added(K.BATCH_JOB, managed_job()))
    named = pod(owners=(BATCH_REF,))
    named["spec"]["schedulingGroup"] = {"podGroupName": "train-pg"}
    [signal] = r.route(added(K.WORKLOAD_POD, named))
    assert isinstance(signal, envelopes.Signal)
    assert signal.target.workflow_id == "podgroup/ns/scheduling.k8s.io/podgroups/train-pg"
    assert signal.name == podgroup_signals.SIGNAL_WORKLOAD_POD_SEEN


def test_payload_carries_what_the_podgroup_reads() -> None:
    notes = {labels.POD_QUEUE_NAME: "q1", "kubectl.kubernetes.io/last-applied": "{}"}
    [signal] = router.Router().route(added(K.WORKLOAD_POD, pod(notes=notes)))
    assert isinstance(signal, envelopes.Signal) and isinstance(
        signal.payload, podgroup_signals.WorkloadPodSeen
    )
    seen = signal.payload.pod
    assert seen.annotations == {labels.POD_QUEUE_NAME: "q1"}
    assert seen.requests == {"cpu": "500m", "memory": "0", "pods": "1"}
    assert [r.uid for r in seen.owner_references] == ["rs-uid"]


def test_pod_sent_once_until_relisted() -> None:
    r = router.Router()
    first = route_all(r, added(K.WORKLOAD_POD, pod()), modified(K.WORKLOAD_POD, pod()))
    assert len(first) == 1
    again = r.route(envelopes.Relisted(K.WORKLOAD_POD, [pod()]))
    assert len(again) == 1


def test_an_annotated_pod_is_forgotten_and_sends_nothing() -> None:
    """Its scheduler hears of it from the worker's cluster cache (`scheduling.cache.arrivals`)."""
    r = router.Router()
    r.route(added(K.WORKLOAD_POD, pod()))
    out = route_all(
        r,
        modified(K.WORKLOAD_POD, pod(notes=GROUPED)),
        modified(K.WORKLOAD_POD, pod()),
    )
    assert len(out) == 1  # only the un-annotated pod seen again after being forgotten


def test_deleted_pod_forgotten() -> None:
    r = router.Router()
    out = route_all(r, added(K.WORKLOAD_POD, pod()), deleted(K.WORKLOAD_POD, pod()))
    assert len(out) == 1
    assert r.route(modified(K.WORKLOAD_POD, pod(notes=GROUPED))) == []


def test_signaller_summary_names_the_gang() -> None:
    target = envelopes.WorkloadRef("ns", "rs-uid")
    assert signaller.summary(target) == "PodGroup of ns pods controlled by rs-uid"
    assert target.workflow_id == "podgroup/ns/rs-uid"


def kube_group(min_count: int = 3, uid: str = "pg-uid", generation: int = 1) -> dict[str, Any]:
    """A Kubernetes PodGroup (scheduling.k8s.io/v1beta1) as the apiserver sends it."""
    return {
        "metadata": {
            "name": "train",
            "namespace": "ns",
            "uid": uid,
            "generation": generation,
            "annotations": {labels.QUEUE_NAME: "q1", "other.io/x": "y"},
        },
        "spec": {
            "workloadRef": {"workloadName": "wl", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
        },
        "status": {},
    }


def naming(uid: str = "pod-uid") -> dict[str, Any]:
    obj = pod(uid=uid, owners=(BATCH_REF,))
    obj["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    return obj


def test_a_pod_naming_a_kubernetes_podgroup_goes_to_that_podgroups_gang_with_it() -> None:
    r = router.Router()
    assert r.route(added(K.KUBE_POD_GROUP, kube_group())) == []  # no pod of ours names it yet
    [signal] = r.route(added(K.WORKLOAD_POD, naming()))
    assert isinstance(signal, envelopes.Signal)
    assert signal.target.workflow_id == "podgroup/ns/scheduling.k8s.io/podgroups/train"
    seen = signal.payload
    assert isinstance(seen, podgroup_signals.WorkloadPodSeen) and seen.core is not None
    assert seen.pod.scheduling_group == "train"
    assert (seen.core.uid, seen.core.min_member, seen.core.workload) == ("pg-uid", 3, "wl")
    assert seen.core.annotations == {labels.QUEUE_NAME: "q1"}


def test_a_named_kubernetes_podgroup_is_sent_when_it_comes_and_when_it_changes() -> None:
    r = router.Router()
    [_] = r.route(added(K.WORKLOAD_POD, naming()))  # the pod first: no PodGroup to carry
    [came] = r.route(added(K.KUBE_POD_GROUP, kube_group()))
    assert isinstance(came, envelopes.Signal)
    assert came.name == podgroup_signals.SIGNAL_CORE_GROUP_SEEN and came.start
    assert r.route(modified(K.KUBE_POD_GROUP, kube_group())) == []  # a status write: same
    [lowered] = r.route(modified(K.KUBE_POD_GROUP, kube_group(min_count=2, generation=2)))
    assert isinstance(lowered.payload, podgroup_signals.CoreGroupSeen)
    assert lowered.payload.group.min_member == 2


def test_a_basic_policy_is_a_gang_of_one() -> None:
    obj = kube_group()
    obj["spec"]["schedulingPolicy"] = {"basic": {}}
    r = router.Router()
    r.route(added(K.WORKLOAD_POD, naming()))
    [signal] = r.route(added(K.KUBE_POD_GROUP, obj))
    assert isinstance(signal.payload, podgroup_signals.CoreGroupSeen)
    assert signal.payload.group.min_member == 1


def test_the_mirroring_workflow_s_summary_names_the_kubernetes_podgroup() -> None:
    target = envelopes.WorkloadRef("ns", "scheduling.k8s.io/podgroups/train")
    assert signaller.summary(target) == (
        "Volcano PodGroup mirroring scheduling.k8s.io PodGroup ns/train"
    )


def test_a_podgroup_s_change_carries_the_newest_pod_that_names_it_even_annotated() -> None:
    r = router.Router()
    r.route(added(K.KUBE_POD_GROUP, kube_group()))
    r.route(added(K.WORKLOAD_POD, naming()))
    annotated = naming()
    annotated["metadata"]["annotations"] = {labels.GROUP_NAME: "podgroup-pg-uid"}
    assert r.route(modified(K.WORKLOAD_POD, annotated)) == []  # its workflow annotated it
    [changed] = r.route(modified(K.KUBE_POD_GROUP, kube_group(min_count=2, generation=2)))
    assert isinstance(changed.payload, podgroup_signals.CoreGroupSeen)
    assert changed.payload.pod is not None and changed.payload.pod.name == "web-pod-uid"
