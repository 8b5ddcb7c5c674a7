"""What a session writes back, and that it writes only what changed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api.result import ConditionType, JobCondition, PhaseUpdate, PodCondition, PodReason
from scheduling.api.snapshot import PodKey
from scheduling.api.vectors import Resources
from scheduling.cache.observed import ObservedGroup, ObservedPod, ObservedQueue
from scheduling.cache.writes import (
    GroupStatusWrite,
    JobNotice,
    KubeGroupWrite,
    PodScheduledWrite,
    QueueAllocatedWrite,
    group_writes,
    kube_group_writes,
    pod_scheduled_writes,
    queue_allocated_writes,
    volcano_job,
)
from tests.unit.scheduling.cache_builders import (
    batch_owner,
    condition,
    group,
    group_obj,
    other_owner,
    pod,
    pod_obj,
    queue,
    vcjob_owner,
)

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
G, R = PodGroupPhase, PodReason
U, S = ConditionType.UNSCHEDULABLE, ConditionType.SCHEDULED
SESSION = 7


def phase(job: str, old: PodGroupPhase, new: PodGroupPhase) -> PhaseUpdate:
    return PhaseUpdate(job=JobKey(f"default/{job}"), old=old, new=new)


def cond(job: str, type_: ConditionType, message: str, reason: str = "") -> JobCondition:
    return JobCondition(job=JobKey(f"default/{job}"), type=type_, reason=reason, message=message)


def written(type_: str, message: str, reason: str = "") -> Obj:
    """A condition as this session (number SESSION) writes it."""
    return condition(type_, message, str(SESSION), reason=reason)


def notice(message: str, job: str = "a", uid: str = "uid-a") -> JobNotice:
    return JobNotice(namespace="default", job=job, uid=uid, message=message)


def status_write(
    conditions: list[Obj], phase_: str | None = "Inqueue", note: JobNotice | None = None
) -> GroupStatusWrite:
    return GroupStatusWrite("default", "a", phase_, tuple(conditions), note)


OWNED = [vcjob_owner("a")]
KEPT = condition("Other", "kept", lastTransitionTime="2025-01-01T00:00:00Z")

GROUP_WRITES = [
    pytest.param(
        [phase("a", G.PENDING, G.INQUEUE)],
        [],
        [group("a", "Pending", owners=OWNED)],
        [status_write([])],
        id="phase-changes",
    ),
    pytest.param(
        [phase("a", G.PENDING, G.INQUEUE)], [], [group("a", "Inqueue")], [], id="phase-already-so"
    ),
    pytest.param(
        [phase("a", G.PENDING, G.INQUEUE)], [], [group("b", "Pending")], [], id="group-gone"
    ),
    pytest.param(
        [],
        [cond("a", U, "0/1 nodes", reason="NotEnoughResources")],
        [group("a", "Pending", owners=OWNED)],
        [
            status_write(
                [written("Unschedulable", "0/1 nodes", "NotEnoughResources")],
                "Pending",
                notice("0/1 nodes"),
            )
        ],
        id="new-unschedulable-tells-the-job",
    ),
    pytest.param(
        [],
        [cond("a", U, "0/1 nodes")],
        [group("a", conditions=[condition("Unschedulable", "0/1 nodes", "3")], owners=OWNED)],
        [],
        id="same-message-no-write",
    ),
    pytest.param(
        [],
        [cond("a", U, "0/2 nodes")],
        [
            group(
                "a",
                conditions=[condition("Scheduled", "ok"), condition("Unschedulable", "0/1"), KEPT],
                owners=OWNED,
            )
        ],
        [
            status_write(
                [condition("Scheduled", "ok"), written("Unschedulable", "0/2 nodes"), KEPT],
                note=notice("0/2 nodes"),
            )
        ],
        id="changed-message-replaced-in-place",
    ),
    pytest.param(
        [],
        [cond("a", S, "ready")],
        [group("a", conditions=[KEPT], owners=OWNED)],
        [status_write([KEPT, written("Scheduled", "ready")])],
        id="new-type-appended-no-notice",
    ),
    pytest.param(
        [phase("a", G.INQUEUE, G.RUNNING)],
        [cond("a", U, "same")],
        [group("a", conditions=[condition("Unschedulable", "same"), KEPT], owners=OWNED)],
        [status_write([written("Unschedulable", "same"), KEPT], "Running")],
        id="phase-changes-unchanged-message-no-notice",
    ),
    pytest.param(
        [],
        [cond("a", U, "why")],
        [group("a", None, owners=[batch_owner("b")])],
        [status_write([written("Unschedulable", "why")], None)],
        id="no-phase-yet-and-no-volcano-job",
    ),
    pytest.param(
        [],
        [cond("a", U, "first"), cond("a", U, "last")],
        [group("a", owners=[other_owner("a"), vcjob_owner("a", uid="")])],
        [status_write([written("Unschedulable", "last")], note=notice("last", uid="uid-a"))],
        id="last-of-a-type-wins-uid-from-first-ref-of-that-name",
    ),
    pytest.param(
        [phase("b", G.PENDING, G.INQUEUE), phase("a", G.PENDING, G.INQUEUE)],
        [],
        [group("b", "Pending"), group("a", "Pending")],
        [status_write([]), GroupStatusWrite("default", "b", "Inqueue", (), None)],
        id="by-job-key",
    ),
]


@pytest.mark.parametrize(("updates", "conditions", "groups", "expected"), GROUP_WRITES)
def test_group_writes(
    updates: list[PhaseUpdate],
    conditions: list[JobCondition],
    groups: list[ObservedGroup],
    expected: list[GroupStatusWrite],
) -> None:
    by_key = {g.key: g for g in groups}
    assert group_writes(updates, conditions, by_key, SESSION) == expected


def test_the_status_patch_keeps_what_it_read_and_adds_the_new_conditions() -> None:
    groups = {JobKey("default/a"): group("a", conditions=[KEPT])}
    updates, conditions = [phase("a", G.INQUEUE, G.RUNNING)], [cond("a", S, "ready", "r")]
    [write] = group_writes(updates, conditions, groups, SESSION)
    assert write.key == "default/a"
    kept = {"type": "Other", "status": "True", "reason": "", "message": "kept"}
    fresh = {"type": "Scheduled", "status": "True", "reason": "r", "message": "ready"}
    assert write.status() == {
        "phase": "Running",
        "conditions": [
            {**kept, "transitionID": "1", "lastTransitionTime": "2025-01-01T00:00:00Z"},
            {**fresh, "transitionID": "7"},
        ],
    }


def test_a_group_status_read_back_writes_nothing_again() -> None:
    """The next session sees this one's writes: nothing changed, so nothing is written."""
    updates, conditions = [phase("a", G.PENDING, G.INQUEUE)], [cond("a", U, "0/1 nodes")]
    before = {JobKey("default/a"): group("a", "Pending", [KEPT], OWNED)}
    [write] = group_writes(updates, conditions, before, SESSION)
    seen = group_obj("a", owners=OWNED)
    seen["status"] = write.status()
    after = {JobKey("default/a"): ObservedGroup.parse(seen)}
    assert group_writes(updates, conditions, after, SESSION + 1) == []


