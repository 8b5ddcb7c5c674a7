"""Whether a Job is finishing: each terminal condition, and which one wins."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.batchjob import conditions, finishing
from controllers.batchjob.state import PodRecord
from models.batchv1 import BatchJobStatus, JobCondition
from tests.unit.controllers.batchjob.records import T0, at, counted, failed, job, pod

FAIL_ON_42 = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
INDEXED = {"completionMode": "Indexed", "completions": 3, "parallelism": 3}
PER_INDEX = {**INDEXED, "backoffLimitPerIndex": 0}


def _decide(
    spec: dict[str, Any], *pods: PodRecord, status: BatchJobStatus | None = None, now: int = 0
) -> finishing.Verdict:
    the_job = job(**spec)
    status = status or BatchJobStatus(start_time=T0)
    return finishing.decide(the_job, status, counted(the_job, *pods, status=status), at(now))


def _reason(verdict: finishing.Verdict) -> tuple[str, str | None] | None:
    found = verdict.condition
    return None if found is None else (found.type, found.reason)


@pytest.mark.parametrize(
    ("spec", "pods", "expected"),
    [
        pytest.param({}, [pod("a", phase="Running")], None, id="running"),
        pytest.param({"backoffLimit": 1}, [failed("a")], None, id="failures-within-backoff-limit"),
        pytest.param(
            {"backoffLimit": 1},
            [failed("a"), failed("b")],
            ("FailureTarget", "BackoffLimitExceeded"),
            id="past-backoff-limit",
        ),
        pytest.param(
            {"backoffLimit": 6, "podFailurePolicy": FAIL_ON_42},
            [failed("a", exit_code=42)],
            ("FailureTarget", "PodFailurePolicy"),
            id="fail-job-rule",
        ),
        pytest.param(
            {"backoffLimit": 0, "podFailurePolicy": FAIL_ON_42},
            [failed("a", exit_code=42)],
            ("FailureTarget", "PodFailurePolicy"),
            id="fail-job-rule-before-backoff-limit",
        ),
        pytest.param(
            {"backoffLimit": 2, "template": {"spec": {"restartPolicy": "OnFailure"}}},
            [pod("a", phase="Running", restarts=2)],
            ("FailureTarget", "BackoffLimitExceeded"),
            id="on-failure-restarts-count",
        ),
        pytest.param(
            {**PER_INDEX, "maxFailedIndexes": 0},
            [failed("i0", index=0)],
            ("FailureTarget", "MaxFailedIndexesExceeded"),
            id="max-failed-indexes",
        ),
        pytest.param(
            PER_INDEX,
            [failed("i0", index=0), pod("i1", index=1, phase="Running")],
            None,
            id="failed-index-while-others-run",
        ),
        pytest.param(
            {**PER_INDEX, "completions": 2, "parallelism": 2},
            [failed("i0", index=0), pod("i1", index=1, phase="Succeeded")],
            ("FailureTarget", "FailedIndexes"),
            id="every-index-done-some-failed",
        ),
        pytest.param(
            {**INDEXED, "successPolicy": {"rules": [{"succeededIndexes": "1"}]}},
            [pod("i1", index=1, phase="Succeeded")],
            ("SuccessCriteriaMet", "SuccessPolicy"),
            id="success-policy",
        ),
    ],
)
def test_terminal_conditions(
    spec: dict[str, Any], pods: list[PodRecord], expected: tuple[str, str] | None
) -> None:
    assert _reason(_decide(spec, *pods)) == expected


def test_fail_job_message_names_the_first_matching_pod() -> None:
    verdict = _decide({"podFailurePolicy": FAIL_ON_42}, failed("b", exit_code=42), failed("c"))
    assert verdict.condition is not None
    assert verdict.condition.message == (
        "Container main for pod ns/b failed with exit code 42 matching FailJob rule at index 0"
    )


def _true(type_: str, reason: str) -> JobCondition:
    return conditions.new(type_, reason, "written before", T0)


def test_a_written_failure_target_becomes_failed_now() -> None:
    status = BatchJobStatus(
        start_time=T0, conditions=[_true("FailureTarget", "BackoffLimitExceeded")]
    )
    verdict = _decide({}, status=status, now=7)
    assert verdict.condition == conditions.new(
        "Failed", "BackoffLimitExceeded", "written before", at(7)
    )


def test_success_criteria_met_stays_as_written() -> None:
    written = _true("SuccessCriteriaMet", "CompletionsReached")
    status = BatchJobStatus(start_time=T0, conditions=[written])
    assert _decide({"backoffLimit": 0}, failed("a"), status=status).condition == written


@pytest.mark.parametrize(
    ("spec", "start", "now", "expected", "deadline"),
    [
        pytest.param({"activeDeadlineSeconds": 30}, T0, 10, None, at(30), id="before"),
        pytest.param(
            {"activeDeadlineSeconds": 30},
            T0,
            30,
            ("FailureTarget", "DeadlineExceeded"),
            None,
            id="at-deadline",
        ),
        pytest.param(
            {"activeDeadlineSeconds": 30, "suspend": True}, T0, 60, None, None, id="suspended"
        ),
        pytest.param({"activeDeadlineSeconds": 30}, None, 60, None, None, id="not-started"),
        pytest.param({}, T0, 60, None, None, id="no-deadline"),
    ],
)
def test_active_deadline_seconds(
    spec: dict[str, Any],
    start: Any,
    now: int,
    expected: tuple[str, str] | None,
    deadline: Any,
) -> None:
    verdict = _decide(spec, status=BatchJobStatus(start_time=start), now=now)
    assert (_reason(verdict), verdict.deadline) == (expected, deadline)


def test_deadline_still_armed_when_an_index_finishes_the_job() -> None:
    spec = {**PER_INDEX, "maxFailedIndexes": 0, "activeDeadlineSeconds": 100}
    verdict = _decide(spec, failed("i0", index=0), now=10)
    assert _reason(verdict) == ("FailureTarget", "MaxFailedIndexesExceeded")
    assert verdict.deadline == at(100)
