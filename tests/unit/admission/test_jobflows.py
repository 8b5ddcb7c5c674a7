"""A JobFlow's entries must form a DAG, as Volcano's jobflow webhook refuses: unknown targets
and cycles (self, two, longer), each message naming the field; the review routes JobFlows."""

from __future__ import annotations

from typing import Any

import pytest

from admission import jobflows, rules
from tests.unit.admission.test_rules import Queues, _request

pytestmark = pytest.mark.unit


def flow(*entries: str) -> dict[str, Any]:
    """Entries as "b<a,c" (b depends on a and c) or "a"."""
    flows: list[dict[str, Any]] = []
    for text in entries:
        name, _, targets = text.partition("<")
        entry: dict[str, Any] = {"name": name}
        if targets:
            entry["dependsOn"] = {"targets": targets.split(",")}
        flows.append(entry)
    return {"metadata": {"name": "test", "namespace": "team"}, "spec": {"flows": flows}}


CASES = [
    pytest.param(flow("a", "b<a", "c<b", "d<b", "e<c,d"), [], id="volcano-example-dag"),
    pytest.param(flow(), [], id="no-entries"),
    pytest.param(
        flow("a", "b<a,x"),
        ["spec.flows[1].dependsOn.targets[1]: jobflow Flow is not DAG: vertex is not defined: x"],
        id="unknown-target",
    ),
    pytest.param(flow("a<a"), ["spec.flows: jobflow Flow is not DAG: a -> a"], id="self"),
    pytest.param(
        flow("a<b", "b<a"), ["spec.flows: jobflow Flow is not DAG: a -> b -> a"], id="two-cycle"
    ),
    pytest.param(
        flow("a", "b<a,d", "c<b", "d<c"),
        ["spec.flows: jobflow Flow is not DAG: b -> d -> c -> b"],
        id="long-cycle",
    ),
]


@pytest.mark.parametrize(("obj", "problems"), CASES)
def test_problems(obj: dict[str, Any], problems: list[str]) -> None:
    assert jobflows.problems(obj) == problems


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_review_refuses_a_cycle_naming_the_flow(operation: str) -> None:
    request = _request("flow.volcano.sh", "jobflows", operation, flow("a<b", "b<a"), flow("a"))
    verdict = rules.review(request, Queues())
    assert verdict == rules.Verdict(
        allowed=False, message="jobflow team/test: spec.flows: jobflow Flow is not DAG: a -> b -> a"
    )


def test_review_admits_a_dag_and_reads_no_queue() -> None:
    queues = Queues()
    request = _request("flow.volcano.sh", "jobflows", "CREATE", flow("a", "b<a"))
    assert rules.review(request, queues) == rules.ALLOW and queues.reads == []
