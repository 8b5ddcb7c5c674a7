"""hierarchy.evaluate: every reason of Authorized and Ready, by value, from what `select` keeps."""

from __future__ import annotations

import pytest

from controllers.namespacequeue import hierarchy
from controllers.namespacequeue.conditions import Reason
from models.namespacequeue import NamespaceQueue
from models.scheduling import Queue
from tests.unit.controllers.namespacequeue.builders import nq, queue, with_parent

RESEARCH = queue("research", allowed=["team-a"], capability={"cpu": "100"}, guarantee={"cpu": 20})
DEFAULT = queue("default", allowed=["*"])


def _verdict(
    me: NamespaceQueue,
    others: list[NamespaceQueue] | None = None,
    queues: list[Queue] | None = None,
) -> tuple[tuple[bool, Reason], tuple[bool, Reason], str]:
    everything = [me, *(others or [])]
    s = hierarchy.select(
        me.metadata.namespace or "", me.metadata.name or "", everything, queues or [RESEARCH]
    )
    authorized, ready = hierarchy.evaluate(me, s)
    return (authorized.ok, authorized.reason), (ready.ok, ready.reason), ready.message


ALLOWED = (True, Reason.NAMESPACE_ALLOWED)
READY = (True, Reason.READY)

CASES = [
    pytest.param(nq("a", "cluster/research"), [], [RESEARCH], ALLOWED, READY, id="cluster-allowed"),
    pytest.param(nq("a"), [], [DEFAULT], ALLOWED, READY, id="default-parent-star"),
    pytest.param(
        nq("a", "cluster/research", namespace="team-c"),
        [],
        [RESEARCH],
        (False, Reason.NAMESPACE_NOT_ALLOWED),
        (False, Reason.NAMESPACE_NOT_ALLOWED),
        id="cluster-namespace-not-allowed",
    ),
    pytest.param(
        nq("a", "cluster/closed-list"),
        [],
        [queue("closed-list")],
        (False, Reason.NAMESPACE_NOT_ALLOWED),
        (False, Reason.NAMESPACE_NOT_ALLOWED),
        id="cluster-empty-allowed-list-denies",
    ),
    pytest.param(
        nq("b", "a"),
        [nq("a", "cluster/research", namespace="team-a")],
        [queue("research", allowed=["team-b"])],
        (False, Reason.NAMESPACE_NOT_ALLOWED),
        (False, Reason.NAMESPACE_NOT_ALLOWED),
        id="descendant-of-unauthorized-subtree",
    ),
    pytest.param(
        nq("a", "cluster/missing"),
        [],
        [RESEARCH],
        (False, Reason.PARENT_NOT_FOUND),
        (False, Reason.PARENT_NOT_FOUND),
        id="cluster-parent-not-found",
    ),
    pytest.param(
        nq("b", "a"),
        [],
        [RESEARCH],
        (False, Reason.PARENT_NOT_FOUND),
        (False, Reason.PARENT_NOT_FOUND),
        id="local-parent-not-found",
    ),
    pytest.param(
        nq("c", "b"),
        [nq("b", "a")],
        [RESEARCH],
        (False, Reason.PARENT_NOT_FOUND),
        (False, Reason.PARENT_NOT_FOUND),
        id="ancestor-not-found",
    ),
    pytest.param(
        nq("a", "cluster/root"),
        [],
        [RESEARCH],
        (False, Reason.ROOT_PARENT_FORBIDDEN),
        (False, Reason.ROOT_PARENT_FORBIDDEN),
        id="root-parent-forbidden",
    ),
    pytest.param(
        with_parent(nq("a"), "other-ns/x"),
        [],
        [RESEARCH],
        (False, Reason.INVALID_PARENT_REFERENCE),
        (False, Reason.INVALID_PARENT_REFERENCE),
        id="cross-namespace-invalid",
    ),
    pytest.param(
        nq("a", "a"),
        [],
        [RESEARCH],
        (False, Reason.HIERARCHY_CYCLE),
        (False, Reason.HIERARCHY_CYCLE),
        id="self-parent-cycle",
    ),
    pytest.param(
        nq("a", "b"),
        [nq("b", "c"), nq("c", "a")],
        [RESEARCH],
        (False, Reason.HIERARCHY_CYCLE),
        (False, Reason.HIERARCHY_CYCLE),
        id="three-cycle",
    ),
    pytest.param(
        nq("a", "cluster/research", capability={"cpu": "200"}),
        [],
        [RESEARCH],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="capability-above-cluster-queue",
    ),
    pytest.param(
        nq("b", "a", capability={"cpu": "60"}),
        [nq("a", "cluster/research", capability={"cpu": "50"})],
        [RESEARCH],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="capability-above-parent",
    ),
    pytest.param(
        nq("c", "b", capability={"cpu": "60"}),
        [nq("b", "a"), nq("a", "cluster/research", capability={"cpu": "50"})],
        [RESEARCH],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="capability-above-nearest-ancestor-that-sets-it",
    ),
    pytest.param(
        nq("b", "a", capability={"memory": "1Ti"}),
        [nq("a", "cluster/research", capability={"cpu": "50"})],
        [RESEARCH],
        ALLOWED,
        READY,
        id="capability-resource-no-ancestor-sets",
    ),
    pytest.param(
        nq("b", "a", capability={"cpu": "40"}),
        [
            nq("a", "cluster/research", capability={"cpu": "50"}),
            nq("c", "a", capability={"cpu": "40"}),
        ],
        [RESEARCH],
        ALLOWED,
        READY,
        id="sibling-capabilities-not-summed",
    ),
    pytest.param(
        nq("c", "a", age=2, guarantee={"cpu": 6}),
        [
            nq("a", "cluster/research", guarantee={"cpu": 10}),
            nq("b", "a", age=1, guarantee={"cpu": 5}),
        ],
        [RESEARCH],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="guarantee-sum-above-parent-later-sibling",
    ),
    pytest.param(
        nq("b", "a", age=1, guarantee={"cpu": 5}),
        [
            nq("a", "cluster/research", guarantee={"cpu": 10}),
            nq("c", "a", age=2, guarantee={"cpu": 6}),
        ],
        [RESEARCH],
        ALLOWED,
        READY,
        id="guarantee-sum-earlier-sibling-fits",
    ),
    pytest.param(
        nq("c", "a", age=2, deserved={"cpu": "600m"}),
        [
            nq("a", "cluster/research", deserved={"cpu": 1}),
            nq("b", "a", age=1, deserved={"cpu": "500m"}),
        ],
        [RESEARCH],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="deserved-sum-above-parent",
    ),
    pytest.param(
        nq("c", "a", age=2, deserved={"cpu": 6}),
        [nq("a", "cluster/research"), nq("b", "a", age=1, deserved={"cpu": 5})],
        [RESEARCH],
        ALLOWED,
        READY,
        id="deserved-parent-sets-none",
    ),
    pytest.param(
        nq("a", "cluster/research", namespace="team-b", age=5, guarantee={"cpu": 15}),
        [nq("x", "cluster/research", namespace="team-a", age=1, guarantee={"cpu": 10})],
        [queue("research", allowed=["*"], guarantee={"cpu": 20})],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="guarantee-sum-across-namespaces-under-cluster-queue",
    ),
    pytest.param(
        nq("a", "cluster/research", guarantee={"cpu": 15}),
        [],
        [
            queue("research", allowed=["*"], guarantee={"cpu": 20}),
            queue("gpu", parent="research", age=-5, guarantee={"cpu": 10}),
        ],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="guarantee-sum-with-cluster-child-queue",
    ),
    pytest.param(
        nq("second", "cluster/research", age=2),
        [nq("first", "cluster/research", age=1)],
        [RESEARCH],
        ALLOWED,
        (False, Reason.PARENT_CONSTRAINT_VIOLATION),
        id="second-subtree-of-namespace-under-one-queue",
    ),
    pytest.param(
        nq("first", "cluster/research", age=1),
        [nq("second", "cluster/research", age=2)],
        [RESEARCH],
        ALLOWED,
        READY,
        id="first-subtree-of-namespace-keeps-working",
    ),
]


