"""Pods that name a Kubernetes PodGroup (scheduling.k8s.io, KEP-4671): the PodGroup controller
mirrors that PodGroup into a Volcano PodGroup, whatever owns the pods, and waits for it when
the pods come first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controllers import effects as fx
from controllers.podgroup import build, controller
from controllers.podgroup import effects as pg_fx
from controllers.podgroup.state import PodGroupRecord
from models import kube_gangs, labels
from models.meta import OwnerReference
from models.signals import podgroup as podgroup_signals

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 7, tzinfo=UTC)
JOB = OwnerReference(
    api_version="batch/v1", kind="Job", name="train", uid="job-uid", controller=True
)
CORE = podgroup_signals.CoreGroup(
    namespace="ns",
    name="train-pg",
    uid="pg-uid",
    min_member=3,
    annotations={labels.QUEUE_NAME: "research"},
    workload="train-wl",
)


def pod(name: str, owners: list[OwnerReference] | None = None) -> podgroup_signals.WorkloadPod:
    return podgroup_signals.WorkloadPod(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        owner_references=owners or [],
        requests={"cpu": "2", "pods": "1"},
        annotations={labels.POD_QUEUE_NAME: "pods-own"},
        scheduling_group="train-pg",
    )


def applied(decision: controller.Decision) -> pg_fx.ApplyPodGroup:
    (apply,) = [e for e in decision.effects if isinstance(e, pg_fx.ApplyPodGroup)]
    return apply


def test_a_pod_naming_a_kubernetes_podgroup_is_in_that_gang_not_its_owners() -> None:
    assert build.gang_key(pod("p0", [JOB])) == "scheduling.k8s.io/podgroups/train-pg"
    assert build.gang_key(pod("p0", [JOB]).model_copy(update={"scheduling_group": ""})) == "job-uid"


def test_the_mirror_takes_min_count_queue_and_ownership_from_the_kubernetes_podgroup() -> None:
    group = build.pod_group(pod("p0", [JOB]), {labels.GROUP_MIN_MEMBER: "7"}, CORE)
    assert group.metadata.name == "podgroup-pg-uid"
    assert group.spec.min_member == 3  # minCount, not the owner's group-min-member
    assert group.spec.min_resources == {"cpu": "6", "pods": "3"}
    assert group.spec.queue == "research"  # the PodGroup's, before the pod's own
    (owner,) = group.metadata.owner_references or []
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller) == (
        kube_gangs.API_VERSION,
        "PodGroup",
        "train-pg",
        "pg-uid",
        True,
    )


def test_the_queue_falls_back_to_the_workload_then_to_the_pod() -> None:
    bare = CORE.model_copy(update={"annotations": {}})
    from_workload = build.pod_group(pod("p0"), {labels.QUEUE_NAME: "wl-queue"}, bare)
    assert from_workload.spec.queue == "wl-queue"
    assert build.pod_group(pod("p0"), {}, bare).spec.queue == "pods-own"


def test_pods_that_come_before_their_podgroup_wait_for_it_then_are_annotated() -> None:
    state = PodGroupRecord()
    for name in ("p0", "p1"):
        decision = controller.decide(state, podgroup_signals.WorkloadPodSeen(pod=pod(name)), NOW)
        # nothing read, nothing applied: only the idle timer, until the PodGroup comes
        assert all(isinstance(e, fx.StartTimer) for e in decision.effects)
        state = decision.state
    decision = controller.decide(state, podgroup_signals.CoreGroupSeen(group=CORE), NOW)
    (read,) = [e for e in decision.effects if isinstance(e, pg_fx.ReadOwners)]
    assert [o.kind for o in read.owners] == ["Workload"]  # its annotations are read first
    decision = controller.decide(decision.state, controller.OwnersRead(annotations={}), NOW)
    apply = applied(decision)
    assert apply.group is not None and apply.group.spec.min_member == 3
    assert apply.group_name == "podgroup-pg-uid"
    assert apply.pods == {"p0": "uid-p0", "p1": "uid-p1"}


def test_a_lowered_min_count_is_applied_to_the_mirror() -> None:
    state = PodGroupRecord()
    seen = podgroup_signals.WorkloadPodSeen(pod=pod("p0"), core=CORE)
    state = controller.decide(state, seen, NOW).state
    state = controller.decide(state, controller.OwnersRead(annotations={}), NOW).state
    lowered = CORE.model_copy(update={"min_member": 2, "generation": 2})
    decision = controller.decide(state, podgroup_signals.CoreGroupSeen(group=lowered), NOW)
    decision = controller.decide(decision.state, controller.OwnersRead(annotations={}), NOW)
    group = applied(decision).group
    assert group is not None and group.spec.min_member == 2


def test_a_run_started_by_the_podgroup_s_change_builds_the_mirror_from_the_pod_it_carries() -> None:
    """The gang waited past the idle time (its run ended) and then its minCount was lowered:
    the new run has no pod of its own but the one the forwarder sends with the PodGroup."""
    lowered = CORE.model_copy(update={"min_member": 2, "generation": 2})
    seen = podgroup_signals.CoreGroupSeen(group=lowered, pod=pod("p0", [JOB]))
    decision = controller.decide(PodGroupRecord(), seen, NOW)
    (read,) = [e for e in decision.effects if isinstance(e, pg_fx.ReadOwners)]
    assert [o.kind for o in read.owners] == ["Workload", "Job"]
    decision = controller.decide(decision.state, controller.OwnersRead(annotations={}), NOW)
    group = applied(decision).group
    assert group is not None and group.spec.min_member == 2
    assert group.metadata.name == "podgroup-pg-uid"
