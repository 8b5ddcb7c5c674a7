"""Kubernetes objects to a Snapshot: task status (C5), ownership and visibility (C10.2/C10.3)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase, QueueState
from scheduling.api.snapshot import JobInfo, PodKey, QueueInfo, Snapshot, TaskInfo, TaskStatus
from scheduling.api.vectors import Resources
from scheduling.cache.objects import snapshot_from_objects
from scheduling.cache.tasks import ParseMemo, Versioned, task_status
from scheduling.cache.volumes import Storage
from tests.unit.scheduling.builders import (
    gang,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    snapshot,
)

GI = 2**30

STATUS = [
    pytest.param(make_pod("p").obj(), TaskStatus.PENDING, id="pending"),
    pytest.param(make_pod("p").on("n1", "Pending").obj(), TaskStatus.BOUND, id="bound"),
    pytest.param(make_pod("p").on("n1").obj(), TaskStatus.RUNNING, id="running"),
    pytest.param(
        make_pod("p").on("n1").deleting().obj(), TaskStatus.RELEASING, id="running-deleted"
    ),
    pytest.param(make_pod("p").deleting().obj(), TaskStatus.RELEASING, id="pending-deleted"),
    pytest.param(make_pod("p").on("n1", "Succeeded").obj(), TaskStatus.SUCCEEDED, id="succeeded"),
    pytest.param(make_pod("p").on("n1", "Failed").obj(), TaskStatus.FAILED, id="failed"),
    pytest.param(make_pod("p").phase("Unknown").obj(), TaskStatus.UNKNOWN, id="unknown"),
]


@pytest.mark.parametrize(("pod", "expected"), STATUS)
def test_task_status_follows_volcano(pod: dict[str, Any], expected: TaskStatus) -> None:
    assert task_status(pod) == expected


def test_snapshot_loads_nodes_with_every_pod_on_them() -> None:
    pods = [
        make_pod("a-worker-0", group="a", cpu="1").on("n1").obj(),
        make_pod("foreign", group=None, cpu="2").spec(schedulerName="other").on("n1").obj(),
        make_pod("done", group="a", cpu="3").on("n1", "Succeeded").obj(),
        make_pod("elsewhere", group=None).spec(schedulerName="other").obj(),
    ]
    snap = snapshot([make_node("n1").obj()], pods=pods, gangs=[(make_podgroup("a"), [])])
    node = snap.node("n1")
    assert (node.used.milli_cpu, node.pod_count) == (3000, 2)
    assert [t.key for t in snap.tasks] == ["default/a-worker-0", "default/done"]


def test_jobs_of_unknown_queues_are_invisible() -> None:
    snap = snapshot([], gangs=[gang("a", 2, queue="missing"), gang("b", 1)])
    assert [j.key for j in snap.jobs] == ["default/b"]
    assert [t.key for t in snap.tasks] == ["default/b-worker-0"]


def test_assumed_placements_count_as_binding_on_their_node() -> None:
    snap = snapshot(
        [make_node("n1").obj()], gangs=[gang("a", 2)], assumed={"default/a-worker-1": "n1"}
    )
    assert snap.node("n1").used == Resources.of(1000, GI, 1)
    statuses = {t.key: (t.status, t.node_name) for t in snap.tasks}
    assert statuses == {
        "default/a-worker-0": (TaskStatus.PENDING, None),
        "default/a-worker-1": (TaskStatus.BINDING, "n1"),
    }


def test_task_fields_come_from_the_pod() -> None:
    pod = (
        make_pod("a-ps-12", group="a", cpu="2")
        .role("ps")
        .priority(7)
        .node_selector(zone="z1")
        .tolerate("gpu", operator="Exists")
        .spec(schedulingGates=[{"name": "wait"}])
        .obj()
    )
    task = snapshot([], pods=[pod], gangs=[(make_podgroup("a"), [])]).tasks[0]
    assert (task.role, task.priority, task.index, task.gated) == ("ps", 7, 12, True)
    assert task.node_selector == {"zone": "z1"}
    assert task.tolerations[0].key == "gpu"
    assert task.request == Resources.of(2000, GI, 1)


@pytest.mark.parametrize(
    ("annotation", "spec", "expected"),
    [
        pytest.param("9", {"priority": 5}, 9, id="annotation-wins"),
        pytest.param(None, {"priority": 5}, 5, id="spec-priority"),
        pytest.param(None, {"priorityClassName": "high"}, 1000, id="priority-class"),
        pytest.param(None, {}, 1, id="volcano-default"),
    ],
)
def test_task_priority(annotation: str | None, spec: dict[str, Any], expected: int) -> None:
    pod = make_pod("p", group="a").spec(**spec).obj()
    if annotation is not None:
        pod["metadata"]["annotations"]["volcano.sh/task-priority"] = annotation
    classes = [{"metadata": {"name": "high"}, "value": 1000}]
    snap = snapshot([], pods=[pod], gangs=[(make_podgroup("a"), [])], priority_classes=classes)
    assert snap.tasks[0].priority == expected


@pytest.mark.parametrize(
    ("class_name", "expected"),
    [
        pytest.param("high", 1000, id="named-class"),
        pytest.param(None, 50, id="global-default"),
        pytest.param("missing", 50, id="unknown-class-falls-back"),
    ],
)
def test_job_priority_from_priority_class(class_name: str | None, expected: int) -> None:
    classes = [
        {"metadata": {"name": "high"}, "value": 1000},
        {"metadata": {"name": "normal"}, "value": 50, "globalDefault": True},
    ]
    group = make_podgroup("a", priorityClassName=class_name)
    snap = snapshot([], gangs=[(group, [])], priority_classes=classes)
    assert snap.jobs[0].priority == expected


def test_job_and_queue_fields() -> None:
    group = make_podgroup(
        "a",
        min_member=3,
        phase="Pending",
        minTaskMember={"ps": 1},
        minResources={"cpu": "3"},
    )
    queue = make_queue(
        "default",
        weight=4,
        state="Closed",
        capability={"cpu": "8"},
        guarantee={"resource": {"cpu": "1"}},
    )
    snap = snapshot([], gangs=[(group, [])], queues=[queue, make_queue("root")])
    job, (default, root) = snap.jobs[0], snap.queues
    assert (job.min_member, job.min_task_member, job.phase) == (3, {"ps": 1}, PodGroupPhase.PENDING)
    assert job.min_resources == Resources.of(3000)
    assert (default.weight, default.state, default.parent) == (4, QueueState.CLOSED, "root")
    assert (default.capability, default.guarantee) == (Resources.of(8000), Resources.of(1000))
    assert root.parent is None


def test_empty_podgroup_queue_uses_the_default_queue() -> None:
    group = make_podgroup("a")
    del group["spec"]["queue"]
    snap = snapshot_from_objects(
        [], [], [group], [make_queue("fallback")], default_queue="fallback"
    )
    assert snap.jobs[0].queue == "fallback"


def test_pods_of_other_schedulers_without_node_are_ignored() -> None:
    pod = make_pod("a-worker-0", group="a").spec(schedulerName="default-scheduler").obj()
    snap = snapshot([], pods=[pod], gangs=[(make_podgroup("a"), [])])
    assert snap.tasks == ()


def test_snapshot_is_sorted_by_key() -> None:
    snap = snapshot(
        [make_node("n2").obj(), make_node("n1").obj()],
        gangs=[gang("b", 1), gang("a", 2)],
        queues=[make_queue("z"), make_queue("default")],
    )
    assert [n.name for n in snap.nodes] == ["n1", "n2"]
    assert [j.key for j in snap.jobs] == ["default/a", "default/b"]
    assert [q.name for q in snap.queues] == ["default", "z"]
    assert len(snap.pending_tasks()) == 3
    assert [t.key for t in snap.pending_tasks(snap.jobs[0].key)] == [
        "default/a-worker-0",
        "default/a-worker-1",
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"queues": [QueueInfo(name=QueueName("q")), QueueInfo(name=QueueName("q"))]},
            "queue keys must be unique, repeated: ['q']",
            id="repeated-queue",
        ),
        pytest.param(
            {"jobs": [JobInfo(key=JobKey("ns/a"), queue=QueueName("nowhere"))]},
            "job ns/a: queue 'nowhere' is not in queues",
            id="job-without-queue",
        ),
        pytest.param(
            {"tasks": [TaskInfo(key=PodKey("ns/p"), job=JobKey("ns/a"))]},
            "task ns/p: job 'ns/a' is not in jobs",
            id="task-without-job",
        ),
    ],
)
def test_snapshot_rejects_inconsistent_contents(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        Snapshot.model_validate(fields)


def test_snapshot_lookup_of_a_missing_key_names_it() -> None:
    with pytest.raises(KeyError, match="no node 'n9'"):
        Snapshot().node("n9")


def _versioned(pod: dict[str, Any], rv: str) -> dict[str, Any]:
    meta = {**pod["metadata"], "uid": f"uid-{pod['metadata']['name']}", "resourceVersion": rv}
    return {**pod, "metadata": meta}


def test_a_memo_parses_only_the_pods_that_changed_and_gives_the_same_snapshot() -> None:
    memo = ParseMemo()
    a = _versioned(make_pod("a-worker-0", group="a").obj(), "1")
    b = _versioned(make_pod("a-worker-1", group="a").obj(), "1")
    gangs = [(make_podgroup("a"), [a, b])]
    first = snapshot([make_node("n1").obj()], gangs=gangs, memo=memo)
    again = snapshot([make_node("n1").obj()], gangs=gangs, memo=memo)
    assert again == first == snapshot([make_node("n1").obj()], gangs=gangs)
    assert all(x is y for x, y in zip(again.tasks, first.tasks, strict=True))  # not re-parsed
    moved = _versioned(make_pod("a-worker-1", group="a").on("n1").obj(), "2")
    changed = snapshot([make_node("n1").obj()], gangs=[(make_podgroup("a"), [a, moved])], memo=memo)
    assert changed.tasks[0] is first.tasks[0]
    assert changed.tasks[1].status is TaskStatus.RUNNING


def test_a_memo_forgets_everything_when_priority_classes_change() -> None:
    memo = ParseMemo()
    pod = _versioned(make_pod("a-worker-0", group="a").spec(priorityClassName="high").obj(), "1")
    gangs = [(make_podgroup("a"), [pod])]
    low = {"metadata": {"name": "high"}, "value": 10}
    high = {"metadata": {"name": "high"}, "value": 1000}
    assert snapshot([], gangs=gangs, memo=memo, priority_classes=[low]).tasks[0].priority == 10
    assert snapshot([], gangs=gangs, memo=memo, priority_classes=[high]).tasks[0].priority == 1000


def test_a_memo_reads_only_the_pod_groups_that_changed_and_follows_their_priority() -> None:
    memo = ParseMemo()
    group = _versioned(make_podgroup("a", priorityClassName="high"), "1")
    gangs = [(group, [_versioned(make_pod("a-worker-0", group="a").obj(), "1")])]
    low = [{"metadata": {"name": "high"}, "value": 10}]
    first = snapshot([], gangs=gangs, memo=memo, priority_classes=low)
    again = snapshot([], gangs=gangs, memo=memo, priority_classes=low)
    assert again.jobs[0] is first.jobs[0] and first.jobs[0].priority == 10  # not read again
    grown = _versioned(make_podgroup("a", 3, priorityClassName="high"), "2")
    changed = snapshot([], gangs=[(grown, gangs[0][1])], memo=memo, priority_classes=low)
    assert changed.jobs[0].min_member == 3
    high = [{"metadata": {"name": "high"}, "value": 1000}]
    assert snapshot([], gangs=gangs, memo=memo, priority_classes=high).jobs[0].priority == 1000


def test_a_versioned_memo_keeps_what_the_last_session_used_and_no_more() -> None:
    memo: Versioned[list[str]] = Versioned()
    made: list[str] = []

    def make(name: str) -> Callable[[], list[str]]:
        def value() -> list[str]:
            made.append(name)
            return [name]

        return value

    a1, b1 = _versioned(make_pod("a").obj(), "1"), _versioned(make_pod("b").obj(), "1")
    memo.begin()
    first = memo.get(a1, None, make("a"))
    memo.get(b1, None, make("b"))
    memo.begin()
    assert memo.get(a1, None, make("a")) is first  # same version: not made again
    memo.begin()  # b was not used by the last session: dropped
    memo.get(b1, None, make("b"))
    memo.get(_versioned(make_pod("a").obj(), "2"), None, make("a"))  # a new version
    memo.begin(keep=False)
    memo.get(a1, None, make("a"))
    assert made == ["a", "b", "b", "a", "a"]


def test_a_pod_whose_claim_is_bound_carries_its_pvs_node_affinity() -> None:
    affinity = {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
    pods = []
    for name, claim in (("a-worker-0", "bound"), ("a-worker-1", "free")):
        doc = make_pod(name, group="a").obj()
        doc["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
        pods.append(doc)
    claims = [
        {"metadata": {"namespace": "default", "name": "bound"}, "spec": {"volumeName": "pv"}},
        {"metadata": {"namespace": "default", "name": "free"}, "spec": {}},
    ]
    pv = {"metadata": {"name": "pv"}, "spec": {"nodeAffinity": affinity}, "status": {}}
    storage = Storage.parse(claims, [pv], [])
    snap = snapshot_from_objects(
        [], pods, [make_podgroup("a")], [make_queue("default")], storage=storage
    )
    bound, free = snap.tasks
    (selector,) = bound.volume_affinity
    assert selector.node_selector_terms[0].match_expressions[0].values == ("a",)
    assert free.volume_affinity == ()
