"""The webhook's NamespaceQueue rules (Volcano's NamespaceQueue design, "Admission Webhook"):
the parent and its authorisation, the resource order, deletion, a Queue's allowedNamespaces,
and Jobs and PodGroups naming `namespace/<name>`; one table row per rule and message."""

from __future__ import annotations

from typing import Any

import pytest

from admission import queueresources as qr
from admission import reads, rules
from admission.reads import NamespaceQueueInfo, PodGroupInfo, QueueInfo
from tests.unit.admission.test_rules import Queues, _request, deny, job, podgroup

pytestmark = pytest.mark.unit

ALLOW = rules.ALLOW
GROUP = "scheduling.volcano.sh"

# Cluster queues: default (every namespace), research (team-a, team-b), closed-door (none).
CLUSTER = (
    QueueInfo("root"),
    QueueInfo("default", parent="root", allowed_namespaces=("*",)),
    QueueInfo("research", parent="root", allowed_namespaces=("team-a", "team-b")),
    QueueInfo("closed-door", parent="root"),
)
# team-a: dept under research; training and inference under dept; shut (Closing) under dept;
# banned (found unauthorized by its controller) under dept. team-b: lab under research.
# team-c: stray under research (written before admission knew better).
LOCAL = (
    NamespaceQueueInfo("team-a", "dept", parent="cluster/research"),
    NamespaceQueueInfo("team-a", "training", parent="dept"),
    NamespaceQueueInfo("team-a", "inference", parent="dept"),
    NamespaceQueueInfo("team-a", "shut", parent="dept", state="Closing"),
    NamespaceQueueInfo("team-a", "banned", parent="dept", unauthorized="namespace not allowed"),
    NamespaceQueueInfo("team-b", "lab", parent="cluster/research"),
    NamespaceQueueInfo("team-c", "stray", parent="cluster/research"),
)
PODGROUPS = {
    "team-a": (
        PodGroupInfo("running", queue="namespace/training", phase="Running"),
        PodGroupInfo("waiting", queue="namespace/training"),
        PodGroupInfo("done", queue="namespace/inference", phase="Completed"),
        PodGroupInfo("cluster-named", queue="inference", phase="Running"),
    )
}


def lookup() -> Queues:
    return Queues(CLUSTER, LOCAL, PODGROUPS)


