"""One sync, step by step: what it writes, deletes, creates, and which timers it asks for."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controllers import effects as fx
from controllers.batchjob import conditions, sync
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import Backoff, BatchJobRecord, PodRecord
from models.batchv1 import BatchJobStatus, JobCondition, Reason
from models.batchv1 import UncountedTerminatedPods as Uncounted
from tests.unit.controllers.batchjob.records import T0, at, failed, job, pod, record

STARTED = BatchJobStatus(start_time=T0)


def _state(*pods: PodRecord, status: BatchJobStatus = STARTED, **spec: Any) -> BatchJobRecord:
    return record(job(**spec), *pods, status=status)


def _kinds(plan: sync.Plan) -> list[str]:
    return [e.kind for e in plan.effects]


def _conditions(status: BatchJobStatus) -> list[tuple[str, str, str | None]]:
    return [(c.type, c.status, c.reason) for c in status.conditions or []]


def _written(plan: sync.Plan) -> batch_fx.WriteStatus:
    (write,) = [e for e in plan.effects if isinstance(e, batch_fx.WriteStatus)]
    assert write.status == plan.state.status == plan.state.written
    return write


def test_first_sync_starts_the_clock_and_creates_parallelism_pods() -> None:
    state = _state(status=BatchJobStatus(), completions=5, parallelism=2)
    plan = sync.sync(state, T0 + timedelta(milliseconds=400))  # the status keeps whole seconds
    assert _kinds(plan) == ["CreatePods", "WriteStatus"]
    (create,) = [e for e in plan.effects if isinstance(e, batch_fx.CreatePods)]
    assert [p.name for p in create.pods] == ["j-p6c6z", "j-k97q9"]
    assert _written(plan) == batch_fx.WriteStatus(
        status=BatchJobStatus(
            start_time=T0, active=2, ready=0, terminating=0, uncounted_terminated_pods=Uncounted()
        ),
        summary="Running: active 2, succeeded 0, failed 0",
    )
    assert plan.state.pod_seq == 2 and plan.timers == {}


def test_a_creation_not_observed_yet_arms_the_expectations_timer() -> None:
    state = _state(pod("j-p6c6z", uid=None, issued_at=T0))
    plan = sync.sync(state, at(60))
    assert _kinds(plan) == ["WriteStatus"]  # nothing created while a creation is expected
    assert plan.timers == {
        "expectations": sync.Timer(
            fires_at=at(300), summary="stop waiting for pods created but never observed"
        )
    }


def test_suspended_job_says_so_after_writing() -> None:
    plan = sync.sync(_state(status=BatchJobStatus(), suspend=True), T0)
    assert _conditions(plan.state.status) == [("Suspended", "True", "JobSuspended")]
    assert plan.state.status.start_time is None
    assert _kinds(plan) == ["WriteStatus", "RecordEvent"]
    assert plan.effects[-1] == fx.RecordEvent(reason="Suspended", message="Job suspended")


def test_resumed_job_restarts_the_clock_and_creates_pods() -> None:
    suspended = conditions.new("Suspended", Reason.JOB_SUSPENDED, "Job suspended", T0)
    plan = sync.sync(_state(status=BatchJobStatus(conditions=[suspended])), at(50))
    assert _conditions(plan.state.status) == [("Suspended", "False", "JobResumed")]
    assert plan.state.status.start_time == at(50)
    assert _kinds(plan) == ["CreatePods", "WriteStatus", "RecordEvent"]
    assert plan.effects[-1] == fx.RecordEvent(reason="Resumed", message="Job resumed")


def test_active_deadline_arms_a_timer_then_fails_the_job() -> None:
    state = _state(pod("a", phase="Running"), activeDeadlineSeconds=30)
    early = sync.sync(state, at(10))
    assert early.timers == {
        "deadline": sync.Timer(
            fires_at=at(30), summary="activeDeadlineSeconds 30: fail the job in 20s"
        )
    }
    late = sync.sync(state, at(30))
    assert _kinds(late) == ["DeletePods", "WriteStatus", "RemoveFinalizers"]
    assert late.effects[0] == batch_fx.DeletePods(
        names=["a"], keep_finalizers=True, why="job finishing: DeadlineExceeded"
    )
    status = late.state.status
    assert _conditions(status) == [("FailureTarget", "True", "DeadlineExceeded")]
    assert status.uncounted_terminated_pods == Uncounted(failed=["uid-a"])
    assert (status.active, status.terminating) == (0, 1)
    assert late.timers == {}


def test_a_failure_arms_the_backoff_timer_and_counts_the_pod() -> None:
    plan = sync.sync(_state(failed("a", finished_at=T0)), at(3))
    assert plan.timers == {
        "backoff": sync.Timer(
            fires_at=at(10), summary="re-create pods in 7s: back-off after 1 failures"
        )
    }
    assert _kinds(plan) == ["WriteStatus", "RemoveFinalizers"]
    assert plan.state.backoff == Backoff(failures=1, last_failure=T0)
    assert plan.state.status.uncounted_terminated_pods == Uncounted(failed=["uid-a"])
    assert plan.state.removing == ("uid-a",)


def test_the_last_success_counted_completes_the_job() -> None:
    status = BatchJobStatus(start_time=T0, uncounted_terminated_pods=Uncounted(succeeded=["u"]))
    plan = sync.sync(_state(status=status), at(9))
    got = plan.state.status
    assert _conditions(got) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert (got.succeeded, got.completion_time) == (1, at(9))
    assert _kinds(plan) == ["WriteStatus", "RecordEvent"]
    assert plan.effects[-1] == fx.RecordEvent(reason="Completed", message="Job completed")


def test_a_finished_job_is_left_alone() -> None:
    complete = conditions.new("Complete", Reason.COMPLETIONS_REACHED, "done", T0)
    state = _state(pod("a", phase="Running"), status=BatchJobStatus(conditions=[complete]))
    assert sync.sync(state, at(5)) == sync.Plan(state=state)


def test_a_job_being_deleted_creates_nothing() -> None:
    state = _state(parallelism=2, completions=2)
    assert state.job is not None
    meta = state.job.metadata.model_copy(update={"deletion_timestamp": T0})
    going = state.model_copy(update={"job": state.job.model_copy(update={"metadata": meta})})
    assert _kinds(sync.sync(going, T0)) == ["WriteStatus"]


def test_an_api_backoff_creates_nothing_until_it_is_over() -> None:
    state = _state().model_copy(update={"timers": {"retry": at(1)}})
    assert _kinds(sync.sync(state, T0)) == ["WriteStatus"]


def test_pods_not_observed_yet_hold_a_failure_back() -> None:
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    state = _state(
        failed("a", exit_code=42),
        pod("b", uid=None, issued_at=T0),
        podFailurePolicy=policy,
        parallelism=2,
    )
    plan = sync.sync(state, at(1))
    assert _conditions(plan.state.status) == []  # FailureTarget waits for pod b to be seen
    assert _kinds(plan) == ["WriteStatus", "RemoveFinalizers"]


def test_a_failure_target_written_before_becomes_failed() -> None:
    target: JobCondition = conditions.failure_target(Reason.BACKOFF_LIMIT_EXCEEDED, "m", T0)
    status = BatchJobStatus(start_time=T0, conditions=[target], failed=7)
    plan = sync.sync(_state(status=status), at(2))
    assert _conditions(plan.state.status) == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]
    assert plan.effects[-1] == fx.RecordEvent(
        type="Warning", reason="BackoffLimitExceeded", message="m"
    )
