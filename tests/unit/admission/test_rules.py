"""The admission decisions, one table row per rule and message, against an in-memory lookup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from admission import queueresources as qr
from admission import rules
from admission.reads import NamespaceQueueInfo, PodGroupInfo
from admission.rules import QueueInfo, Verdict
from models import plugins

ALLOW = rules.ALLOW

# root ─┬─ default
#       ├─ closed (Closed)      ├─ closing (Closing)      ├─ fresh (no parent, no state)
#       ├─ org ─┬─ team-a       └─ shut (Closed) ── shut-a
#       │       └─ team-b
#       └─ d1 ── d2 ── d3 ── d4 ── d5        stray ── gone (missing)      orphan ── ghost (missing)
QUEUES = (
    QueueInfo("root"),
    QueueInfo("default", parent="root"),
    QueueInfo("closed", parent="root", state="Closed"),
    QueueInfo("closing", parent="root", state="Closing"),
    QueueInfo("fresh"),
    QueueInfo("org", parent="root", state="Open"),
    QueueInfo("team-a", parent="org", state="Open"),
    QueueInfo("team-b", parent="org"),
    QueueInfo("shut", parent="root", state="Closed"),
    QueueInfo("shut-a", parent="shut"),
    QueueInfo("d1", parent="root"),
    QueueInfo("d2", parent="d1"),
    QueueInfo("d3", parent="d2"),
    QueueInfo("d4", parent="d3"),
    QueueInfo("d5", parent="d4"),
    QueueInfo("stray", parent="gone"),
    QueueInfo("orphan", parent="ghost"),
)


class Queues:
    """`rules.Lookup` over fixed lists, recording what was read (NamespaceQueues as
    `<namespace>/<name>`, lists of them as `<namespace>/*` or `*/*`, PodGroups as `pg:<ns>`)."""

    def __init__(
        self,
        queues: Sequence[QueueInfo] = QUEUES,
        namespace_queues: Sequence[NamespaceQueueInfo] = (),
        podgroups: Mapping[str, Sequence[PodGroupInfo]] | None = None,
    ) -> None:
        self.queues = {q.name: q for q in queues}
        self.namespace_queues = {(q.namespace, q.name): q for q in namespace_queues}
        self.podgroups = dict(podgroups or {})
        self.reads: list[str] = []

    def get_queue(self, name: str) -> QueueInfo | None:
        self.reads.append(name)
        return self.queues.get(name)

    def list_queues(self, fresh: bool = False) -> list[QueueInfo]:
        self.reads.append("*")
        return list(self.queues.values())

    def get_namespace_queue(self, namespace: str, name: str) -> NamespaceQueueInfo | None:
        self.reads.append(f"{namespace}/{name}")
        return self.namespace_queues.get((namespace, name))

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> list[NamespaceQueueInfo]:
        self.reads.append(f"{namespace or '*'}/*")
        held = self.namespace_queues.values()
        return [q for q in held if namespace is None or q.namespace == namespace]

    def list_podgroups(self, namespace: str) -> list[PodGroupInfo]:
        self.reads.append(f"pg:{namespace}")
        return list(self.podgroups.get(namespace, ()))


def _request(
    group: str,
    plural: str,
    operation: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None = None,
    sub: str = "",
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": "7f1c",
        "resource": {"group": group, "version": "v1", "resource": plural},
        "operation": operation,
        "name": obj["metadata"].get("name", ""),
        "object": obj,
    }
    if "namespace" in obj["metadata"]:
        request["namespace"] = obj["metadata"]["namespace"]
    if old is not None:
        request["oldObject"] = old
    if sub:
        request["subResource"] = sub
    return request


CONTAINER = {"name": "main", "image": "busybox"}


def job(
    queue: str | None, operation: str = "CREATE", edit: dict[str, Any] | None = None, **meta: str
) -> dict[str, Any]:
    """A Job request; an UPDATE's old object is the same Job before `edit` (spec fields)."""
    task = {"name": "w", "replicas": 1, "template": {"spec": {"containers": [CONTAINER]}}}
    spec = {"tasks": [task]} | ({} if queue is None else {"queue": queue})
    metadata = {"namespace": "team", **(meta or {"name": "train"})}
    obj = {"metadata": metadata, "spec": spec | (edit or {})}
    old = {"metadata": metadata, "spec": spec} if operation == "UPDATE" else None
    return _request("batch.volcano.sh", "jobs", operation, obj, old)