def nq(
    name: str,
    parent: str | None = None,
    namespace: str = "team-a",
    operation: str = "CREATE",
    old_parent: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    def obj(p: str | None) -> dict[str, Any]:
        body = {**spec, **({} if p is None else {"parent": p})}
        return {"metadata": {"name": name, "namespace": namespace}, "spec": body}

    old = obj(old_parent) if operation == "UPDATE" else None
    return _request(GROUP, "namespacequeues", operation, obj(parent), old)


def nq_delete(name: str, namespace: str = "team-a") -> dict[str, Any]:
    request = _request(GROUP, "namespacequeues", "DELETE", {"metadata": {"name": name}})
    return {**request, "namespace": namespace, "object": None}


def cluster_queue(
    name: str, allowed: list[str] | None, old_allowed: list[str] | None, operation: str = "UPDATE"
) -> dict[str, Any]:
    def obj(a: list[str] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"weight": 1, "parent": "root"}
        return {
            "metadata": {"name": name},
            "spec": spec | ({} if a is None else {"allowedNamespaces": a}),
        }

    return _request(GROUP, "queues", operation, obj(allowed), obj(old_allowed))


def job_in(queue: str, namespace: str = "team-a") -> dict[str, Any]:
    request = job(queue)
    request["object"]["metadata"]["namespace"] = request["namespace"] = namespace
    return request


def podgroup_in(queue: str, namespace: str = "team-a") -> dict[str, Any]:
    request = podgroup(queue)
    request["object"]["metadata"]["namespace"] = request["namespace"] = namespace
    return request


NQ = "namespacequeue team-a/{}: "

CASES = [
    # A NamespaceQueue's parent
    pytest.param(nq("solo", namespace="team-z"), ALLOW, id="create-default-parent-allows-all"),
    pytest.param(nq("solo", "cluster/default", namespace="team-z"), ALLOW, id="create-default"),
    pytest.param(
        nq("solo", "cluster/research", namespace="team-b2"),
        deny(
            'namespacequeue team-b2/solo: spec.parent: queue "research" does not allow '
            'NamespaceQueues of namespace "team-b2" '
            "(its spec.allowedNamespaces: ['team-a', 'team-b'])"
        ),
        id="create-namespace-not-allowed",
    ),
    pytest.param(
        nq("solo", "cluster/closed-door"),
        deny(
            NQ.format("solo") + 'spec.parent: queue "closed-door" does not allow NamespaceQueues '
            'of namespace "team-a" (its spec.allowedNamespaces: [])'
        ),
        id="create-empty-allowed-list-denies",
    ),
    pytest.param(
        nq("solo", "cluster/nope"),
        deny(NQ.format("solo") + 'spec.parent: queue "nope" does not exist'),
        id="create-missing-cluster-parent",
    ),
    pytest.param(
        nq("solo", "cluster/root"),
        deny(
            NQ.format("solo") + "spec.parent: parent cluster/root is the scheduler's: name a queue "
            "below it"
        ),
        id="create-root-parent",
    ),
    pytest.param(
        nq("solo", "team-b/lab"),
        deny(
            NQ.format("solo") + "spec.parent: parent 'team-b/lab': a NamespaceQueue in the same "
            "namespace is <name>, a cluster Queue cluster/<name>; no other namespace can be named"
        ),
        id="create-cross-namespace-parent",
    ),
    pytest.param(
        nq("solo", "Dept"),
        deny(
            NQ.format("solo") + "spec.parent: parent 'Dept' is not a valid queue name (a DNS-1123 "
            "subdomain)"
        ),
        id="create-malformed-local-parent",
    ),
    pytest.param(
        nq("solo", "solo"),
        deny(NQ.format("solo") + "spec.parent: a NamespaceQueue cannot use itself as parent"),
        id="create-own-parent",
    ),
    pytest.param(nq("solo", "dept"), ALLOW, id="create-under-local-parent"),
    pytest.param(nq("solo", "not-yet"), ALLOW, id="create-under-missing-local-parent"),
    pytest.param(
        nq("solo", "cluster/research", namespace="team-b"),
        deny(
            'namespacequeue team-b/solo: spec.parent: NamespaceQueue "team-b/lab" already attaches '
            'namespace "team-b" to queue "research", and a namespace has one NamespaceQueue '
            "directly under a cluster Queue: hang this one below it (spec.parent: lab)"
        ),
        id="create-second-attachment",
    ),
    pytest.param(
        nq(
            "lab",
            "cluster/research",
            namespace="team-b",
            operation="UPDATE",
            old_parent="cluster/default",
        ),
        ALLOW,
        id="update-moves-its-own-attachment",
    ),
    pytest.param(
        nq(
            "dept",
            "cluster/research",
            operation="UPDATE",
            old_parent="cluster/research",
            deserved={"cpu": "4"},
        ),
        ALLOW,
        id="update-same-parent-not-rechecked",
    ),
    pytest.param(
        nq("training", "cluster/closed-door", operation="UPDATE", old_parent="dept"),
        deny(
            NQ.format("training") + 'spec.parent: queue "closed-door" does not allow '
            'NamespaceQueues of namespace "team-a" (its spec.allowedNamespaces: [])'
        ),
        id="update-new-parent-checked",
    ),
    # Resources: for each resource two lists name, guarantee <= deserved <= capability
    pytest.param(
        nq("solo", "dept", guarantee={"resource": {"cpu": "2"}}, deserved={"cpu": "1"}),
        deny(
            NQ.format("solo") + 'spec.guarantee.resource.cpu: Invalid value: "2": '
            "guarantee[cpu] must be <= deserved[cpu]=1"
        ),
        id="guarantee-over-deserved",
    ),
    pytest.param(
        nq("solo", "dept", deserved={"memory": "2Gi"}, capability={"memory": "1Gi"}),
        deny(
            NQ.format("solo") + 'spec.deserved.memory: Invalid value: "2Gi": '
            "deserved[memory] must be <= capability[memory]=1Gi"
        ),
        id="deserved-over-capability",
    ),
    pytest.param(
        nq("solo", "dept", guarantee={"resource": {"cpu": "3"}}, capability={"cpu": "2"}),
        deny(
            NQ.format("solo") + 'spec.guarantee.resource.cpu: Invalid value: "3": '
            "guarantee[cpu] must be <= capability[cpu]=2"
        ),
        id="guarantee-over-capability-without-deserved",
    ),
    pytest.param(
        nq(
            "solo",
            "dept",
            guarantee={"resource": {"cpu": "1500m", "memory": "1Gi"}},
            deserved={"cpu": "2", "memory": "1024Mi"},
            capability={"cpu": 2},
        ),
        ALLOW,
        id="quantities-compared-as-quantities",
    ),
    pytest.param(
        nq("solo", "dept", guarantee={"resource": {"gpu": "1"}}, deserved={"cpu": "1"}),
        ALLOW,
        id="guaranteed-resource-need-not-be-deserved",
    ),
    # Deletion
    pytest.param(
        nq_delete("dept"),
        deny(
            NQ.format("dept") + 'metadata.name: NamespaceQueue "team-a/dept" can not be deleted '
            'because it has 4 child NamespaceQueues: "banned", "inference", "shut", "training"'
        ),
        id="delete-with-children",
    ),
    pytest.param(
        nq_delete("training"),
        deny(
            NQ.format("training") + 'metadata.name: NamespaceQueue "team-a/training" can not be '
            'deleted because 2 PodGroups that have not completed use it: "running", "waiting"'
        ),
        id="delete-with-workloads",
    ),
    pytest.param(nq_delete("inference"), ALLOW, id="delete-completed-and-cluster-named-ignored"),
    pytest.param(nq_delete("lab", "team-b"), ALLOW, id="delete-leaf-without-workloads"),
    # A cluster Queue's allowedNamespaces and deletion
    pytest.param(
        cluster_queue("research", ["team-b"], ["team-a", "team-b"]),
        deny(
            "queue research: spec.allowedNamespaces: ['team-b'] would leave 1 NamespaceQueues "
            'under queue "research" unauthorised: "team-a/dept"; give each another parent or '
            "delete it first"
        ),
        id="queue-update-revokes-attached-namespace",
    ),
    pytest.param(
        cluster_queue("research", ["team-a", "team-b", "team-d"], ["team-a", "team-b"]),
        ALLOW,
        id="queue-update-adds-namespace",
    ),
    pytest.param(
        cluster_queue("research", ["*"], ["team-a", "team-b"]),
        ALLOW,
        id="queue-update-to-every-namespace",
    ),
    pytest.param(
        cluster_queue("research", [], ["*"]),
        deny(
            "queue research: spec.allowedNamespaces: [] would leave 3 NamespaceQueues under "
            'queue "research" unauthorised: "team-a/dept", "team-b/lab", "team-c/stray"; give '
            "each another parent or delete it first"
        ),
        id="queue-update-revokes-every-namespace",
    ),
    pytest.param(cluster_queue("default", None, ["*"]), ALLOW, id="queue-update-nothing-attached"),
    pytest.param(
        _request(GROUP, "queues", "DELETE", {"metadata": {"name": "research"}}),
        deny(
            'queue research: metadata.name: queue "research" can not be deleted because 3 '
            'NamespaceQueues hang under it: "team-a/dept", "team-b/lab", "team-c/stray"'
        ),
        id="queue-delete-with-namespace-queues",
    ),
    # Workloads naming namespace/<name>
    pytest.param(job_in("namespace/training", "team-a"), ALLOW, id="job-open-leaf"),
    pytest.param(
        job_in("namespace/nope", "team-a"),
        deny(
            'job team-a/train: spec.queue: NamespaceQueue "nope" does not exist in namespace '
            '"team-a"'
        ),
        id="job-missing",
    ),
    pytest.param(
        job_in("namespace/training", "team-b"),
        deny(
            'job team-b/train: spec.queue: NamespaceQueue "training" does not exist in namespace '
            '"team-b"'
        ),
        id="job-other-namespace-never-found",
    ),
    pytest.param(
        job_in("namespace/shut", "team-a"),
        deny(
            "job team-a/train: spec.queue: can only submit job to queue with state Open, "
            'NamespaceQueue "team-a/shut" status is "Closing"'
        ),
        id="job-closing",
    ),
    pytest.param(
        job_in("namespace/banned", "team-a"),
        deny(
            'job team-a/train: spec.queue: NamespaceQueue "team-a/banned" is not authorized: '
            "namespace not allowed"
        ),
        id="job-unauthorized",
    ),
    pytest.param(
        job_in("namespace/dept", "team-a"),
        deny(
            "job team-a/train: spec.queue: can only submit job to leaf queue, NamespaceQueue "
            '"team-a/dept" has 4 child queues: "banned", "inference", "shut", "training"'
        ),
        id="job-not-leaf",
    ),
    pytest.param(
        job_in("team-b/lab", "team-a"),
        deny(
            "job team-a/train: spec.queue: queue 'team-b/lab': a cluster Queue is <name>, a "
            "NamespaceQueue of the workload's namespace namespace/<name>; no other namespace can "
            "be named"
        ),
        id="job-cross-namespace",
    ),
    pytest.param(
        job_in("namespace/", "team-a"),
        deny(
            "job team-a/train: spec.queue: queue '' is not a valid queue name "
            "(a DNS-1123 subdomain)"
        ),
        id="job-empty-namespace-queue",
    ),
    pytest.param(job_in("default", "team-a"), ALLOW, id="job-cluster-queue-unchanged"),
    pytest.param(podgroup_in("namespace/dept"), ALLOW, id="podgroup-non-leaf-has-no-leaf-rule"),
    pytest.param(
        podgroup("namespace/shut"),
        deny(
            'podgroup team/pg: spec.queue: NamespaceQueue "shut" does not exist in namespace "team"'
        ),
        id="podgroup-in-its-own-namespace",
    ),
]


@pytest.mark.parametrize(("request_", "verdict"), CASES)
def test_review_decides_namespace_queue_rules(request_: dict[str, Any], verdict: Any) -> None:
    assert rules.review(request_, lookup()) == verdict


def test_a_podgroup_naming_a_closing_namespace_queue_is_refused() -> None:
    request = podgroup_in("namespace/shut")
    assert rules.review(request, lookup()) == deny(
        "podgroup team-a/pg: spec.queue: can only submit PodGroup to queue with state Open, "
        'NamespaceQueue "team-a/shut" status is "Closing"'
    )


def test_an_unchanged_parent_reads_nothing() -> None:
    queues = lookup()
    request = nq("dept", "cluster/research", operation="UPDATE", old_parent="cluster/research")
    assert rules.review(request, queues) == ALLOW
    assert queues.reads == []


def test_an_omitted_parent_is_the_default_queue_on_update_too() -> None:
    """The CRD defaults spec.parent; an object stored before has none: the same parent."""
    queues = lookup()
    request = nq("dept", "cluster/default", operation="UPDATE", old_parent=None)
    assert rules.review(request, queues) == ALLOW
    assert queues.reads == []


class StaleNamespaceQueues(Queues):
    """A watch that still holds team-b/lab, deleted a moment ago, and research before it
    allowed team-c."""

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> list[NamespaceQueueInfo]:
        held = super().list_namespace_queues(namespace, fresh)
        return [q for q in held if q.name != "lab"] if fresh else held

    def get_queue(self, name: str) -> QueueInfo | None:
        queue = super().get_queue(name)
        return QueueInfo(name, allowed_namespaces=("team-a",)) if name == "research" else queue

    def list_queues(self, fresh: bool = False) -> list[QueueInfo]:
        opened = QueueInfo("research", allowed_namespaces=("team-a", "team-b", "team-c"))
        return [opened if q.name == "research" else q for q in super().list_queues(fresh)]


def test_refusals_are_confirmed_on_fresh_reads() -> None:
    queues = StaleNamespaceQueues(CLUSTER, LOCAL, PODGROUPS)
    assert rules.review(nq("solo", "cluster/research", namespace="team-b"), queues) == ALLOW
    assert (
        rules.review(nq("solo", "cluster/research", namespace="team-c2"), queues).allowed is False
    )


@pytest.mark.parametrize(
    ("obj", "info"),
    [
        pytest.param(
            {
                "metadata": {"name": "a", "namespace": "n"},
                "spec": {"parent": "b", "deserved": {"cpu": "2"}},
                "status": {
                    "state": "Open",
                    "conditions": [
                        {"type": "Ready", "status": "False", "message": "parent missing"},
                        {"type": "Authorized", "status": "False", "reason": "NamespaceNotAllowed"},
                    ],
                },
            },
            NamespaceQueueInfo(
                "n",
                "a",
                parent="b",
                state="Open",
                unauthorized="NamespaceNotAllowed",
                shares=qr.shares({"deserved": {"cpu": "2"}}),
            ),
            id="full",
        ),
        pytest.param(
            {
                "metadata": {"name": "a", "namespace": "n"},
                "status": {"conditions": [{"type": "Authorized", "status": "True"}]},
            },
            NamespaceQueueInfo("n", "a"),
            id="authorized",
        ),
        pytest.param(
            {"metadata": {"name": "a"}, "status": 3}, NamespaceQueueInfo("", "a"), id="bad"
        ),
    ],
)
def test_namespace_queue_info_reads_parent_state_and_authorization(
    obj: dict[str, Any], info: NamespaceQueueInfo
) -> None:
    assert reads.namespace_queue_info(obj) == info


def test_queue_info_reads_allowed_namespaces() -> None:
    obj = {"metadata": {"name": "q"}, "spec": {"allowedNamespaces": ["a", 3, "b"]}}
    assert rules.queue_info(obj).allowed_namespaces == ("a", "b")
