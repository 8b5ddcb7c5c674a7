"""manageJob: how many pods, which go first, when creation waits; and a finishing Job's stop."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.batchjob import conditions, manage
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import Backoff, PodRecord
from models.batchv1 import BatchJobStatus, Reason
from tests.builders import make_batch_job
from tests.unit.controllers.batchjob.records import T0, at, counted, failed, job, pod

INDEXED = {"completionMode": "Indexed", "completions": 4, "parallelism": 4}


def _manage(
    spec: dict[str, Any],
    *pods: PodRecord,
    record: Backoff | None = None,
    now: int = 0,
    hold: bool = False,
    status: BatchJobStatus | None = None,
) -> manage.Managed:
    the_job = job(**spec)
    seen = counted(the_job, *pods, now=at(now), status=status)
    return manage.manage(the_job, seen, record or Backoff(), at(now), hold=hold)


def _created(managed: manage.Managed) -> list[batch_fx.CreatePods]:
    return [e for e in managed.effects if isinstance(e, batch_fx.CreatePods)]


def _deleted(managed: manage.Managed) -> batch_fx.DeletePods:
    (effect,) = managed.effects
    assert isinstance(effect, batch_fx.DeletePods)
    return effect


@pytest.mark.parametrize(
    ("completions", "parallelism", "active", "succeeded", "want"),
    [
        pytest.param(None, 3, 0, 0, 3, id="work-queue-starts-parallelism"),
        pytest.param(None, 3, 2, 1, 2, id="work-queue-after-a-success-keeps-what-runs"),
        pytest.param(6, 3, 0, 0, 3, id="parallelism-caps"),
        pytest.param(6, 3, 0, 4, 2, id="completions-left"),
        pytest.param(6, 3, 0, 6, 0, id="all-succeeded"),
        pytest.param(6, 3, 0, 8, 0, id="more-than-completions"),
    ],
)
def test_want_active(
    completions: int | None, parallelism: int, active: int, succeeded: int, want: int
) -> None:
    the_job = make_batch_job("j").spec(completions=completions, parallelism=parallelism).build()
    assert manage.want_active(the_job, active, succeeded) == want


@pytest.mark.parametrize(
    ("spec", "pods", "created"),
    [
        pytest.param({"completions": 6, "parallelism": 3}, [], 3, id="parallelism"),
        pytest.param(
            {"completions": 6, "parallelism": 3},
            [pod("a", phase="Running")],
            2,
            id="minus-active",
        ),
        pytest.param(
            {"completions": 5, "parallelism": 3},
            [pod(f"s{i}", phase="Succeeded") for i in range(4)],
            1,
            id="completions-left",
        ),
        pytest.param(
            {"completions": 1000, "parallelism": 1000}, [], 500, id="at-most-500-per-sync"
        ),
        pytest.param(
            {"completions": 3, "parallelism": 3, "podReplacementPolicy": "Failed"},
            [pod("a", phase="Running", deleting=True)],
            2,
            id="failed-policy-waits-for-terminating",
        ),
        pytest.param(
            {"completions": 3, "parallelism": 3},
            [pod("a", phase="Running", deleting=True)],
            3,
            id="terminating-replaced-at-once",
        ),
    ],
)
def test_creation_counts(spec: dict[str, Any], pods: list[PodRecord], created: int) -> None:
    managed = _manage(spec, *pods)
    (create,) = _created(managed)
    assert len(create.pods) == created
    assert managed.pod_seq == created  # one sequence number per pod name
    issued = [managed.pods[p.name] for p in create.pods]
    assert all(p.issued_at == T0 and not p.observed for p in issued)  # expected, not seen yet


ALPHABET = set("bcdfghjklmnpqrstvwxz2456789")  # the apiserver's generateName alphabet


def test_pod_names_follow_the_job_uid_and_sequence() -> None:
    (create,) = _created(_manage({"completions": 3, "parallelism": 3}))
    names = [p.name for p in create.pods]
    assert names == [manage.pod_name(job(), None, seq) for seq in (1, 2, 3)]  # a retry finds it
    assert all(n.startswith("j-") and set(n[2:]) <= ALPHABET and len(n) == 7 for n in names)
    assert manage.pod_name(job(), 4, 7).startswith("j-4-")
    other = make_batch_job("j", uid="another-uid").build()
    assert manage.pod_name(other, None, 1) != names[0]  # another Job, other names


def test_pod_names_never_repeat_within_a_job() -> None:
    names = [manage.pod_name(job(), None, seq) for seq in range(1, 20_001)]
    assert len(set(names)) == len(names)
    assert manage.pod_name(job(), None, 115) != manage.pod_name(job(), None, 148)


@pytest.mark.parametrize(
    ("index", "prefix"),
    [
        pytest.param(None, "x" * 57 + "-", id="non-indexed"),
        pytest.param(12, "x" * 54 + "-12-", id="indexed-keeps-its-index"),
    ],
)
def test_long_job_names_are_cut_to_63_characters(index: int | None, prefix: str) -> None:
    the_job = make_batch_job("x" * 70).build()
    name = manage.pod_name(the_job, index, 1)
    assert name.startswith(prefix) and len(name) == 63 and set(name[len(prefix) :]) <= ALPHABET


def test_indexed_creates_the_lowest_pending_indexes() -> None:
    managed = _manage(
        INDEXED, pod("i1", index=1, phase="Running"), status=BatchJobStatus(completed_indexes="0")
    )
    (create,) = _created(managed)
    assert [(p.index, p.failure_count) for p in create.pods] == [(2, None), (3, None)]


def test_surplus_goes_in_deletion_order_without_finalizers() -> None:
    pods = [
        pod("running-ready", phase="Running", node="n", ready=True, ready_since=T0),
        pod("running", phase="Running", node="n"),
        pod("pending-unassigned", phase="Pending"),
    ]
    managed = _manage({"completions": 6, "parallelism": 1}, *pods)
    deleted = _deleted(managed)
    assert deleted == batch_fx.DeletePods(
        names=["pending-unassigned", "running"],
        keep_finalizers=False,
        why="too many pods running, want 1",
    )
    gone = managed.pods["running"]
    assert (gone.deleting, gone.finalizer) == (True, False)


def test_suspended_deletes_every_active_pod_and_creates_none() -> None:
    pods = [pod("a", phase="Running"), pod("b"), pod("done", phase="Succeeded")]
    deleted = _deleted(_manage({"parallelism": 3, "completions": 3, "suspend": True}, *pods))
    assert (sorted(deleted.names), deleted.why) == (["a", "b"], "job suspended")
    assert _manage({"suspend": True}).effects == ()


@pytest.mark.parametrize(
    ("failures", "since", "wait_until"),
    [
        pytest.param(1, 4, at(10), id="first-failure-10s"),
        pytest.param(2, 5, at(20), id="second-failure-20s"),
        pytest.param(7, 0, at(600), id="capped-at-10m"),
    ],
)
def test_pod_failure_backoff_holds_creation(failures: int, since: int, wait_until: Any) -> None:
    record = Backoff(failures=failures, last_failure=T0)
    managed = _manage({}, record=record, now=since)
    assert (managed.effects, managed.wait_until) == ((), wait_until)


def test_backoff_over_creates_again() -> None:
    managed = _manage({}, record=Backoff(failures=1, last_failure=T0), now=10)
    assert len(_created(managed)) == 1 and managed.wait_until is None


def test_an_api_backoff_holds_creation_but_not_deletion() -> None:
    assert _manage({"parallelism": 2, "completions": 2}, hold=True) == manage.Managed(
        pods={}, pod_seq=0
    )
    held = _manage({"parallelism": 1, "completions": 2}, pod("a"), pod("b"), hold=True)
    assert _deleted(held).names == ["a"]  # alike in every other way: the name decides


def test_per_index_backoff_waits_for_the_index_then_inherits_its_failures() -> None:
    spec = {**INDEXED, "completions": 1, "parallelism": 1, "backoffLimitPerIndex": 2}
    first = failed("i0", index=0, failure_count=0, finished_at=T0)
    waiting = _manage(spec, first, now=4)
    assert (waiting.effects, waiting.wait_until) == ((), at(10))
    (create,) = _created(_manage(spec, first, now=10))
    assert [(p.index, p.failure_count, p.ignored_failure_count) for p in create.pods] == [(0, 1, 0)]


def test_stop_deletes_observed_active_pods_keeping_finalizers() -> None:
    target = conditions.failure_target(Reason.DEADLINE_EXCEEDED, "late", T0)
    seen = counted(
        job(parallelism=3, completions=3),
        pod("running", phase="Running"),
        pod("not-seen-yet", uid=None),
        pod("done", phase="Succeeded"),
    )
    stopped = manage.stop(seen, target)
    assert stopped.effects == (
        batch_fx.DeletePods(
            names=["running"], keep_finalizers=True, why="job finishing: DeadlineExceeded"
        ),
    )
    assert stopped.pods["running"] == seen.pods["running"].model_copy(update={"deleting": True})
    assert stopped.pods["not-seen-yet"] == seen.pods["not-seen-yet"]