def podgroup(queue: str, operation: str = "CREATE", sub: str = "", **spec: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": "pg", "namespace": "team"}, "spec": {"queue": queue, **spec}}
    return _request("scheduling.volcano.sh", "podgroups", operation, obj, sub=sub)


def queue(
    name: str, parent: str | None, old_parent: str | None = None, operation: str = "CREATE"
) -> dict[str, Any]:
    def obj(p: str | None) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"weight": 1} | ({} if p is None else {"parent": p}),
        }

    old = obj(old_parent) if operation == "UPDATE" else None
    return _request("scheduling.volcano.sh", "queues", operation, obj(parent), old)


def deny(message: str) -> Verdict:
    return Verdict(allowed=False, message=message)


OPEN_ONLY = "spec.queue: can only submit {what} to queue with state Open, queue {q} status is {s}"

CASES = [
    # Jobs
    pytest.param(job(None), ALLOW, id="job-create-no-queue-means-default"),
    pytest.param(job("team-a"), ALLOW, id="job-create-open-leaf"),
    pytest.param(job("fresh"), ALLOW, id="job-create-no-state-reads-open"),
    pytest.param(
        job("nope"),
        deny('job team/train: spec.queue: queue "nope" does not exist'),
        id="job-create-missing",
    ),
    pytest.param(
        job("closed"),
        deny("job team/train: " + OPEN_ONLY.format(what="job", q='"closed"', s='"Closed"')),
        id="job-create-closed",
    ),
    pytest.param(
        job("closing"),
        deny("job team/train: " + OPEN_ONLY.format(what="job", q='"closing"', s='"Closing"')),
        id="job-create-closing",
    ),
    pytest.param(
        job("root"),
        deny('job team/train: spec.queue: can not submit job to the root queue "root"'),
        id="job-create-root",
    ),
    pytest.param(
        job("org"),
        deny(
            "job team/train: spec.queue: can only submit job to leaf queue, "
            'queue "org" has 2 child queues: "team-a", "team-b"'
        ),
        id="job-create-not-leaf",
    ),
    pytest.param(
        job("shut"),
        deny(
            "job team/train: "
            + OPEN_ONLY.format(what="job", q='"shut"', s='"Closed"')
            + '; spec.queue: can only submit job to leaf queue, queue "shut" has 1 child queues: '
            + '"shut-a"'
        ),
        id="job-create-closed-and-not-leaf-reports-both",
    ),
    pytest.param(
        job("nope", generateName="train-"),
        deny('job team/train-: spec.queue: queue "nope" does not exist'),
        id="job-create-generate-name",
    ),
    pytest.param(job("closed", "UPDATE"), ALLOW, id="job-update-closed-queue-untouched"),
    pytest.param(job("default", "UPDATE", {"minAvailable": 1}), ALLOW, id="job-update-min"),
    pytest.param(
        job("default", "UPDATE", {"maxRetry": 7}),
        deny(
            "job team/train: spec.maxRetry: job updates may not change fields other than "
            "minAvailable, priorityClassName, and tasks[*].replicas and tasks[*].minAvailable"
        ),
        id="job-update-other-field",
    ),
    pytest.param(
        job("default", "CREATE", {"plugins": {"nope": []}}),
        deny(
            'job team/train: spec.plugins: unable to find job plugin "nope" '
            f"(plugins: {', '.join(sorted(plugins.IMPLEMENTED))})"
        ),
        id="job-create-unknown-plugin",
    ),
    pytest.param(job("nope", "DELETE"), ALLOW, id="job-delete"),
    # PodGroups
    pytest.param(podgroup("default"), ALLOW, id="podgroup-create-open"),
    pytest.param(podgroup(""), ALLOW, id="podgroup-create-empty-queue-means-default"),
    pytest.param(podgroup("org"), ALLOW, id="podgroup-create-non-leaf-has-no-leaf-rule"),
    pytest.param(
        podgroup("nope"),
        deny('podgroup team/pg: spec.queue: queue "nope" does not exist'),
        id="podgroup-create-missing",
    ),
    pytest.param(
        podgroup("closed"),
        deny("podgroup team/pg: " + OPEN_ONLY.format(what="PodGroup", q='"closed"', s='"Closed"')),
        id="podgroup-create-closed",
    ),
    pytest.param(
        podgroup("default", subGroupPolicy=[{"name": "a", "subGroupSize": 2}]),
        ALLOW,
        id="podgroup-create-sub-groups",
    ),
    pytest.param(podgroup("default", subGroupPolicy=[]), ALLOW, id="podgroup-create-no-sub-groups"),
    pytest.param(podgroup("closed", "UPDATE"), ALLOW, id="podgroup-update-closed"),
    pytest.param(podgroup("closed", "UPDATE", sub="status"), ALLOW, id="podgroup-status"),
    # Queues
    pytest.param(queue("q", None), ALLOW, id="queue-create-no-parent"),
    pytest.param(queue("q", ""), ALLOW, id="queue-create-empty-parent"),
    pytest.param(queue("q", "root"), ALLOW, id="queue-create-under-root"),
    pytest.param(queue("q", "org"), ALLOW, id="queue-create-under-existing"),
    pytest.param(queue("q", "fresh"), ALLOW, id="queue-create-under-parentless-queue"),
    pytest.param(queue("q", "d4"), ALLOW, id="queue-create-depth-5"),
    pytest.param(
        queue("q", "nope"),
        deny('queue q: spec.parent: parent queue "nope" does not exist'),
        id="queue-create-missing-parent",
    ),
    pytest.param(
        queue("q", "q"),
        deny("queue q: spec.parent: queue cannot use itself as parent"),
        id="queue-create-own-parent",
    ),
    pytest.param(
        queue("q", "d5"),
        deny(
            'queue q: spec.parent: queue "q" would be 6 or more levels below root, '
            "more than the maximum queue depth 5"
        ),
        id="queue-create-depth-6",
    ),
    pytest.param(
        queue("q", "stray"),
        deny('queue q: spec.parent: queue "gone", an ancestor of "stray", does not exist'),
        id="queue-create-missing-ancestor",
    ),
    pytest.param(
        queue("ghost", "orphan"),
        deny(
            'queue ghost: spec.parent: queue "ghost" is an ancestor of "orphan": '
            "parent cycles are not allowed"
        ),
        id="queue-create-closes-cycle-with-orphan",
    ),
    pytest.param(
        queue("org", "team-a", "root", "UPDATE"),
        deny(
            'queue org: spec.parent: queue "org" is an ancestor of "team-a": '
            "parent cycles are not allowed"
        ),
        id="queue-update-cycle",
    ),
    pytest.param(
        queue("d1", "d5", "root", "UPDATE"),
        deny(
            'queue d1: spec.parent: queue "d1" is an ancestor of "d5": '
            "parent cycles are not allowed"
        ),
        id="queue-update-long-cycle",
    ),
    pytest.param(
        queue("root", "default", None, "UPDATE"),
        deny(
            'queue root: spec.parent: queue "root" is an ancestor of "default": '
            "parent cycles are not allowed"
        ),
        id="queue-update-root-under-its-child",
    ),
    pytest.param(queue("org", "d3", "root", "UPDATE"), ALLOW, id="queue-update-subtree-fits"),
    pytest.param(
        queue("org", "d4", "root", "UPDATE"),
        deny(
            'queue org: spec.parent: queue "org" would be 5 levels below root and its '
            "descendants 6, more than the maximum queue depth 5"
        ),
        id="queue-update-subtree-too-deep",
    ),
    pytest.param(queue("team-a", "root", "org", "UPDATE"), ALLOW, id="queue-update-to-root"),
    pytest.param(queue("team-a", "default", "org", "UPDATE"), ALLOW, id="queue-update-move"),
    pytest.param(queue("stray", "gone", "gone", "UPDATE"), ALLOW, id="queue-update-parent-same"),
    pytest.param(queue("q", "nope", operation="DELETE"), ALLOW, id="queue-delete"),
]