VOLCANO_JOBS = [
    pytest.param([vcjob_owner("j")], "j", id="volcano-job"),
    pytest.param([batch_owner("b")], None, id="batch-job"),
    pytest.param([other_owner("j", kind="Job")], None, id="job-of-another-api"),
    pytest.param([other_owner("x"), vcjob_owner("j")], "j", id="not-first-owner"),
    pytest.param([], None, id="no-owners"),
]


@pytest.mark.parametrize(("owners", "expected"), VOLCANO_JOBS)
def test_volcano_job(owners: list[Obj], expected: str | None) -> None:
    assert volcano_job(group("a", owners=owners)) == expected


def wait(name: str, reason: PodReason, message: str) -> PodCondition:
    return PodCondition(pod=PodKey(f"default/{name}"), reason=reason, message=message)


def mark(name: str, reason: str, message: str) -> PodScheduledWrite:
    return PodScheduledWrite(namespace="default", pod=name, reason=reason, message=message)


POD_WRITES = [
    pytest.param(
        [wait("p", R.UNSCHEDULABLE, "0/1 nodes")],
        [pod("p")],
        [mark("p", "Unschedulable", "0/1 nodes")],
        id="first-time",
    ),
    pytest.param(
        [wait("p", R.UNSCHEDULABLE, "0/1 nodes")],
        [pod("p", scheduled=("Unschedulable", "0/1 nodes"))],
        [],
        id="unchanged",
    ),
    pytest.param(
        [wait("p", R.UNSCHEDULABLE, "0/2 nodes")],
        [pod("p", scheduled=("Unschedulable", "0/1 nodes"))],
        [mark("p", "Unschedulable", "0/2 nodes")],
        id="message-changed",
    ),
    pytest.param(
        [wait("p", R.SCHEDULABLE, "0/1 nodes")],
        [pod("p", scheduled=("Unschedulable", "0/1 nodes"))],
        [mark("p", "Schedulable", "0/1 nodes")],
        id="reason-changed",
    ),
    pytest.param(
        [wait("p", R.UNSCHEDULABLE, "0/1 nodes")],
        [pod("p", node="n1")],
        [],
        id="bound-meanwhile",
    ),
    pytest.param([wait("p", R.UNSCHEDULABLE, "0/1 nodes")], [], [], id="pod-gone"),
    pytest.param(
        [
            PodCondition(
                pod=PodKey("default/p"), reason=R.UNSCHEDULABLE, message="m", nominated_node="n1"
            )
        ],
        [pod("p", scheduled=("Unschedulable", "m"))],
        [PodScheduledWrite("default", "p", "Unschedulable", "m", nominated_node="n1")],
        id="pipelined-nominates-its-node",
    ),
    pytest.param(
        [
            PodCondition(
                pod=PodKey("default/p"), reason=R.UNSCHEDULABLE, message="m", nominated_node="n1"
            )
        ],
        [
            ObservedPod.parse(
                {
                    **pod_obj("p", scheduled=("Unschedulable", "m")),
                    "status": {
                        **pod_obj("p", scheduled=("Unschedulable", "m"))["status"],
                        "nominatedNodeName": "n1",
                    },
                }
            )
        ],
        [],
        id="already-nominated",
    ),
    pytest.param(
        [wait("b", R.SCHEDULABLE, "gang"), wait("a", R.UNSCHEDULABLE, "cpu")],
        [pod("a"), pod("b")],
        [mark("b", "Schedulable", "gang"), mark("a", "Unschedulable", "cpu")],
        id="in-decision-order",
    ),
]


