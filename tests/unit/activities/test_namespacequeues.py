"""The NamespaceQueue activities against a fake apiserver: the read keeps what the core needs
(its namespace's queues, the cluster Queue at the top, the siblings beyond its namespace) and
leaves out an object that is not readable; the status write is a merge patch of the status
subresource with the controller's fields only."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.controllers import namespacequeues

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


def _nq(name: str, ns: str, parent: str) -> Obj:
    meta = {"name": name, "namespace": ns, "uid": f"u-{ns}-{name}", "managedFields": [{}]}
    return {"metadata": meta, "spec": {"parent": parent}, "status": {"allocated": {"cpu": "1"}}}


class FakeApi:
    def __init__(self, items: dict[str, list[Obj]]) -> None:
        self.items = items
        self.calls: list[tuple[Any, ...]] = []

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> Obj:
        self.calls.append(("list", group, version, plural))
        return {"items": self.items[plural]}

    def patch_namespaced_custom_object_status(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("patch", *args, kwargs.get("_content_type")))


def test_read_keeps_what_the_core_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(
        {
            "namespacequeues": [
                _nq("training", "team-a", "cluster/research"),
                _nq("infer", "team-a", "training"),
                _nq("dept", "team-b", "cluster/research"),
                _nq("other", "team-c", "cluster/default"),
                {"metadata": {"name": "broken", "namespace": "team-a"}, "spec": {"parent": 7}},
            ],
            "queues": [
                {
                    "metadata": {"name": "research"},
                    "spec": {"allowedNamespaces": ["*"], "deserved": {"cpu": "10"}},
                },
                {"metadata": {"name": "gpu"}, "spec": {"parent": "research"}},
                {"metadata": {"name": "default"}, "spec": {}},
            ],
        }
    )
    monkeypatch.setattr(kube, "custom", lambda: api)
    request = namespacequeues.SurroundingsInput(namespace="team-a", name="training")
    s = ActivityEnvironment().run(namespacequeues.read_namespace_queue_surroundings, request)
    assert [q.metadata.name for q in s.local] == ["training", "infer"]
    assert s.queue is not None and s.queue.metadata.name == "research"
    assert [(q.metadata.namespace, q.metadata.name) for q in s.attached] == [("team-b", "dept")]
    assert [q.metadata.name for q in s.cluster_children] == ["gpu"]
    assert all(q.status is None and not q.metadata.model_extra for q in s.local)
    assert s.attached[0].spec.parent == "cluster/research"


def test_status_write_is_a_merge_patch_of_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi({})
    monkeypatch.setattr(kube, "custom", lambda: api)
    status = {"state": "Open", "running": 1}
    request = namespacequeues.NamespaceQueueStatusInput(
        namespace="team-a", name="training", status=status
    )
    ActivityEnvironment().run(namespacequeues.write_namespace_queue_status, request)
    assert api.calls == [
        (
            "patch",
            "scheduling.volcano.sh",
            "v1beta1",
            "team-a",
            "namespacequeues",
            "training",
            {"status": status},
            "application/merge-patch+json",
        )
    ]
