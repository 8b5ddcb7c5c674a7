"""The NamespaceQueue controller on the real stack: the forwarder, the NamespaceQueueWorkflow
and its reads and status writes against a real apiserver.

A tenant may make its hierarchy in any order: a NamespaceQueue whose local parent does not exist
yet shows Ready=False (ParentNotFound) and turns Ready as soon as the parent is made (the
forwarder tells the children of a new queue). A child whose capability is above its parent's
shows ParentConstraintViolation, and fits again when its parent grows. A Command aimed at a
NamespaceQueue closes it (Closed at once, with no PodGroup running in it: Ready=False, Closed)
and another opens it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e import volcano
from tests.e2e.conftest import eventually

_G, _V, NQ = "scheduling.volcano.sh", "v1beta1", "namespacequeues"


@pytest.fixture
def attach(api: client.ApiClient, namespace: str) -> Iterator[str]:
    """A cluster Queue that lets `namespace` attach NamespaceQueues."""
    custom = client.CustomObjectsApi(api)
    name = f"attach-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": f"{_G}/{_V}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "allowedNamespaces": [namespace]},
    }
    custom.create_cluster_custom_object(_G, _V, "queues", body)
    volcano.state_becomes(api, name, "Open", timeout=30)
    yield name

    # Its NamespaceQueues first, children before parents: the webhook keeps a queue that
    # another hangs under.
    def deleted_all() -> bool:
        items = custom.list_namespaced_custom_object(_G, _V, namespace, NQ)["items"]
        for item in items:
            try:
                custom.delete_namespaced_custom_object(
                    _G, _V, namespace, NQ, item["metadata"]["name"]
                )
            except client.ApiException as e:
                if e.status not in (400, 403, 404, 422):
                    raise
        return not items

    eventually(deleted_all, 30, "NamespaceQueues gone")
    custom.delete_cluster_custom_object(_G, _V, "queues", name)


def _make(api: client.ApiClient, ns: str, name: str, parent: str, cpu: str) -> None:
    body = {
        "apiVersion": f"{_G}/{_V}",
        "kind": "NamespaceQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"parent": parent, "capability": {"cpu": cpu}},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(_G, _V, ns, NQ, body)


def _shows(
    api: client.ApiClient, ns: str, name: str, ready: str, reason: str, state: str = "Open"
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        got: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
            _G, _V, ns, NQ, name
        )
        status = got.get("status") or {}
        shown = {c["type"]: c for c in status.get("conditions") or []}
        found = shown.get("Ready", {})
        wanted = (found.get("status"), found.get("reason"), status.get("state"))
        return got if wanted == (ready, reason, state) else None

    return eventually(probe, 60, f"{ns}/{name} Ready={ready} {reason} {state}")


def _command(api: client.ApiClient, ns: str, target: str, action: str) -> None:
    """A bus Command aimed at the NamespaceQueue (its target is an owner reference: uid too)."""
    custom = client.CustomObjectsApi(api)
    uid = custom.get_namespaced_custom_object(_G, _V, ns, NQ, target)["metadata"]["uid"]
    body = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": f"{target}-{action.lower()}-{uuid.uuid4().hex[:4]}", "namespace": ns},
        "action": action,
        "target": {
            "apiVersion": f"{_G}/{_V}",
            "kind": "NamespaceQueue",
            "name": target,
            "uid": uid,
        },
    }
    custom.create_namespaced_custom_object("bus.volcano.sh", "v1alpha1", ns, "commands", body)


@pytest.mark.usefixtures("controllers")
def test_hierarchy_made_in_any_order_constraints_and_commands(
    api: client.ApiClient, namespace: str, attach: str
) -> None:
    _make(api, namespace, "train", "dept", "4")
    _shows(api, namespace, "train", "False", "ParentNotFound")

    _make(api, namespace, "dept", f"cluster/{attach}", "2")
    dept = _shows(api, namespace, "dept", "True", "Ready")
    authorized = next(c for c in dept["status"]["conditions"] if c["type"] == "Authorized")
    assert (authorized["status"], authorized["reason"]) == ("True", "NamespaceAllowed")
    train = _shows(api, namespace, "train", "False", "ParentConstraintViolation")
    ready = next(c for c in train["status"]["conditions"] if c["type"] == "Ready")
    assert ready["message"] == "capability cpu 4 is above the 2 of dept"

    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        _G, _V, namespace, NQ, "dept", {"spec": {"capability": {"cpu": "8"}}}
    )
    _shows(api, namespace, "train", "True", "Ready")

    _command(api, namespace, "train", "CloseQueue")
    _shows(api, namespace, "train", "False", "Closed", state="Closed")
    _command(api, namespace, "train", "OpenQueue")
    _shows(api, namespace, "train", "True", "Ready")
