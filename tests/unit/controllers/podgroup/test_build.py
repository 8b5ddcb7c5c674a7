"""The PodGroup built for a pod Caldera did not create, as Volcano's buildPodGroupFromPod and
its tests have it."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.podgroup import build
from models import labels
from models.meta import OwnerReference
from models.signals.podgroup import WorkloadPod

pytestmark = pytest.mark.unit

RS = OwnerReference(
    api_version="apps/v1", kind="ReplicaSet", name="rs1", uid="rs-uid", controller=True
)


def pod(owners: tuple[OwnerReference, ...] = (RS,), **fields: Any) -> WorkloadPod:
    base: dict[str, Any] = {
        "namespace": "ns",
        "name": "pod1",
        "uid": "pod-uid",
        "owner_references": list(owners),
        "requests": {"cpu": "1", "memory": "0", "pods": "1"},
    }
    return WorkloadPod(**{**base, **fields})


NAME_CASES = [
    pytest.param((RS,), "podgroup-rs-uid", id="controller-owner"),
    pytest.param((), "podgroup-pod-uid", id="bare-pod"),
    pytest.param(
        (RS.model_copy(update={"controller": None}),), "podgroup-pod-uid", id="no-controller"
    ),
]


@pytest.mark.parametrize(("owners", "name"), NAME_CASES)
def test_group_name_owner_or_pod_uid(owners: tuple[OwnerReference, ...], name: str) -> None:
    assert build.group_name(pod(owners)) == name


def test_owner_references_copied_when_a_controller_owns_the_pod() -> None:
    assert build.owner_references(pod()) == [RS]


def test_owner_references_name_the_pod_when_bare() -> None:
    assert build.owner_references(pod(())) == [
        OwnerReference(
            api_version="v1",
            kind="Pod",
            name="pod1",
            uid="pod-uid",
            controller=True,
            block_owner_deletion=True,
        )
    ]


MIN_MEMBER_CASES = [
    pytest.param({}, 1, id="absent"),
    pytest.param({labels.GROUP_MIN_MEMBER: "3"}, 3, id="three"),
    pytest.param({labels.GROUP_MIN_MEMBER: "0"}, 0, id="zero"),
    pytest.param({labels.GROUP_MIN_MEMBER: "-2"}, 1, id="negative"),
    pytest.param({labels.GROUP_MIN_MEMBER: "two"}, 1, id="not-a-number"),
    pytest.param({labels.GROUP_MIN_MEMBER: " 3"}, 1, id="space"),
    pytest.param({labels.GROUP_MIN_MEMBER: "4294967296"}, 1, id="past-int32"),
]


@pytest.mark.parametrize(("upper", "expected"), MIN_MEMBER_CASES)
def test_min_member_from_owner_annotation(upper: dict[str, str], expected: int) -> None:
    assert build.min_member(upper) == expected


def test_pod_group_sized_by_min_member() -> None:
    group = build.pod_group(pod(priority_class_name="high"), {labels.GROUP_MIN_MEMBER: "3"})
    assert group.dump() == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "podgroup-rs-uid",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "rs1",
                    "uid": "rs-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "minMember": 3,
            "minResources": {"cpu": "3", "pods": "3"},
            "queue": "default",
            "priorityClassName": "high",
        },
    }


def test_queue_from_pod_annotation() -> None:
    group = build.pod_group(pod(annotations={labels.POD_QUEUE_NAME: "q1"}), {})
    assert group.spec.queue == "q1"


ANNOTATION_CASES = [
    pytest.param(
        {labels.JDB_MIN_AVAILABLE: "2", "volcano.sh/custom": "v", "other.io/x": "y"},
        {labels.JDB_MIN_AVAILABLE: "1"},
        {labels.JDB_MIN_AVAILABLE: "1", "volcano.sh/custom": "v"},
        id="pod-min-available-overrides-owner",
    ),
    pytest.param(
        {labels.JDB_MAX_UNAVAILABLE: "20%"},
        {},
        {labels.JDB_MAX_UNAVAILABLE: "20%"},
        id="owner-max-unavailable-inherited",
    ),
    pytest.param(
        {},
        {labels.JDB_MIN_AVAILABLE: "1", labels.JDB_MAX_UNAVAILABLE: "2"},
        {labels.JDB_MIN_AVAILABLE: "1"},
        id="pod-min-available-before-max-unavailable",
    ),
    pytest.param(
        {},
        {labels.PREEMPTABLE: "true", labels.COOLDOWN_TIME: "60s", labels.REVOCABLE_ZONE: "*"},
        {labels.PREEMPTABLE: "true", labels.COOLDOWN_TIME: "60s", labels.REVOCABLE_ZONE: "*"},
        id="pod-preemptable-cooldown-zone",
    ),
    pytest.param({labels.GROUP_MIN_MEMBER: "2"}, {}, None, id="min-member-not-copied"),
]


@pytest.mark.parametrize(("upper", "notes", "expected"), ANNOTATION_CASES)
def test_annotations_inherited_then_pod_on_top(
    upper: dict[str, str], notes: dict[str, str], expected: dict[str, str] | None
) -> None:
    assert build.pod_group(pod(annotations=notes), upper).metadata.annotations == expected


def test_labels_from_pod() -> None:
    group = build.pod_group(pod(labels={labels.COOLDOWN_TIME: "60s"}), {})
    assert group.metadata.labels == {labels.COOLDOWN_TIME: "60s"}


TOPOLOGY_CASES = [
    pytest.param({}, None, id="none"),
    pytest.param({labels.NETWORK_TOPOLOGY_MODE: "Soft"}, {"mode": "soft"}, id="soft"),
    pytest.param({labels.NETWORK_TOPOLOGY_MODE: "odd"}, {"mode": "hard"}, id="unknown-mode"),
    pytest.param(
        {labels.NETWORK_TOPOLOGY_HIGHEST_TIER: "2"},
        {"mode": "hard", "highestTierAllowed": 2},
        id="tier-only",
    ),
    pytest.param({labels.NETWORK_TOPOLOGY_HIGHEST_TIER: "x"}, {"mode": "hard"}, id="bad-tier"),
]


@pytest.mark.parametrize(("notes", "expected"), TOPOLOGY_CASES)
def test_network_topology_from_pod(notes: dict[str, str], expected: object) -> None:
    topology = build.pod_group(pod(annotations=notes), {}).spec.network_topology
    assert (topology.dump() if topology is not None else None) == expected


@pytest.mark.parametrize(
    ("key", "read"),
    [
        pytest.param(labels.GROUP_MIN_MEMBER, True, id="min-member"),
        pytest.param("volcano.sh/anything", True, id="volcano-prefix"),
        pytest.param(labels.POD_QUEUE_NAME, False, id="queue-not-inherited"),
        pytest.param("kubectl.kubernetes.io/last-applied-configuration", False, id="other"),
    ],
)
def test_inherited_keys(key: str, read: bool) -> None:
    assert build.inherited(key) is read