@pytest.mark.parametrize(("request_", "verdict"), CASES)
def test_review_decides_by_rule(request_: dict[str, Any], verdict: Verdict) -> None:
    assert rules.review(request_, Queues()) == verdict


@pytest.mark.parametrize(
    ("parent", "verdict"),
    [
        pytest.param("d1", ALLOW, id="depth-2"),
        pytest.param(
            "d2",
            deny(
                'queue q: spec.parent: queue "q" would be 3 or more levels below root, '
                "more than the maximum queue depth 2"
            ),
            id="depth-3",
        ),
    ],
)
def test_queue_depth_limit_is_configurable(parent: str, verdict: Verdict) -> None:
    assert rules.review(queue("q", parent), Queues(), max_depth=2) == verdict


def test_queue_update_without_parent_change_reads_nothing() -> None:
    queues = Queues()
    assert rules.review(queue("stray", "gone", "gone", "UPDATE"), queues) == ALLOW
    assert queues.reads == []


def test_parent_walk_stops_reading_once_too_deep() -> None:
    queues = Queues()
    rules.review(queue("q", "d5"), queues)
    assert queues.reads == ["d5", "d4", "d3", "d2", "d1"]


def test_parent_walk_survives_a_cycle_among_ancestors() -> None:
    looped = Queues([*QUEUES, QueueInfo("x", parent="y"), QueueInfo("y", parent="x")])
    assert rules.review(queue("q", "x"), looped) == deny(
        'queue q: spec.parent: the ancestors of queue "x" form a cycle through "x": '
        "parent cycles are not allowed"
    )


