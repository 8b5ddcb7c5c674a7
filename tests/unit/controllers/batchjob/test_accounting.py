"""Pod accounting: failure, deletion order, pending indexes, failed indexes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.batchjob import accounting, indexed
from controllers.batchjob.state import ContainerExit, PodRecord
from models.batchv1 import BatchJob
from tests.builders import make_batch_job

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PLAIN = make_batch_job("j").spec(parallelism=3, completions=6).build()
FAILED_ONLY = make_batch_job("j").spec(podReplacementPolicy="Failed").build()
INDEXED = make_batch_job("j").spec(completionMode="Indexed", completions=4, parallelism=4).build()


def _pod(name: str, **kw: Any) -> PodRecord:
    return PodRecord(name=name, uid=f"uid-{name}", **kw)


@pytest.mark.parametrize(
    ("job", "pod", "failed"),
    [
        pytest.param(PLAIN, _pod("a", phase="Failed"), True, id="failed-phase"),
        pytest.param(PLAIN, _pod("a", phase="Running", deleting=True), True, id="deleted-running"),
        pytest.param(PLAIN, _pod("a", phase="Succeeded", deleting=True), False, id="deleted-done"),
        pytest.param(
            FAILED_ONLY, _pod("a", phase="Running", deleting=True), False, id="failed-only-waits"
        ),
        pytest.param(FAILED_ONLY, _pod("a", phase="Failed"), True, id="failed-only-failed"),
        pytest.param(PLAIN, _pod("a", phase="Running"), False, id="running"),
    ],
)
def test_is_failed(job: BatchJob, pod: PodRecord, failed: bool) -> None:
    assert accounting.is_failed(job, pod) is failed


def test_deletion_order_follows_active_pods() -> None:
    pods = [
        _pod("running-ready-old", phase="Running", node="n", ready=True, ready_since=T0),
        _pod(
            "running-ready-new",
            phase="Running",
            node="n",
            ready=True,
            ready_since=T0 + timedelta(seconds=5),
        ),
        _pod("running-not-ready", phase="Running", node="n"),
        _pod("pending-assigned", phase="Pending", node="n"),
        _pod("pending-unassigned", phase="Pending"),
        _pod("running-restarted", phase="Running", node="n", max_restarts=2),
    ]
    order = [p.name for p in accounting.for_removal(PLAIN, pods, len(pods))]
    assert order == [
        "pending-unassigned",
        "pending-assigned",
        "running-restarted",
        "running-not-ready",
        "running-ready-new",
        "running-ready-old",
    ]


def test_newer_pod_goes_first_among_equals() -> None:
    pods = [
        _pod("older", phase="Running", node="n", created_at=T0),
        _pod("newer", phase="Running", node="n", created_at=T0 + timedelta(seconds=1)),
    ]
    assert [p.name for p in accounting.for_removal(PLAIN, pods, 1)] == ["newer"]


def test_indexed_removes_duplicates_and_out_of_range_first() -> None:
    pods = [
        _pod("i0", index=0, phase="Running", node="n", ready=True),
        _pod("i0-dup", index=0, phase="Pending"),
        _pod("i9", index=9, phase="Running", node="n"),
        _pod("none", phase="Running", node="n"),
        _pod("i1", index=1, phase="Running", node="n"),
    ]
    removed = {p.name for p in accounting.for_removal(INDEXED, pods, 0)}
    assert removed == {"i0-dup", "i9", "none"}


def test_first_pending_indexes_skip_succeeded_active_and_failed() -> None:
    active = [_pod("a", index=1)]
    got = indexed.first_pending_indexes(INDEXED, active, 3, ((0, 0),), ((2, 2),))
    assert got == [3]


def test_failed_index_after_budget_and_fail_index_rule() -> None:
    job = (
        make_batch_job("j")
        .spec(
            completionMode="Indexed",
            completions=4,
            parallelism=4,
            backoffLimitPerIndex=1,
            podFailurePolicy={
                "rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]
            },
        )
        .build()
    )
    exits = (ContainerExit(name="main", exit_code=1),)
    pods = [
        _pod("first-try", index=0, phase="Failed", exits=exits, failure_count=0),
        _pod("second-try", index=1, phase="Failed", exits=exits, failure_count=1),
        _pod(
            "fail-index", index=2, phase="Failed", exits=(ContainerExit(name="main", exit_code=3),)
        ),
    ]
    assert indexed.failed_indexes(job, pods, None) == ((1, 2),)
    assert indexed.next_failure_counts(job, pods[0]) == (1, 0)
