"""podFailurePolicy and successPolicy matching, rule by rule."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.batchjob import indexes, policies
from controllers.batchjob.state import ContainerExit, PodRecord
from models.batchv1 import FailurePolicyAction, PodFailurePolicy, SuccessPolicy

RULES: list[dict[str, Any]] = [
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    {
        "action": "FailIndex",
        "onExitCodes": {"containerName": "side", "operator": "In", "values": [7]},
    },
    {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
]
POLICY = PodFailurePolicy.model_validate({"rules": RULES})


def _pod(*exits: tuple[str, int], conditions: dict[str, str] | None = None) -> PodRecord:
    return PodRecord(
        name="j-abcde",
        uid="u",
        phase="Failed",
        exits=tuple(ContainerExit(name=n, exit_code=c) for n, c in exits),
        conditions=conditions or {},
    )


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            _pod(("main", 137), conditions={"DisruptionTarget": "True"}),
            policies.Match(counts=False, action=FailurePolicyAction.IGNORE),
            id="disruption-ignored",
        ),
        pytest.param(
            _pod(("main", 1), conditions={"DisruptionTarget": "False"}),
            policies.Match(),
            id="condition-false-no-match",
        ),
        pytest.param(
            _pod(("main", 42)),
            policies.Match(
                fail_job="Container main for pod ns/j-abcde failed with exit code 42 "
                "matching FailJob rule at index 1",
                action=FailurePolicyAction.FAIL_JOB,
            ),
            id="exit-42-fails-job",
        ),
        pytest.param(
            _pod(("main", 0), ("side", 7)),
            policies.Match(action=FailurePolicyAction.FAIL_INDEX),
            id="named-container-fails-index",
        ),
        pytest.param(
            _pod(("main", 7)),
            policies.Match(action=FailurePolicyAction.COUNT),
            id="other-container-not-in-counts",
        ),
        pytest.param(_pod(("main", 1)), policies.Match(), id="no-rule-matches"),
        pytest.param(_pod(), policies.Match(), id="no-terminated-container"),
    ],
)
def test_pod_failure_policy(pod: PodRecord, expected: policies.Match) -> None:
    assert policies.match(POLICY, pod, "ns") == expected


def test_condition_rule_names_the_condition() -> None:
    policy = PodFailurePolicy.model_validate(
        {"rules": [{"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]}]}
    )
    found = policies.match(policy, _pod(conditions={"ConfigIssue": "True"}), "ns")
    assert (
        found.fail_job
        == "Pod ns/j-abcde has condition ConfigIssue matching FailJob rule at index 0"
    )


def test_no_policy_counts() -> None:
    assert policies.match(None, _pod(("main", 42)), "ns") == policies.Match()


@pytest.mark.parametrize(
    ("rules", "succeeded", "message"),
    [
        pytest.param([{"succeededIndexes": "0"}], "0", "Matched rules at index 0", id="index-0"),
        pytest.param([{"succeededIndexes": "0-2"}], "0,2", None, id="missing-one"),
        pytest.param(
            [{"succeededIndexes": "0-2", "succeededCount": 2}],
            "0,2",
            "Matched rules at index 0",
            id="count-within-indexes",
        ),
        pytest.param(
            [{"succeededIndexes": "5"}, {"succeededCount": 2}],
            "1,3",
            "Matched rules at index 1",
            id="second-rule-by-count",
        ),
        pytest.param([{"succeededCount": 3}], "1,3", None, id="not-enough"),
        pytest.param([{"succeededIndexes": "0"}], "", None, id="nothing-succeeded"),
    ],
)
def test_success_policy(rules: list[dict[str, Any]], succeeded: str, message: str | None) -> None:
    policy = SuccessPolicy.model_validate({"rules": rules})
    assert policies.success(policy, 4, indexes.parse(succeeded, 4)) == message