@pytest.mark.parametrize(
    ("obj", "info"),
    [
        pytest.param(
            {"metadata": {"name": "a"}, "spec": {"parent": "b"}, "status": {"state": "Closed"}},
            QueueInfo("a", parent="b", state="Closed"),
            id="full",
        ),
        pytest.param(
            {"metadata": {"name": "a"}, "spec": {}}, QueueInfo("a"), id="no-parent-no-status"
        ),
        pytest.param(
            {"metadata": {"name": "a"}, "spec": {"parent": ""}, "status": {"state": ""}},
            QueueInfo("a"),
            id="empty-strings",
        ),
    ],
)
def test_queue_info_reads_name_parent_state(obj: dict[str, Any], info: QueueInfo) -> None:
    assert rules.queue_info(obj) == info


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param({}, id="empty"),
        pytest.param({"resource": {"group": "batch.volcano.sh", "resource": "jobs"}}, id="no-op"),
        pytest.param(
            {"resource": {"group": "", "resource": "pods"}, "operation": "CREATE"}, id="pods"
        ),
    ],
)
def test_review_allows_what_it_has_no_rule_for(request_: dict[str, Any]) -> None:
    assert rules.review(request_, Queues()) == ALLOW


def _queue_request(
    operation: str, spec: dict[str, Any], old: dict[str, Any] | None = None
) -> dict[str, Any]:
    obj = {"metadata": {"name": "team-c"}, "spec": spec}
    previous = None if old is None else {"metadata": {"name": "team-c"}, "spec": old}
    return _request("scheduling.volcano.sh", "queues", operation, obj, previous)


