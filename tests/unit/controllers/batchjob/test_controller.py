"""decide() against a fake cluster: whole Job stories, asserted on the status written."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controllers import effects as fx
from controllers.batchjob import controller
from controllers.outcomes import ActionFailed
from models.signals import common as common_signals
from models.signals import scheduler as scheduler_signals
from tests.builders import make_batch_job, observed_batch_job
from tests.unit.controllers.batchjob.cluster import START, FakeCluster

T = "2026-01-01T00:00:00Z"


def _cluster(**spec: Any) -> FakeCluster:
    cluster = FakeCluster()
    cluster.observe(make_batch_job("j").spec(**spec).manifest())
    return cluster


def _conditions(cluster: FakeCluster) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in cluster.status.get("conditions", [])]


def test_completions_5_parallelism_2_runs_two_at_a_time_to_complete() -> None:
    cluster = _cluster(completions=5, parallelism=2)
    assert len(cluster.live()) == 2
    assert cluster.status["startTime"] == T and cluster.status["active"] == 2
    most = 0
    while cluster.live():
        name = cluster.live()[0]
        cluster.run(name)
        most = max(most, len(cluster.live()))
        cluster.advance(timedelta(seconds=3))
        cluster.finish(name)
    assert most == 2
    status = cluster.status
    assert status == {
        "conditions": status["conditions"],
        "startTime": T,
        "completionTime": "2026-01-01T00:00:15Z",
        "succeeded": 5,
        "terminating": 0,
        "uncountedTerminatedPods": {},
        "ready": 0,
    }
    assert _conditions(cluster) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert cluster.condition("Complete")["message"] == "Reached expected number of succeeded pods"
    assert not cluster.pods or all(not p.finalizer for p in cluster.pods.values())


def test_finished_pods_go_through_uncounted_before_the_counter() -> None:
    cluster = _cluster(completions=2, parallelism=2)
    name = cluster.live()[0]
    cluster.finish(name)
    uid = f"{cluster.pods[name].uid}"
    interim = next(s for s in cluster.statuses if s["uncountedTerminatedPods"])
    assert interim["uncountedTerminatedPods"] == {"succeeded": [uid]}
    assert interim.get("succeeded", 0) == 0
    assert cluster.status["uncountedTerminatedPods"] == {} and cluster.status["succeeded"] == 1
    (removed,) = cluster.named("RemoveFinalizers")
    assert removed.pods == {name: uid}


def test_backoff_limit_2_waits_10s_then_20s_then_fails() -> None:
    cluster = _cluster(backoffLimit=2)
    waits = []
    for _ in range(3):
        (name,) = cluster.live()
        cluster.run(name)
        cluster.advance(timedelta(seconds=1))
        cluster.finish(name, exit_code=1)
        if "backoff" in cluster.timers:
            waits.append((cluster.timers["backoff"] - cluster.now).total_seconds())
            assert cluster.live() == []
            cluster.advance(timedelta(seconds=60))
    assert waits == [10, 20]
    assert cluster.status["failed"] == 3
    assert _conditions(cluster) == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]
    assert cluster.condition("Failed")["message"] == "Job has reached the specified backoff limit"
    assert "completionTime" not in cluster.status


def test_active_deadline_fails_and_deletes_running_pods() -> None:
    cluster = _cluster(parallelism=2, completions=4, activeDeadlineSeconds=30)
    assert cluster.timers["deadline"] == START + timedelta(seconds=30)
    for name in cluster.live():
        cluster.run(name)
    cluster.advance(timedelta(seconds=31))
    assert _conditions(cluster) == [
        ("FailureTarget", "True", "DeadlineExceeded"),
        ("Failed", "True", "DeadlineExceeded"),
    ]
    assert cluster.status["failed"] == 2 and "active" not in cluster.status
    (deleted,) = cluster.named("DeletePods")
    assert deleted.keep_finalizers and len(deleted.names) == 2
    assert cluster.pods == {}


def test_pods_gone_while_no_forwarder_watched_let_a_job_past_its_deadline_fail() -> None:
    """Regression (chaos soak): the deletions of its pods happened while no forwarder watched,
    and the Job stayed FailureTarget, never Failed, waiting for a pod that was gone."""
    cluster = _cluster(parallelism=2, completions=4, activeDeadlineSeconds=30)
    for name in cluster.live():
        cluster.run(name)
    cluster.unheard = True
    cluster.advance(timedelta(seconds=31))
    assert cluster.pods == {}
    assert cluster.condition("Failed") is None  # still waiting for its pods to go
    cluster.unheard = False
    cluster.listed()
    failed = cluster.condition("Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"


def test_pods_created_and_gone_unseen_are_read_then_replaced() -> None:
    cluster = FakeCluster(unheard=True)
    cluster.observe(make_batch_job("j").spec(parallelism=2, completions=2).manifest())
    created = sorted(cluster.pods)
    assert len(created) == 2
    cluster.pods.clear()  # gone again while no forwarder watched
    cluster.unheard = False
    cluster.listed()
    (check,) = cluster.named("CheckPods")
    assert check.names == created
    cluster.feed(controller.PodsAbsent(names=check.names))
    assert len(cluster.live()) == 2 and sorted(cluster.pods) != created  # replaced


def test_indexed_job_names_indexes_and_tracks_completed_indexes() -> None:
    cluster = _cluster(completionMode="Indexed", completions=3, parallelism=3)
    (create,) = cluster.named("CreatePods")
    assert [p.index for p in create.pods] == [0, 1, 2]
    assert all(p.name.startswith(f"j-{p.index}-") and len(p.name) == 9 for p in create.pods)
    by_index = {p.index: p.name for p in create.pods}
    cluster.finish(by_index[0])
    cluster.finish(by_index[2])
    assert cluster.status["completedIndexes"] == "0,2" and cluster.status["succeeded"] == 2
    cluster.finish(by_index[1])
    assert cluster.status["completedIndexes"] == "0-2"
    assert _conditions(cluster)[-1] == ("Complete", "True", "CompletionsReached")


def test_indexed_failed_pod_is_replaced_in_its_index() -> None:
    cluster = _cluster(completionMode="Indexed", completions=2, parallelism=2)
    by_index = {p.index: p.name for p in cluster.named("CreatePods")[0].pods}
    cluster.finish(by_index[1], exit_code=1)
    cluster.advance(timedelta(seconds=10))
    replacement = cluster.named("CreatePods")[-1].pods
    assert [p.index for p in replacement] == [1]
    assert replacement[0].name != by_index[1]


POLICY = {
    "rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    ]
}


def test_pod_failure_policy_ignore_then_fail_job() -> None:
    cluster = _cluster(backoffLimit=0, podFailurePolicy=POLICY)
    (first,) = cluster.live()
    cluster.finish(first, exit_code=137, conditions={"DisruptionTarget": "True"})
    assert "failed" not in cluster.status and "conditions" not in cluster.status
    cluster.advance(timedelta(seconds=10))  # ignored failures still back off
    (second,) = cluster.live()
    assert second != first
    cluster.finish(second, exit_code=42)
    assert _conditions(cluster) == [
        ("FailureTarget", "True", "PodFailurePolicy"),
        ("Failed", "True", "PodFailurePolicy"),
    ]
    assert cluster.condition("Failed")["message"] == (
        f"Container main for pod ns/{second} failed with exit code 42 matching FailJob rule "
        "at index 1"
    )
    assert cluster.status["failed"] == 1


def test_suspend_deletes_pods_uncounted_then_resume_restarts_clock() -> None:
    manifest = make_batch_job("j").spec(parallelism=2, completions=4).manifest()
    cluster = FakeCluster()
    cluster.observe(manifest)
    cluster.advance(timedelta(seconds=5))
    manifest["spec"]["suspend"] = True
    cluster.observe(manifest)
    assert cluster.live() == [] and cluster.pods == {}
    suspended = cluster.status
    assert "startTime" not in suspended and "active" not in suspended
    assert "failed" not in suspended
    assert _conditions(cluster) == [("Suspended", "True", "JobSuspended")]
    (deleted,) = cluster.named("DeletePods")
    assert not deleted.keep_finalizers
    cluster.advance(timedelta(seconds=5))
    manifest["spec"]["suspend"] = False
    cluster.observe(manifest)
    assert _conditions(cluster) == [("Suspended", "False", "JobResumed")]
    assert cluster.status["startTime"] == "2026-01-01T00:00:10Z"
    assert len(cluster.live()) == 2


def test_created_suspended_gets_condition_and_no_start_time() -> None:
    cluster = _cluster(suspend=True)
    assert cluster.named("CreatePods") == []
    assert _conditions(cluster) == [("Suspended", "True", "JobSuspended")]
    assert "startTime" not in cluster.status


def test_success_policy_completes_and_stops_the_rest() -> None:
    cluster = _cluster(
        completionMode="Indexed",
        completions=3,
        parallelism=3,
        successPolicy={"rules": [{"succeededIndexes": "0"}]},
    )
    by_index = {p.index: p.name for p in cluster.named("CreatePods")[0].pods}
    cluster.finish(by_index[0])
    assert _conditions(cluster) == [
        ("SuccessCriteriaMet", "True", "SuccessPolicy"),
        ("Complete", "True", "SuccessPolicy"),
    ]
    assert cluster.status["completedIndexes"] == "0"
    assert "failed" not in cluster.status  # the stopped pods are not failures


def test_backoff_limit_per_index_and_max_failed_indexes() -> None:
    cluster = _cluster(
        completionMode="Indexed",
        completions=3,
        parallelism=3,
        backoffLimitPerIndex=0,
        maxFailedIndexes=1,
    )
    by_index = {p.index: p.name for p in cluster.named("CreatePods")[0].pods}
    cluster.finish(by_index[0], exit_code=1)
    assert cluster.status["failedIndexes"] == "0"
    assert "conditions" not in cluster.status
    cluster.finish(by_index[2], exit_code=1)
    assert cluster.status["failedIndexes"] == "0,2"
    assert _conditions(cluster)[-1] == ("Failed", "True", "MaxFailedIndexesExceeded")


def test_failed_indexes_reason_when_all_indexes_are_done() -> None:
    cluster = _cluster(
        completionMode="Indexed", completions=2, parallelism=2, backoffLimitPerIndex=0
    )
    by_index = {p.index: p.name for p in cluster.named("CreatePods")[0].pods}
    cluster.finish(by_index[0])
    cluster.finish(by_index[1], exit_code=1)
    assert cluster.status["completedIndexes"] == "0" and cluster.status["failedIndexes"] == "1"
    assert _conditions(cluster)[-1] == ("Failed", "True", "FailedIndexes")


def test_per_index_retry_inherits_the_failure_count() -> None:
    cluster = _cluster(
        completionMode="Indexed", completions=1, parallelism=1, backoffLimitPerIndex=2
    )
    (first,) = cluster.named("CreatePods")[0].pods
    assert first.failure_count == 0
    cluster.finish(first.name, exit_code=1)
    assert cluster.pods[first.name].finalizer  # kept until the replacement exists
    cluster.advance(timedelta(seconds=10))
    second = cluster.named("CreatePods")[-1].pods[0]
    assert (second.index, second.failure_count) == (0, 1)
    assert not cluster.pods[first.name].finalizer  # counted and released once replaced
    assert cluster.status["failed"] == 1 and cluster.status["failedIndexes"] == ""


def test_scale_down_deletes_surplus_without_counting_it() -> None:
    manifest = make_batch_job("j").spec(parallelism=3, completions=6).manifest()
    cluster = FakeCluster()
    cluster.observe(manifest)
    ready = cluster.live()[0]
    cluster.run(ready)
    manifest["spec"]["parallelism"] = 1
    cluster.observe(manifest)
    assert cluster.live() == [ready]  # unscheduled pods go before the running one
    assert cluster.status["active"] == 1 and "failed" not in cluster.status


def test_creation_failure_retries_after_api_backoff() -> None:
    cluster = FakeCluster(fail_creates=1)
    cluster.observe(make_batch_job("j").manifest())
    assert cluster.live() == []
    assert cluster.timers["retry"] == START + timedelta(seconds=1)
    warning = cluster.named("RecordEvent")[-1]
    assert warning.reason == "SyncFailed" and "exceeded quota" in warning.message
    cluster.advance(timedelta(seconds=1))
    assert len(cluster.live()) == 1


def test_ttl_deletes_the_finished_job_once() -> None:
    cluster = _cluster(ttlSecondsAfterFinished=60)
    cluster.finish(cluster.live()[0])
    assert cluster.timers["ttl"] == START + timedelta(seconds=60)
    cluster.advance(timedelta(seconds=60))
    (deleted,) = cluster.named("DeleteJob")
    assert (deleted.namespace, deleted.name, deleted.uid) == ("ns", "j", "job-uid")


def test_ttl_edited_after_the_job_finished_moves_or_cancels_its_timer() -> None:
    """The field stays mutable, and the TTL controller reads the Job as it is now."""
    cluster = _cluster(ttlSecondsAfterFinished=600)
    cluster.finish(cluster.live()[0])
    assert cluster.timers["ttl"] == START + timedelta(seconds=600)
    cluster.observe(make_batch_job("j").spec(ttlSecondsAfterFinished=30).manifest())
    assert cluster.timers["ttl"] == START + timedelta(seconds=30)
    cluster.observe(make_batch_job("j").manifest())
    assert "ttl" not in cluster.timers and cluster.named("CancelTimer")
    cluster.observe(make_batch_job("j").spec(ttlSecondsAfterFinished=0).manifest())
    cluster.advance(timedelta(seconds=1))
    assert cluster.named("DeleteJob")


def test_deletion_ends_the_workflow_and_a_new_uid_starts_over() -> None:
    cluster = _cluster(activeDeadlineSeconds=100)
    other = make_batch_job("j", uid="other").manifest()
    decision = controller.decide(cluster.state, observed_batch_job(other), cluster.now)
    assert [e.kind for e in decision.effects] == ["StartOver"]
    cluster.feed(common_signals.JobDeleted(uid="job-uid"))
    assert cluster.named("Finish") and cluster.timers == {}


def test_status_is_written_only_when_it_changes() -> None:
    cluster = _cluster(parallelism=1, completions=1)
    writes = len(cluster.statuses)
    cluster.feed(observed_batch_job(make_batch_job("j").spec(completions=1).manifest()))
    assert len(cluster.statuses) == writes


def test_phase_changes_name_the_condition() -> None:
    cluster = _cluster()
    cluster.finish(cluster.live()[0])
    phases = [(e.previous, e.phase) for e in cluster.effects if isinstance(e, fx.PhaseChanged)]
    assert phases == [("Pending", "Running"), ("Running", "Completing"), ("Completing", "Complete")]


def _gang() -> FakeCluster:
    cluster = FakeCluster()
    template = make_batch_job("j").manifest()["spec"]["template"]
    template["spec"]["schedulerName"] = "volcano"
    cluster.observe(
        make_batch_job("j").spec(parallelism=2, completions=2, template=template).manifest()
    )
    return cluster


def test_gang_scheduled_job_gets_its_pod_group_before_its_pods() -> None:
    cluster = _gang()
    kinds = [e.kind for e in cluster.effects]
    assert kinds.index("EnsurePodGroup") < kinds.index("CreatePods")
    assert kinds.count("EnsurePodGroup") == 1 and cluster.state.pod_group


def test_placed_pods_are_bound_and_stale_ones_returned() -> None:
    cluster = _gang()
    waiting = cluster.live()[0]
    placed = scheduler_signals.PodsPlaced(
        session=7,
        placements=[
            scheduler_signals.PlacedPod(pod=waiting, node="kwok-node-0"),
            scheduler_signals.PlacedPod(pod="j-gone0", node="kwok-node-1"),
        ],
    )
    decision = controller.decide(cluster.state, placed, cluster.now)
    bind, tell = decision.effects
    assert isinstance(bind, fx.BindPlacements) and bind.session == 7
    assert [p.pod for p in bind.placements] == [waiting]
    assert isinstance(tell, fx.TellScheduler) and tell.scheduler == "scheduler/volcano"
    assert tell.failed == {"ns/j-gone0": "pod no longer waits for a node"}


def test_failed_bind_marks_the_pod_and_tells_the_scheduler() -> None:
    cluster = _gang()
    pod = cluster.live()[0]
    decision = controller.decide(
        cluster.state, controller.BindOutcome(failed={pod: "node not found"}), cluster.now
    )
    kinds = [e.kind for e in decision.effects]
    assert kinds[:3] == ["MarkUnschedulable", "RecordEvent", "TellScheduler"]
    tell = decision.effects[2]
    assert isinstance(tell, fx.TellScheduler) and tell.failed == {f"ns/{pod}": "node not found"}


def test_a_namespace_going_ends_the_workflow_like_a_deletion() -> None:
    cluster = _cluster(activeDeadlineSeconds=100)
    going = ActionFailed(effect="CreatePods", error="namespace gone", namespace_gone=True)
    cluster.feed(going)
    assert cluster.named("Finish") and cluster.timers == {}


def test_a_status_write_refused_is_written_again_after_the_back_off_not_at_once() -> None:
    """Regression (chaos soak, two workers): a refused status write was written again in the
    same decision, refused again, and so on: one Job's workflow ran to 11,900 events."""
    cluster = _cluster(backoffLimit=1)
    refused = ActionFailed(effect="WriteStatus", error="422 Invalid: cannot disable ...")
    decision = controller.decide(cluster.state, refused, cluster.now)
    kinds = [e.kind for e in decision.effects]
    assert "WriteStatus" not in kinds and kinds == ["RecordEvent", "StartTimer"], kinds
    cluster.state = decision.state
    cluster.effects.clear()
    cluster.timers["retry"] = decision.effects[1].fires_at  # type: ignore[union-attr]
    cluster.advance(timedelta(seconds=2))
    assert cluster.named("WriteStatus")


def test_a_terminal_condition_found_on_the_job_is_kept_by_every_later_write() -> None:
    """Regression (chaos soak, two workers): a worker wrote FailureTarget with a local activity
    and died before its workflow task was recorded; the task ran again elsewhere, decided
    otherwise, and every later write was refused (the apiserver never takes a terminal
    condition back). The core adopts a terminal condition it finds on the Job."""
    cluster = _cluster(backoffLimit=3)
    (name,) = cluster.live()
    cluster.run(name)
    manifest = make_batch_job("j").manifest()
    manifest["status"] = {
        **cluster.status,
        "conditions": [
            {
                "type": "FailureTarget",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastTransitionTime": T,
                "lastProbeTime": T,
            }
        ],
    }
    cluster.observe(manifest)
    assert cluster.condition("FailureTarget") is not None
    assert cluster.named("DeletePods") and cluster.live() == []
    assert _conditions(cluster) == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]
