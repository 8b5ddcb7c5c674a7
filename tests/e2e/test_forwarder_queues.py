"""The watch-forwarder against the real apiserver and Temporal dev server: the Queue side.

Queues, PodGroups and queue Commands go to a recording stand-in registered as "QueueWorkflow"
(`tests.e2e.forwarding`), in a Temporal namespace made for this module; each test runs its own
`caldera forwarder` subprocess with a Lease of its own, while the module holds the default
Lease so a session's real forwarder stands by. Queues are cluster-scoped, so every queue a
test creates is named `qa-<hex>` and deleted at the end of the test.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from models.signals import common as common_signals
from models.signals import queue as queue_signals
from tests.e2e.conftest import eventually
from tests.e2e.forwarding import COALESCE_MS, Forwarder, Recorder

QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
COMMANDS = ("bus.volcano.sh", "v1alpha1", "commands")
ROOT = "root"


pytestmark = pytest.mark.usefixtures("default_forwarder_paused")


@pytest.fixture
def queues(api: client.ApiClient) -> Iterator[Callable[..., dict[str, Any]]]:
    """`create(parent=...)` makes a queue `qa-<hex>`; all of them are deleted afterwards,
    children before parents (the order they were created in, reversed)."""
    custom = client.CustomObjectsApi(api)
    made: list[str] = []

    def create(parent: str = ROOT) -> dict[str, Any]:
        name = f"qa-{uuid.uuid4().hex[:8]}"
        doc = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": True, "parent": parent},
        }
        created = cast(dict[str, Any], custom.create_cluster_custom_object(*QUEUES, doc))
        made.append(name)
        return created

    yield create
    for name in reversed(made):
        with contextlib.suppress(client.ApiException):
            custom.delete_cluster_custom_object(*QUEUES, name)


def _at_least(probe: Callable[[], list[dict[str, Any]]], n: int, what: str) -> list[dict[str, Any]]:
    return eventually(lambda: seen if len(seen := probe()) >= n else None, 15, what)


def _children(recorder: Recorder, parent: str, child: str) -> list[dict[str, Any]]:
    got = recorder.queue_named(parent, queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED)
    return [c for c in got if c["name"] == child]


def _observed(recorder: Recorder, name: str, n: int = 1) -> list[dict[str, Any]]:
    return _at_least(
        lambda: recorder.queue_named(name, queue_signals.SIGNAL_QUEUE_OBSERVED),
        n,
        f"{name} observed",
    )


def _patch_status(api: client.ApiClient, name: str, status: dict[str, Any]) -> None:
    client.CustomObjectsApi(api).patch_cluster_custom_object_status(
        *QUEUES, name, {"status": status}
    )


def test_queue_created_starts_workflow_and_tells_root(
    api: client.ApiClient, recorder: Recorder, forwarder: Forwarder, queues: Any
) -> None:
    queue = queues()
    name = queue["metadata"]["name"]
    [first] = _observed(recorder, name)
    assert first["queue"]["metadata"]["uid"] == queue["metadata"]["uid"]
    [told] = _at_least(lambda: _children(recorder, ROOT, name), 1, "root told")
    assert told == {"name": name, "state": None, "closed_by_parent": False, "deleted": False}

    # The state appearing is news; status counts written after it are not; closing is.
    _patch_status(api, name, {"state": "Open", "pending": 0})
    _patch_status(api, name, {"state": "Open", "pending": 1, "running": 2})
    _patch_status(api, name, {"state": "Closed"})
    seen = _observed(recorder, name, 3)
    assert [(o["queue"].get("status") or {}).get("state") for o in seen] == [
        None,
        "Open",
        "Closed",
    ]
    told_states = _at_least(lambda: _children(recorder, ROOT, name), 3, "root told states")
    assert [c["state"] for c in told_states] == [None, "Open", "Closed"]


def test_queue_moved_tells_old_and_new_parent(
    api: client.ApiClient, recorder: Recorder, forwarder: Forwarder, queues: Any
) -> None:
    team = queues()["metadata"]["name"]
    kid = queues()["metadata"]["name"]
    _at_least(lambda: _children(recorder, ROOT, kid), 1, "root told of the child")
    client.CustomObjectsApi(api).patch_cluster_custom_object(
        *QUEUES, kid, {"spec": {"parent": team}}
    )
    [moved_in] = _at_least(lambda: _children(recorder, team, kid), 1, "new parent told")
    assert moved_in["deleted"] is False
    told_root = _at_least(lambda: _children(recorder, ROOT, kid), 2, "old parent told")
    assert told_root[-1]["deleted"] is True


def test_pod_group_in_queue_sends_refs(
    api: client.ApiClient,
    namespace: str,
    recorder: Recorder,
    forwarder: Forwarder,
    queues: Any,
) -> None:
    name = queues()["metadata"]["name"]
    _observed(recorder, name)
    custom = client.CustomObjectsApi(api)
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 1, "queue": name},
    }
    custom.create_namespaced_custom_object(*PODGROUPS[:2], namespace, PODGROUPS[2], group)

    def refs() -> list[dict[str, Any]]:
        batches = recorder.queue_named(name, queue_signals.SIGNAL_POD_GROUPS_CHANGED)
        return [g for b in batches for g in b["groups"]]

    _at_least(refs, 1, "pod group added")
    custom.patch_namespaced_custom_object_status(
        *PODGROUPS[:2], namespace, PODGROUPS[2], "pg", {"status": {"phase": "Inqueue"}}
    )
    _at_least(refs, 2, "phase change")
    custom.delete_namespaced_custom_object(*PODGROUPS[:2], namespace, PODGROUPS[2], "pg")
    seen = _at_least(refs, 3, "pod group deleted")
    key = f"{namespace}/pg"
    assert [(g["key"], g["phase"], g["deleted"]) for g in seen] == [
        (key, None, False),
        (key, "Inqueue", False),
        (key, "Inqueue", True),
    ]
    assert len(recorder.queue_named(name, queue_signals.SIGNAL_POD_GROUPS_CHANGED)) == 3


def test_queue_command_consumed_and_delivered_once(
    api: client.ApiClient,
    namespace: str,
    recorder: Recorder,
    forwarder: Forwarder,
    queues: Any,
) -> None:
    queue = queues()
    name = queue["metadata"]["name"]
    _observed(recorder, name)
    ref = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": name,
        "uid": queue["metadata"]["uid"],
        "controller": True,
    }
    custom = client.CustomObjectsApi(api)
    # As vcctl writes it (target and owner), then with the owner reference only.
    for command in (
        {"metadata": {"name": f"{name}-closequeue", "ownerReferences": [ref]}, "target": ref},
        {"metadata": {"name": f"{name}-openqueue", "ownerReferences": [ref]}},
    ):
        action = "CloseQueue" if "target" in command else "OpenQueue"
        body = {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "action": action}
        custom.create_namespaced_custom_object(
            *COMMANDS[:2], namespace, COMMANDS[2], {**body, **command, "reason": "e2e"}
        )
    issued = _at_least(
        lambda: recorder.queue_named(name, common_signals.SIGNAL_COMMAND_ISSUED), 2, "commands"
    )
    assert issued == [
        {"action": "CloseQueue", "command": f"{name}-closequeue", "reason": "e2e", "message": ""},
        {"action": "OpenQueue", "command": f"{name}-openqueue", "reason": "e2e", "message": ""},
    ]
    for suffix in ("closequeue", "openqueue"):
        with pytest.raises(client.ApiException) as gone:
            custom.get_namespaced_custom_object(
                *COMMANDS[:2], namespace, COMMANDS[2], f"{name}-{suffix}"
            )
        assert gone.value.status == 404
    time.sleep(COALESCE_MS / 1000 * 2)
    assert len(recorder.queue_named(name, common_signals.SIGNAL_COMMAND_ISSUED)) == 2


def test_queue_deleted_sends_queue_deleted_and_tells_root(
    api: client.ApiClient, recorder: Recorder, forwarder: Forwarder, queues: Any
) -> None:
    queue = queues()
    name = queue["metadata"]["name"]
    _observed(recorder, name)
    _at_least(lambda: _children(recorder, ROOT, name), 1, "root told")
    client.CustomObjectsApi(api).delete_cluster_custom_object(*QUEUES, name)
    [gone] = _at_least(
        lambda: recorder.queue_named(name, queue_signals.SIGNAL_QUEUE_DELETED), 1, "queue deleted"
    )
    assert gone == {"uid": queue["metadata"]["uid"]}
    told = _at_least(lambda: _children(recorder, ROOT, name), 2, "root told of the deletion")
    assert told[-1] == {"name": name, "state": None, "closed_by_parent": False, "deleted": True}
