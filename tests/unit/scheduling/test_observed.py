"""Cached objects parsed into the views the session's planners read."""

from __future__ import annotations

from typing import Any

import pytest

from models.keys import JobKey, QueueName
from scheduling.cache.observed import ObservedGroup, ObservedPod, ObservedQueue, Owner
from tests.unit.scheduling.builders import make_pod, make_queue
from tests.unit.scheduling.cache_builders import (
    batch_owner,
    condition,
    group_obj,
    pod_obj,
    vcjob_owner,
)

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


def _with_volumes(*volumes: Obj) -> Obj:
    return make_pod("p").spec(volumes=list(volumes)).obj()


def _with_conditions(*conditions: Obj) -> Obj:
    obj = make_pod("p").obj()
    obj["status"]["conditions"] = list(conditions)
    return obj


PODS = [
    pytest.param(
        pod_obj("a-0"),
        ObservedPod("default", "a-0", "uid-a-0", "", (), (None, None)),
        id="pending-no-conditions",
    ),
    pytest.param(
        pod_obj("a-0", node="n1", namespace="ns"),
        ObservedPod("ns", "a-0", "uid-a-0", "n1", (), (None, None)),
        id="bound",
    ),
    pytest.param(
        pod_obj("a-0", scheduled=("Unschedulable", "0/1 nodes")),
        ObservedPod("default", "a-0", "uid-a-0", "", (), ("Unschedulable", "0/1 nodes")),
        id="waiting-with-pod-scheduled",
    ),
    pytest.param(
        _with_volumes(
            {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "b", "emptyDir": {}},
            {"name": "c", "persistentVolumeClaim": {"claimName": ""}},
            {"name": "d", "persistentVolumeClaim": {"claimName": "logs"}},
        ),
        ObservedPod("default", "p", "", "", ("data", "logs"), (None, None)),
        id="claims-in-spec-order-others-skipped",
    ),
    pytest.param(
        _with_conditions(
            {"type": "Ready", "status": "False", "reason": "r", "message": "m"},
            {"type": "PodScheduled", "status": "False", "reason": "first"},
            {"type": "PodScheduled", "status": "False", "reason": "second", "message": "m"},
        ),
        ObservedPod("default", "p", "", "", (), ("first", None)),
        id="first-pod-scheduled-wins",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), PODS)
def test_pod(obj: Obj, expected: ObservedPod) -> None:
    assert ObservedPod.parse(obj) == expected


def test_pod_key() -> None:
    assert ObservedPod.parse(pod_obj("a-0", namespace="ns")).key == "ns/a-0"


GROUPS = [
    pytest.param(
        group_obj("a", "Inqueue"),
        ObservedGroup("default", "a", (), "Inqueue", ()),
        id="phase-no-owners",
    ),
    pytest.param(
        group_obj("a", None, namespace="ns"),
        ObservedGroup("ns", "a", (), None, ()),
        id="no-phase-yet",
    ),
    pytest.param(
        group_obj("a", owners=[vcjob_owner("a"), batch_owner("b")]),
        ObservedGroup(
            "default",
            "a",
            (
                Owner("batch.volcano.sh/v1alpha1", "Job", "a", "uid-a"),
                Owner("batch/v1", "Job", "b", "uid-b"),
            ),
            "Inqueue",
            (),
        ),
        id="owners-in-order",
    ),
    pytest.param(
        group_obj("a", conditions=[condition("Scheduled", "ok", lastTransitionTime="t0")]),
        ObservedGroup(
            "default",
            "a",
            (),
            "Inqueue",
            (
                {
                    "type": "Scheduled",
                    "status": "True",
                    "reason": "",
                    "message": "ok",
                    "transitionID": "1",
                    "lastTransitionTime": "t0",
                },
            ),
        ),
        id="conditions-verbatim",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), GROUPS)
def test_group(obj: Obj, expected: ObservedGroup) -> None:
    assert ObservedGroup.parse(obj) == expected


def test_group_key() -> None:
    assert ObservedGroup.parse(group_obj("a", namespace="ns")).key == JobKey("ns/a")


def _queue(status: Obj) -> Obj:
    obj = make_queue("q")
    obj["status"] = status
    return obj


QUEUES = [
    pytest.param(_queue({"state": "Open"}), {}, id="none-allocated"),
    pytest.param(_queue({"allocated": None}), {}, id="null-allocated"),
    pytest.param(
        _queue({"allocated": {"cpu": "2", "memory": "1Gi", "pods": 3}}),
        {"cpu": "2", "memory": "1Gi", "pods": "3"},
        id="quantities-as-strings",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), QUEUES)
def test_queue(obj: Obj, expected: dict[str, str]) -> None:
    assert ObservedQueue.parse(obj) == ObservedQueue(QueueName("q"), expected)
