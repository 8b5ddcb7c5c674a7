"""What NamespaceQueueWorkflows hear: their NamespaceQueue, the queues around it changing, the
PodGroups naming `namespace/<name>`, the Commands aimed at it, their namespace going."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.common import (
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)

from forwarder.routing import envelopes, router
from models.signals import common as common_signals
from models.signals import namespacequeue as nq_signals
from models.signals import queue as queue_signals
from tests.unit.forwarder import command, job, pod_group, queue
from tests.unit.forwarder.inbound import added, deleted, modified, route_all
from tests.unit.forwarder.test_signaller import FakeClient, deliver

K = envelopes.Kind
API = "scheduling.volcano.sh/v1beta1"


def nq(
    name: str,
    parent: str | None = None,
    ns: str = "team-a",
    uid: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if parent is not None:
        body["parent"] = parent
    meta = {"name": name, "namespace": ns, "uid": uid or f"uid-{ns}-{name}"}
    return {"apiVersion": API, "kind": "NamespaceQueue", "metadata": meta, "spec": body}


def nq_ref(name: str, ns: str = "team-a") -> envelopes.NamespaceQueueRef:
    return envelopes.NamespaceQueueRef(ns, name)


def observed(obj: dict[str, Any]) -> envelopes.Signal:
    meta = obj["metadata"]
    payload = nq_signals.NamespaceQueueObserved(queue=obj)
    target = nq_ref(meta["name"], meta["namespace"])
    return envelopes.Signal(target, nq_signals.SIGNAL_NAMESPACE_QUEUE_OBSERVED, payload, start=True)


def told(out: list[envelopes.Outbound]) -> list[str]:
    """The workflows told `hierarchy_changed`, in order."""
    return [
        o.target.workflow_id
        for o in out
        if isinstance(o, envelopes.Signal) and o.name == nq_signals.SIGNAL_HIERARCHY_CHANGED
    ]


def research(**spec: Any) -> dict[str, Any]:
    obj = queue("research")
    obj["spec"].update(spec)
    return obj


def listed(*objs: dict[str, Any], shares: bool = False) -> router.Router:
    """`shares`: the cluster Queue research sets a guarantee its children share."""
    top = research(guarantee={"resource": {"cpu": "10"}}) if shares else research()
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [queue("root", parent=None), top]))
    route_all(r, envelopes.Relisted(K.NAMESPACE_QUEUE, list(objs)))
    return r


def test_added_starts_its_workflow_alone() -> None:
    r = listed()
    obj = nq("training", "cluster/research")
    assert r.route(added(K.NAMESPACE_QUEUE, obj)) == [observed(obj)]


def test_added_tells_siblings_and_children_waiting_for_it() -> None:
    r = listed(nq("dept", "cluster/research", ns="team-b"), nq("orphan", "training"), shares=True)
    out = r.route(added(K.NAMESPACE_QUEUE, nq("training", "cluster/research")))
    assert out[0] == observed(nq("training", "cluster/research"))
    assert told(out) == [
        "namespacequeue/team-a/orphan",  # its parent now exists
        "namespacequeue/team-b/dept",  # a sibling sharing the cluster Queue's guarantee
    ]


def test_added_under_a_cluster_queue_sharing_nothing_tells_its_own_namespace_only() -> None:
    r = listed(nq("dept", "cluster/research", ns="team-b"), nq("first", "cluster/research"))
    out = r.route(added(K.NAMESPACE_QUEUE, nq("training", "cluster/research")))
    assert told(out) == ["namespacequeue/team-a/first"]  # one subtree per namespace


def test_status_only_change_is_not_news() -> None:
    obj = nq("training", "cluster/research")
    r = listed(obj)
    assert r.route(modified(K.NAMESPACE_QUEUE, {**obj, "status": {"state": "Open"}})) == []


def test_spec_change_tells_the_whole_subtree_and_siblings() -> None:
    top = nq("dept", "cluster/research")
    r = listed(top, nq("train", "dept"), nq("infer", "dept"), nq("gpu", "train"))
    changed = nq("dept", "cluster/research", capability={"cpu": "10"})
    out = r.route(modified(K.NAMESPACE_QUEUE, changed))
    assert out[0] == observed(changed)
    assert told(out) == [
        "namespacequeue/team-a/gpu",
        "namespacequeue/team-a/infer",
        "namespacequeue/team-a/train",
    ]


def test_move_tells_old_and_new_siblings() -> None:
    r = listed(nq("a", "cluster/research"), nq("b", "a"), nq("c", "a"), nq("d", "b"))
    out = r.route(modified(K.NAMESPACE_QUEUE, nq("c", "b")))
    assert told(out) == ["namespacequeue/team-a/b", "namespacequeue/team-a/d"]


def test_deleted_tells_its_workflow_children_and_siblings_then_refuses_late_events() -> None:
    obj = nq("train", "dept")
    r = listed(nq("dept", "cluster/research"), obj, nq("infer", "dept"), nq("gpu", "train"))
    out = r.route(deleted(K.NAMESPACE_QUEUE, obj))
    assert out[0] == envelopes.Signal(
        nq_ref("train"),
        nq_signals.SIGNAL_NAMESPACE_QUEUE_DELETED,
        nq_signals.NamespaceQueueDeleted(uid="uid-team-a-train"),
    )
    assert told(out) == ["namespacequeue/team-a/gpu", "namespacequeue/team-a/infer"]
    assert r.route(modified(K.NAMESPACE_QUEUE, obj)) == []


def test_relist_tells_no_neighbour_and_ends_the_vanished() -> None:
    r = listed(nq("dept", "cluster/research"), nq("train", "dept"))
    out = r.route(envelopes.Relisted(K.NAMESPACE_QUEUE, [nq("dept", "cluster/research")]))
    assert told(out) == []
    assert [(o.target, o.name) for o in out if isinstance(o, envelopes.Signal)] == [
        (nq_ref("train"), nq_signals.SIGNAL_NAMESPACE_QUEUE_DELETED),
        (nq_ref("dept"), nq_signals.SIGNAL_NAMESPACE_QUEUE_OBSERVED),
    ]


def test_cluster_queue_spec_change_tells_attached_subtrees_and_their_siblings() -> None:
    r = listed(
        nq("dept", "cluster/research"),
        nq("train", "dept"),
        nq("other", "cluster/default", ns="team-b"),
        nq("elsewhere", "cluster/root-child", ns="team-c"),
    )
    out = r.route(modified(K.QUEUE, research(allowedNamespaces=["team-b"])))
    assert told(out) == ["namespacequeue/team-a/dept", "namespacequeue/team-a/train"]


def test_cluster_queue_status_change_tells_no_namespace_queue() -> None:
    r = listed(nq("dept", "cluster/research"))
    obj = research()
    obj["status"] = {"state": "Open", "running": 3}
    assert told(r.route(modified(K.QUEUE, obj))) == []


def test_cluster_child_queue_change_tells_namespace_queues_under_its_parent() -> None:
    r = listed(nq("dept", "cluster/research"))
    gpu = queue("gpu", parent="research")
    assert told(r.route(added(K.QUEUE, gpu))) == ["namespacequeue/team-a/dept"]


def test_cluster_queue_deleted_tells_attached() -> None:
    r = listed(nq("dept", "cluster/research"))
    assert told(r.route(deleted(K.QUEUE, research()))) == ["namespacequeue/team-a/dept"]


def test_pod_group_naming_namespace_queue_goes_to_it_not_to_a_cluster_queue() -> None:
    r = listed(nq("training", ns="ns"))
    group = pod_group(queue="namespace/training", phase="Running", owners=[])
    out = r.route(added(K.POD_GROUP, group))
    group_ref = queue_signals.PodGroupRef(key="ns/train-pg", phase="Running")
    assert out == [envelopes.GroupRefUpdate(nq_ref("training", "ns"), group_ref)]


def test_pod_group_naming_namespace_queue_that_does_not_exist_goes_nowhere() -> None:
    r = listed()
    r.route(added(K.QUEUE, queue("namespace")))
    out = r.route(added(K.POD_GROUP, pod_group(queue="namespace/training", owners=[])))
    assert out == []


def test_pod_group_seen_before_its_namespace_queue_is_sent_after_it_appears() -> None:
    r = listed()
    r.route(added(K.POD_GROUP, pod_group(queue="namespace/training", owners=[])))
    obj = nq("training", ns="ns")
    out = r.route(added(K.NAMESPACE_QUEUE, obj))
    group_ref = queue_signals.PodGroupRef(key="ns/train-pg", phase="Pending")
    assert out == [observed(obj), envelopes.GroupRefUpdate(nq_ref("training", "ns"), group_ref)]


def test_pod_group_moved_from_cluster_queue_to_namespace_queue() -> None:
    r = listed(nq("training", ns="ns"))
    r.route(added(K.QUEUE, queue("q1")))
    r.route(added(K.POD_GROUP, pod_group(queue="q1", owners=[])))
    out = r.route(modified(K.POD_GROUP, pod_group(queue="namespace/training", owners=[])))
    gone = queue_signals.PodGroupRef(key="ns/train-pg", phase="Pending", deleted=True)
    here = queue_signals.PodGroupRef(key="ns/train-pg", phase="Pending")
    assert out == [
        envelopes.GroupRefUpdate(envelopes.QueueRef("q1"), gone),
        envelopes.GroupRefUpdate(nq_ref("training", "ns"), here),
    ]


def test_pod_groups_listed_reach_namespace_queues() -> None:
    r = listed(nq("training", ns="ns"), nq("empty", ns="ns"))
    out = r.route(
        envelopes.Relisted(K.POD_GROUP, [pod_group(queue="namespace/training", owners=[])])
    )
    listed_to = {
        o.target: o.payload
        for o in out
        if isinstance(o, envelopes.Signal) and o.name == queue_signals.SIGNAL_POD_GROUPS_LISTED
    }
    assert listed_to[nq_ref("training", "ns")] == queue_signals.PodGroupsListed(
        keys=["ns/train-pg"]
    )
    assert listed_to[nq_ref("empty", "ns")] == queue_signals.PodGroupsListed()


def test_namespace_being_deleted_ends_its_namespace_queues() -> None:
    r = listed(nq("dept", "cluster/research"), nq("x", ns="team-b"))
    ns = {
        "metadata": {"name": "team-a", "uid": "ns-uid", "deletionTimestamp": "2026-01-01T00:00:00Z"}
    }
    out = r.route(modified(K.NAMESPACE, ns))
    assert out == [
        envelopes.Signal(
            nq_ref("dept"),
            nq_signals.SIGNAL_NAMESPACE_QUEUE_DELETED,
            nq_signals.NamespaceQueueDeleted(uid="uid-team-a-dept"),
        )
    ]
    assert r.route(deleted(K.NAMESPACE_QUEUE, nq("dept", "cluster/research"))) == []


def test_command_aimed_at_a_namespace_queue_goes_to_its_workflow() -> None:
    target = {"apiVersion": API, "kind": "NamespaceQueue", "name": "dept"}
    obj = command(name="close-dept", ns="team-a", action="CloseQueue", target=target)
    out = router.Router().route(added(K.COMMAND, obj))
    issued = common_signals.CommandIssued(
        action="CloseQueue", command="close-dept", reason="user", message="stop it"
    )
    signal = envelopes.Signal(nq_ref("dept"), common_signals.SIGNAL_COMMAND_ISSUED, issued)
    assert out == [envelopes.ConsumeCommand("team-a", "close-dept", "cmd-uid", signal)]


@pytest.mark.parametrize("queue_name", ["namespace/multi", "namespace/x", "bad/ref"])
def test_job_naming_a_namespace_queue_is_never_dispatched(queue_name: str) -> None:
    r = router.Router()
    multi = queue("multi")
    multi["spec"]["extendClusters"] = [{"name": "east"}]
    route_all(r, envelopes.Relisted(K.QUEUE, [multi]))
    obj = job()
    obj["spec"]["queue"] = queue_name
    out = r.route(added(K.JOB, obj))
    assert [o.target for o in out if isinstance(o, envelopes.Signal)] == [
        envelopes.JobRef("ns", "train")
    ]


async def test_signal_with_start_runs_namespace_queue_workflow_on_queue_task_queue() -> None:
    client = FakeClient()
    signal = observed(nq("training", "cluster/research"))
    await deliver(client, signal)
    assert client.starts == [
        {
            "workflow": "NamespaceQueueWorkflow",
            "arg": nq_signals.NamespaceQueueStart(),
            "id": "namespacequeue/team-a/training",
            "task_queue": "caldera-queues",
            "start_signal": "namespace_queue_observed",
            "start_signal_args": [signal.payload],
            "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
            "id_reuse_policy": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            "static_summary": "Volcano NamespaceQueue team-a/training",
            "search_attributes": TypedSearchAttributes.empty,
        }
    ]