def test_a_queue_is_refused_when_it_deserves_more_than_its_capability() -> None:
    spec = {"weight": 1, "deserved": {"cpu": "8"}, "capability": {"cpu": "4"}}
    verdict = rules.review(_queue_request("CREATE", spec), Queues())
    assert verdict == deny(
        'queue team-c: spec.deserved.cpu: Invalid value: "8": deserved[cpu] must be <= '
        "capability[cpu]=4"
    )


def test_a_queue_update_of_its_resources_is_checked_against_its_parent() -> None:
    org = QueueInfo("org", parent="root", shares=qr.shares({"capability": {"cpu": "10"}}))
    lookup = Queues([*QUEUES[:5], org, QueueInfo("team-c", parent="org")])
    old = {"weight": 1, "parent": "org"}
    fits = rules.review(_queue_request("UPDATE", {**old, "capability": {"cpu": "10"}}, old), lookup)
    assert fits == ALLOW
    over = rules.review(_queue_request("UPDATE", {**old, "capability": {"cpu": "12"}}, old), lookup)
    assert over == deny(
        'queue team-c: spec.capability.cpu: Invalid value: "12": queue "team-c" capability[cpu] '
        'exceeds its ancestor "org"\'s capability 10'
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("team-a", ALLOW),
        (
            "org",
            deny(
                'queue org: metadata.name: queue "org" can not be deleted because it has 2 '
                "child queues: team-a, team-b"
            ),
        ),
    ],
    ids=["leaf", "parent"],
)
def test_a_queue_with_children_cannot_be_deleted(name: str, expected: Verdict) -> None:
    request = {
        "uid": "7f1c",
        "resource": {"group": "scheduling.volcano.sh", "version": "v1", "resource": "queues"},
        "operation": "DELETE",
        "name": name,
        "oldObject": {"metadata": {"name": name}, "spec": {"weight": 1}},
    }
    assert rules.review(request, Queues()) == expected


class Stale(Queues):
    """A watch that still holds `org`'s children after they were deleted."""

    def list_queues(self, fresh: bool = False) -> list[QueueInfo]:
        queues = super().list_queues(fresh)
        return [q for q in queues if q.parent != "org"] if fresh else queues


def test_a_refusal_is_confirmed_on_a_fresh_list_of_the_queues() -> None:
    request = {
        "uid": "7f1c",
        "resource": {"group": "scheduling.volcano.sh", "version": "v1", "resource": "queues"},
        "operation": "DELETE",
        "name": "org",
        "oldObject": {"metadata": {"name": "org"}, "spec": {"weight": 1}},
    }
    assert rules.review(request, Stale()) == ALLOW  # its children are gone in fact
    assert rules.review(job("org"), Stale()) == ALLOW  # a leaf again


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({"sla-waiting-time": "1h"}, None),
        ({"volcano.sh/sla-waiting-time": "90s"}, None),
        (
            {"sla-waiting-time": "an hour"},
            "metadata.annotations[sla-waiting-time]: must be a duration above zero such as "
            "'10m', not 'an hour'",
        ),
        ({"volcano.sh/sla-waiting-time": "0s"}, "[volcano.sh/sla-waiting-time]: must be"),
    ],
)
def test_an_sla_waiting_time_that_is_no_duration_is_refused(
    annotations: dict[str, str], message: str | None
) -> None:
    """Volcano's scheduler drops such a value silently (job_info.go, extractWaitingTime)."""
    for request in (job("team-a"), podgroup("team-a")):
        request["object"]["metadata"]["annotations"] = annotations
        verdict = rules.review(request, Queues())
        assert verdict.allowed is (message is None)
        assert message is None or message in verdict.message