@pytest.mark.parametrize(("conditions", "pods", "expected"), POD_WRITES)
def test_pod_scheduled_writes(
    conditions: list[PodCondition], pods: list[ObservedPod], expected: list[PodScheduledWrite]
) -> None:
    assert pod_scheduled_writes(conditions, {p.key: p for p in pods}) == expected


def _allocated(**quantities: str) -> Resources:
    return Resources.from_resource_list(quantities)


QUEUE_WRITES = [
    pytest.param(
        {"q": _allocated(cpu="2", memory="1Gi")},
        [queue("q", {"cpu": "2", "memory": "1073741824"})],
        [],
        id="unchanged",
    ),
    pytest.param({"q": _allocated()}, [queue("q")], [], id="idle-and-nothing-written"),
    pytest.param(
        {"q": _allocated()}, [queue("q", {"cpu": "0m", "memory": "0"})], [], id="idle-and-zeros"
    ),
    pytest.param(
        {"q": _allocated(cpu="2")},
        [queue("q")],
        [QueueAllocatedWrite(QueueName("q"), {"cpu": "2", "memory": "0"})],
        id="first-allocation",
    ),
    pytest.param(
        {"q": _allocated(cpu="1")},
        [queue("q", {"cpu": "2", "memory": "0", "nvidia.com/gpu": "1"})],
        [QueueAllocatedWrite(QueueName("q"), {"cpu": "1", "memory": "0", "nvidia.com/gpu": None})],
        id="released-resources-nulled",
    ),
    pytest.param({"gone": _allocated(cpu="1")}, [queue("q")], [], id="queue-gone"),
    pytest.param(
        {"b": _allocated(cpu="1"), "a": _allocated(cpu="1")},
        [queue("a"), queue("b")],
        [
            QueueAllocatedWrite(QueueName("a"), {"cpu": "1", "memory": "0"}),
            QueueAllocatedWrite(QueueName("b"), {"cpu": "1", "memory": "0"}),
        ],
        id="by-queue-name",
    ),
]


@pytest.mark.parametrize(("allocated", "queues", "expected"), QUEUE_WRITES)
def test_queue_allocated_writes(
    allocated: dict[str, Resources],
    queues: list[ObservedQueue],
    expected: list[QueueAllocatedWrite],
) -> None:
    wanted = {QueueName(k): v for k, v in allocated.items()}
    assert queue_allocated_writes(wanted, {q.name: q for q in queues}) == expected


AT = datetime(2026, 12, 7, 1, 2, 3, tzinfo=UTC)
MIRROR = [other_owner("train", kind="PodGroup", api_version="scheduling.k8s.io/v1beta1")]


def _kube_writes(before: ObservedGroup, *fresh: JobCondition) -> list[KubeGroupWrite]:
    statuses = group_writes([], list(fresh), {before.key: before}, SESSION)
    return kube_group_writes(statuses, {before.key: before}, AT)


def test_a_mirrored_gang_first_placed_marks_its_kubernetes_podgroup_initially_scheduled() -> None:
    (write,) = _kube_writes(group("a", owners=MIRROR), cond("a", S, "3/3 tasks placed"))
    assert write == KubeGroupWrite("default", "train", True, "Scheduled", "3/3 tasks placed", AT)
    (patched,) = write.status()["status"]["conditions"]  # type: ignore[index]
    assert patched["type"] == "PodGroupInitiallyScheduled" and patched["status"] == "True"
    assert patched["lastTransitionTime"] == "2026-12-07T01:02:03Z"  # the API requires one


def test_a_mirrored_gang_short_of_resources_says_why_until_it_is_placed() -> None:
    short = cond("a", U, "0/3 nodes are available", reason="NotEnoughResources")
    (write,) = _kube_writes(group("a", owners=MIRROR), short)
    assert (write.scheduled, write.reason) == (False, "Unschedulable")
    placed_before = group("a", conditions=[condition("Scheduled", "placed")], owners=MIRROR)
    assert _kube_writes(placed_before, short) == []  # never back to False once placed


def test_no_kubernetes_podgroup_write_for_a_gang_waiting_for_pods_or_one_not_mirrored() -> None:
    lacking = cond("a", U, "2/3 pods", reason="NotEnoughTasks")
    assert _kube_writes(group("a", owners=MIRROR), lacking) == []
    assert _kube_writes(group("a", owners=OWNED), cond("a", S, "placed")) == []
