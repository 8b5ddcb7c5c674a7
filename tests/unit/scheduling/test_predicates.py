"""Node filters with kube-scheduler's reasons (C7.8), one table per predicate."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling.api import constraints
from scheduling.api.constraints import NodeSelector, NodeSelectorRequirement, Taint, Toleration
from scheduling.api.snapshot import NodeInfo, TaskInfo
from scheduling.plugins import predicates
from tests.unit.scheduling.builders import NodeBuilder, PodBuilder, make_node, make_pod

AFFINITY = predicates.AFFINITY_MISMATCH


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def term(*expressions: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"matchExpressions": list(expressions), "matchFields": list(fields)}


TOLERATES = [
    pytest.param(Toleration(key="k", value="v"), Taint(key="k", value="v"), True, id="equal-match"),
    pytest.param(
        Toleration(key="k", value="x"), Taint(key="k", value="v"), False, id="equal-other-value"
    ),
    pytest.param(
        Toleration(key="k", operator="Exists"),
        Taint(key="k", value="v"),
        True,
        id="exists-any-value",
    ),
    pytest.param(
        Toleration(operator="Exists"),
        Taint(key="any", value="v"),
        True,
        id="empty-key-exists-tolerates-all",
    ),
    pytest.param(
        Toleration(key="other", operator="Exists"), Taint(key="k"), False, id="exists-other-key"
    ),
    pytest.param(
        Toleration(key="k", operator="Exists", effect="NoExecute"),
        Taint(key="k", effect="NoSchedule"),
        False,
        id="effect-mismatch",
    ),
    pytest.param(
        Toleration(key="k", value="v", effect=""),
        Taint(key="k", value="v", effect="NoExecute"),
        True,
        id="empty-effect-any",
    ),
    pytest.param(
        Toleration(key="k", operator="", value="v"),
        Taint(key="k", value="v"),
        True,
        id="empty-operator-is-equal",
    ),
    pytest.param(
        Toleration(key="k", operator="Bogus"), Taint(key="k"), False, id="unknown-operator"
    ),
]


@pytest.mark.parametrize(("toleration", "taint", "expected"), TOLERATES)
def test_tolerates(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert predicates.tolerates(toleration, taint) is expected


LABELS = {"zone": "a", "gen": "5"}
MATCHES = [
    pytest.param("zone", "In", ("a", "b"), True, id="in"),
    pytest.param("zone", "In", ("b",), False, id="in-other"),
    pytest.param("rack", "In", ("a",), False, id="in-missing-label"),
    pytest.param("zone", "NotIn", ("b",), True, id="notin"),
    pytest.param("zone", "NotIn", ("a",), False, id="notin-listed"),
    pytest.param("rack", "NotIn", ("a",), True, id="notin-missing-label"),
    pytest.param("zone", "Exists", (), True, id="exists"),
    pytest.param("rack", "Exists", (), False, id="exists-missing"),
    pytest.param("rack", "DoesNotExist", (), True, id="does-not-exist"),
    pytest.param("zone", "DoesNotExist", (), False, id="does-not-exist-present"),
    pytest.param("gen", "Gt", ("4",), True, id="gt"),
    pytest.param("gen", "Gt", ("5",), False, id="gt-equal"),
    pytest.param("gen", "Lt", ("6",), True, id="lt"),
    pytest.param("gen", "Lt", ("5",), False, id="lt-equal"),
    pytest.param("zone", "Gt", ("1",), False, id="gt-non-integer-label"),
    pytest.param("gen", "Gt", ("x",), False, id="gt-non-integer-value"),
    pytest.param("gen", "Gt", ("1", "2"), False, id="gt-two-values"),
    pytest.param("rack", "Lt", ("9",), False, id="lt-missing-label"),
    pytest.param("zone", "Near", ("a",), False, id="unknown-operator"),
]


@pytest.mark.parametrize(("key", "operator", "values", "expected"), MATCHES)
def test_matches(key: str, operator: str, values: tuple[str, ...], expected: bool) -> None:
    requirement = NodeSelectorRequirement(key=key, operator=operator, values=values)
    assert constraints.matches(requirement, LABELS) is expected


NODE = make_node("n1").label("zone", "a").label("gen", "5")
AFFINITY_CASES = [
    pytest.param(make_pod("p"), None, id="no-constraint"),
    pytest.param(make_pod("p").node_selector(zone="a"), None, id="selector-match"),
    pytest.param(make_pod("p").node_selector(zone="b"), AFFINITY, id="selector-mismatch"),
    pytest.param(
        make_pod("p").node_selector(zone="a", ssd="true"), AFFINITY, id="selector-all-keys"
    ),
    pytest.param(make_pod("p").require(term(expr("zone", "In", "a"))), None, id="term-match"),
    pytest.param(
        make_pod("p").require(term(expr("zone", "In", "b"))), AFFINITY, id="term-mismatch"
    ),
    pytest.param(
        make_pod("p").require(term(expr("zone", "In", "b")), term(expr("gen", "Gt", "3"))),
        None,
        id="terms-are-ored",
    ),
    pytest.param(
        make_pod("p").require(term(expr("zone", "In", "a"), expr("gen", "Lt", "3"))),
        AFFINITY,
        id="expressions-are-anded",
    ),
    pytest.param(make_pod("p").require(term()), AFFINITY, id="empty-term-matches-nothing"),
    pytest.param(make_pod("p").require(), AFFINITY, id="no-terms-matches-nothing"),
    pytest.param(
        make_pod("p").require(term(fields=(expr("metadata.name", "In", "n1"),))),
        None,
        id="match-fields-name",
    ),
    pytest.param(
        make_pod("p").require(term(fields=(expr("metadata.name", "NotIn", "n1"),))),
        AFFINITY,
        id="match-fields-notin",
    ),
    pytest.param(
        make_pod("p").require(term(fields=(expr("metadata.uid", "In", "n1"),))),
        AFFINITY,
        id="match-fields-unsupported-key",
    ),
    pytest.param(
        make_pod("p").node_selector(zone="a").require(term(expr("zone", "NotIn", "a"))),
        AFFINITY,
        id="selector-and-affinity-both-needed",
    ),
]


@pytest.mark.parametrize(("pod", "expected"), AFFINITY_CASES)
def test_node_affinity(pod: PodBuilder, expected: str | None) -> None:
    assert predicates.node_affinity(pod.info(), NODE.info()) == expected


TAINTED = make_node("n1").taint("gpu", "yes").taint("soft", "x", "PreferNoSchedule")
TAINT_CASES = [
    pytest.param(make_node("n1"), make_pod("p"), None, id="untainted"),
    pytest.param(TAINTED, make_pod("p"), "node(s) had untolerated taint(s)", id="no-schedule"),
    pytest.param(
        make_node("n1").taint("dying", "now", "NoExecute"),
        make_pod("p"),
        "node(s) had untolerated taint(s)",
        id="no-execute",
    ),
    pytest.param(
        make_node("n1").taint("soft", "x", "PreferNoSchedule"),
        make_pod("p"),
        None,
        id="prefer-ignored",
    ),
    pytest.param(TAINTED, make_pod("p").tolerate("gpu", "yes"), None, id="tolerated-equal"),
    pytest.param(
        TAINTED, make_pod("p").tolerate("gpu", operator="Exists"), None, id="tolerated-exists"
    ),
    pytest.param(
        TAINTED, make_pod("p").tolerate(operator="Exists"), None, id="tolerate-everything"
    ),
    pytest.param(
        TAINTED,
        make_pod("p").tolerate("gpu", "no"),
        "node(s) had untolerated taint(s)",
        id="wrong-value",
    ),
    pytest.param(
        make_node("n1").taint("a", "1").taint("b", "2"),
        make_pod("p").tolerate("a", "1"),
        "node(s) had untolerated taint(s)",
        id="first-untolerated-reported",
    ),
]


@pytest.mark.parametrize(("node", "pod", "expected"), TAINT_CASES)
def test_taint_toleration(node: NodeBuilder, pod: PodBuilder, expected: str | None) -> None:
    assert predicates.taint_toleration(pod.info(), node.info()) == expected


UNSCHEDULABLE_CASES = [
    pytest.param(make_node("n1"), make_pod("p"), None, id="schedulable"),
    pytest.param(make_node("n1").cordon(), make_pod("p"), predicates.UNSCHEDULABLE, id="cordoned"),
    pytest.param(
        make_node("n1").cordon(),
        make_pod("p").tolerate(
            "node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"
        ),
        None,
        id="cordon-tolerated",
    ),
]


@pytest.mark.parametrize(("node", "pod", "expected"), UNSCHEDULABLE_CASES)
def test_node_unschedulable(node: NodeBuilder, pod: PodBuilder, expected: str | None) -> None:
    assert predicates.node_unschedulable(pod.info(), node.info()) == expected


def _loaded(node: NodeBuilder, *running: PodBuilder) -> NodeInfo:
    return node.info(*(p.on("n1").info() for p in running))


FIT_CASES = [
    pytest.param(make_node("n1", cpu="2"), [], make_pod("p", cpu="2"), (), id="exact-fit"),
    pytest.param(
        make_node("n1", cpu="2"),
        [make_pod("r", cpu="1")],
        make_pod("p", cpu="2"),
        ("Insufficient cpu",),
        id="cpu",
    ),
    pytest.param(
        make_node("n1", cpu="1", memory="512Mi"),
        [],
        make_pod("p", cpu="2"),
        ("Insufficient cpu", "Insufficient memory"),
        id="every-short-dimension",
    ),
    pytest.param(
        make_node("n1"),
        [],
        make_pod("p", cpu="").request(**{"nvidia.com/gpu": "1"}),
        ("Insufficient nvidia.com/gpu",),
        id="scalar-absent",
    ),
    pytest.param(
        make_node("n1", cpu="2"),
        [make_pod("r", cpu="3")],
        make_pod("p", cpu=""),
        (),
        id="best-effort-fits-anywhere",
    ),
]


@pytest.mark.parametrize(("node", "running", "pod", "expected"), FIT_CASES)
def test_resources_fit(
    node: NodeBuilder, running: list[PodBuilder], pod: PodBuilder, expected: tuple[str, ...]
) -> None:
    assert predicates.resources_fit(pod.info(), _loaded(node, *running)) == expected


@pytest.mark.parametrize(
    ("capacity", "running", "expected"),
    [
        pytest.param(2, 1, None, id="room"),
        pytest.param(2, 2, predicates.TOO_MANY_PODS, id="full"),
        pytest.param(0, 0, predicates.TOO_MANY_PODS, id="no-pod-capacity"),
    ],
)
def test_pod_number(capacity: int, running: int, expected: str | None) -> None:
    node = _loaded(
        make_node("n1", pods=capacity), *(make_pod(f"r{i}", cpu="") for i in range(running))
    )
    assert predicates.pod_number(make_pod("p").info(), node) == expected


def test_check_reports_resources_before_other_predicates() -> None:
    node = make_node("n1", cpu="1").taint("gpu", "yes").info()
    task: TaskInfo = make_pod("p", cpu="2").info()
    assert predicates.check(task, node) == ("Insufficient cpu",)
    assert predicates.check(task, node, fit_resources=False) == (
        "node(s) had untolerated taint(s)",
    )


def test_check_passes_a_fitting_node() -> None:
    assert predicates.check(make_pod("p").info(), make_node("n1").info()) == ()


@pytest.mark.parametrize(
    ("reasons", "expected"),
    [
        pytest.param(
            [("Insufficient cpu",)] * 3,
            "0/3 nodes are available: 3 Insufficient cpu",
            id="one-reason",
        ),
        pytest.param(
            [("Insufficient cpu", "Insufficient memory"), (predicates.TOO_MANY_PODS,)],
            "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods",
            id="histogram-sorted",
        ),
        pytest.param([], "0/0 nodes are available", id="no-nodes"),
    ],
)
def test_fit_error(reasons: list[tuple[str, ...]], expected: str) -> None:
    assert predicates.fit_error(len(reasons), reasons) == expected


ZONE_A = NodeSelector.model_validate({"nodeSelectorTerms": [term(expr("zone", "In", "a"))]})
ZONE_B = NodeSelector.model_validate({"nodeSelectorTerms": [term(expr("zone", "In", "b"))]})
VOLUME_CASES = [
    pytest.param((), None, id="no-bound-volume"),
    pytest.param((ZONE_A,), None, id="pv-reachable"),
    pytest.param((ZONE_B,), predicates.VOLUME_CONFLICT, id="pv-in-another-zone"),
    pytest.param((ZONE_A, ZONE_B), predicates.VOLUME_CONFLICT, id="every-pv-must-be-reachable"),
]


@pytest.mark.parametrize(("affinity", "expected"), VOLUME_CASES)
def test_volume_binding(affinity: tuple[NodeSelector, ...], expected: str | None) -> None:
    task = make_pod("p").info().model_copy(update={"volume_affinity": affinity})
    assert predicates.volume_binding(task, NODE.info()) == expected
    assert predicates.check(task, NODE.info()) == (() if expected is None else (expected,))