@pytest.mark.parametrize(("me", "others", "queues", "authorized", "ready"), CASES)
def test_evaluate_reason(
    me: NamespaceQueue,
    others: list[NamespaceQueue],
    queues: list[Queue],
    authorized: tuple[bool, Reason],
    ready: tuple[bool, Reason],
) -> None:
    got_authorized, got_ready, message = _verdict(me, others, queues)
    assert (got_authorized, got_ready) == (authorized, ready), message


def test_violation_message_names_resource_and_parent() -> None:
    me = nq("b", "a", capability={"cpu": "60"})
    _, _, message = _verdict(me, [nq("a", "cluster/research", capability={"cpu": "50"})])
    assert message == "capability cpu 60 is above the 50 of a"


def test_select_keeps_identity_and_spec_only() -> None:
    me = nq("a", "cluster/research", status={"state": "Open", "allocated": {"cpu": "1"}})
    s = hierarchy.select("team-a", "a", [me, nq("z", namespace="team-z")], [RESEARCH, DEFAULT])
    assert [q.metadata.name for q in s.local] == ["a"]
    assert s.local[0].status is None
    assert s.queue is not None and s.queue.metadata.name == "research"


def test_select_of_a_descendant_reads_no_other_namespace() -> None:
    me = nq("b", "a")
    other = nq("x", "cluster/research", namespace="team-b")
    s = hierarchy.select("team-a", "b", [me, nq("a", "cluster/research"), other], [RESEARCH])
    assert s.attached == ()
    assert s.queue is not None and s.queue.metadata.name == "research"


def test_select_keeps_siblings_beyond_the_namespace_only_where_shares_are_summed() -> None:
    me = nq("a", "cluster/research")
    other = nq("x", "cluster/research", namespace="team-b", capability={"cpu": "5"})
    plain = queue("research", allowed=["*"])
    assert hierarchy.select("team-a", "a", [me, other], [plain]).attached == ()
    sharing = queue("research", allowed=["*"], deserved={"cpu": "10"})
    (kept,) = hierarchy.select("team-a", "a", [me, other], [sharing]).attached
    assert (kept.metadata.name, kept.spec.capability) == ("x", None)
