"""Raw Queues, PodGroups and Commands → QueueWorkflow payloads and addresses."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder.routing import envelopes
from forwarder.routing import queue_translate as qt
from models.signals import queue as queue_signals
from tests.unit.forwarder import command, owner, pod_group, queue, queue_owner

CLOSED = {"volcano.sh/closed-by-parent": "true"}

QUEUE_CHANGES = [
    pytest.param(queue(), queue(), False, id="same"),
    pytest.param(queue(), queue(running=3, pending=1), False, id="status-counts"),
    pytest.param(queue(), queue(allocated={"cpu": "2"}), False, id="status-allocated"),
    pytest.param(queue(), queue(weight=2), True, id="spec"),
    pytest.param(queue(), queue(parent="other"), True, id="parent"),
    pytest.param(queue(), queue(annotations=CLOSED), True, id="closed-by-parent"),
    pytest.param(queue(), queue(annotations={"note": "x"}), True, id="other-annotation"),
    pytest.param(queue(), queue(state="Closing"), True, id="state"),
    pytest.param(queue(state=None), queue(), True, id="first-state"),
]


@pytest.mark.parametrize(("old", "new", "changed"), QUEUE_CHANGES)
def test_queue_fingerprint_only_spec_annotations_state(
    old: dict[str, Any], new: dict[str, Any], changed: bool
) -> None:
    assert (qt.queue_fingerprint(old) != qt.queue_fingerprint(new)) is changed


CHILD_CHANGES = [
    pytest.param(queue(), queue(weight=3), False, id="spec-not-parent"),
    pytest.param(queue(), queue(annotations={"note": "x"}), False, id="other-annotation"),
    pytest.param(queue(parent=None), queue(parent="root"), False, id="empty-parent-is-root"),
    pytest.param(queue(), queue(parent="other"), True, id="parent"),
    pytest.param(queue(), queue(state="Closed"), True, id="state"),
    pytest.param(queue(), queue(annotations=CLOSED), True, id="closed-by-parent"),
]


@pytest.mark.parametrize(("old", "new", "changed"), CHILD_CHANGES)
def test_child_fingerprint_only_parent_state_closed_by_parent(
    old: dict[str, Any], new: dict[str, Any], changed: bool
) -> None:
    assert (qt.child_fingerprint(old) != qt.child_fingerprint(new)) is changed


PARENTS = [
    pytest.param(queue(parent="team"), envelopes.QueueRef("team"), id="named"),
    pytest.param(queue(parent=None), envelopes.QueueRef("root"), id="unset-is-root"),
    pytest.param(queue(parent=""), envelopes.QueueRef("root"), id="empty-is-root"),
    pytest.param(queue("root", parent=None), None, id="root-has-none"),
]


@pytest.mark.parametrize(("obj", "expected"), PARENTS)
def test_parent_defaults_to_root_and_root_has_none(
    obj: dict[str, Any], expected: envelopes.QueueRef | None
) -> None:
    assert qt.parent(obj) == expected


def test_child_observed_carries_state_and_closed_by_parent() -> None:
    obj = queue(state="Closed", annotations=CLOSED)
    assert qt.child_observed(obj) == queue_signals.ChildQueueObserved(
        name="q1", state="Closed", closed_by_parent=True
    )
    assert qt.child_observed(queue(state=None)) == queue_signals.ChildQueueObserved(name="q1")
    assert qt.child_deleted("q1") == queue_signals.ChildQueueObserved(name="q1", deleted=True)


def test_queue_observed_carries_whole_object() -> None:
    obj = queue(running=2)
    assert qt.queue_observed(obj) == queue_signals.QueueObserved(queue=obj)


def test_queue_observed_leaves_out_managed_fields() -> None:
    obj = queue(running=2)
    managed = [{"manager": "vc-scheduler", "operation": "Update", "subresource": "status"}]
    stored = {**obj, "metadata": {**obj["metadata"], "managedFields": managed}}
    assert qt.queue_observed(stored) == queue_signals.QueueObserved(queue=obj)


POD_GROUP_QUEUES = [
    pytest.param(pod_group(queue="q1"), "q1", id="named"),
    pytest.param(pod_group(), "default", id="unset-is-default"),
    pytest.param(pod_group(queue=""), "default", id="empty-is-default"),
    pytest.param(pod_group(queue="q1", owners=[]), "q1", id="not-owned-by-job"),
    pytest.param(pod_group(queue="namespace/training"), "ns/training", id="namespace-queue"),
    pytest.param(pod_group(queue="other/training"), None, id="other-namespace-names-none"),
    pytest.param(pod_group(queue="namespace/"), None, id="nameless-namespace-queue"),
]


@pytest.mark.parametrize(("obj", "expected"), POD_GROUP_QUEUES)
def test_pod_group_queue_from_spec_queue(obj: dict[str, Any], expected: str | None) -> None:
    assert qt.pod_group_queue(obj) == expected


def test_pod_group_ref_keyed_by_namespace_and_name() -> None:
    assert qt.pod_group_ref(pod_group(phase="Inqueue")) == queue_signals.PodGroupRef(
        key="ns/train-pg", phase="Inqueue"
    )
    assert qt.pod_group_ref(pod_group(phase=None), deleted=True) == queue_signals.PodGroupRef(
        key="ns/train-pg", deleted=True
    )


COMMAND_QUEUES = [
    pytest.param(command(target=queue_owner()), "q1", id="queue-target"),
    pytest.param(command(target={}, owners=[queue_owner()]), "q1", id="owner-ref-only"),
    pytest.param(
        command(target={}, owners=[owner(), {**queue_owner("q2"), "controller": False}]),
        "q2",
        id="owner-ref-among-others",
    ),
    pytest.param(command(target=owner(), owners=[queue_owner()]), None, id="job-target-wins"),
    pytest.param(command(), None, id="job-target"),
    pytest.param(command(target={**queue_owner(), "apiVersion": "v1"}), None, id="other-api"),
    pytest.param(
        command(target={}, owners=[{**queue_owner(), "apiVersion": "x/v1"}]),
        None,
        id="owner-other-api",
    ),
    pytest.param(command(target={**queue_owner(), "name": ""}), None, id="nameless"),
    pytest.param(command(target={}), None, id="nothing"),
]


@pytest.mark.parametrize(("obj", "expected"), COMMAND_QUEUES)
def test_command_queue_from_target_or_owner_ref(obj: dict[str, Any], expected: str | None) -> None:
    assert qt.command_queue(obj) == (envelopes.QueueRef(expected) if expected else None)
