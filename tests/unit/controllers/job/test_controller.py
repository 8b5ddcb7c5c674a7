"""decide(): the PodGroup gate, scaling, kills, TTL, deletion and commands, by value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controllers import effects as fx
from controllers.job import controller, results
from controllers.job import effects as job_fx
from controllers.job.state import JobRecord
from controllers.outcomes import ActionFailed
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import scheduler as scheduler_signals
from models.signals.job import PodSnapshot
from models.vcjob import JobPhase
from tests.builders import make_job, observed_job

NOW = datetime(2026, 1, 1, tzinfo=UTC)
GATED = JobRecord()
UNGATED = JobRecord(settings=job_signals.ControllerSettings(scheduler_override="default-scheduler"))


def _manifest(**spec: Any) -> dict[str, Any]:
    doc = make_job("j", namespace="ns").task("w", replicas=2).spec(**spec).manifest()
    doc["metadata"].update(uid="u1", generation=1, creationTimestamp="2026-01-01T00:00:00Z")
    return doc


def _run(
    state: JobRecord, *inputs: controller.Input, now: datetime = NOW
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    out: list[job_fx.AnyEffect] = []
    for item in inputs:
        decision = controller.decide(state, item, now)
        state = decision.state
        out += decision.effects
    return state, out


def _kinds(effects: list[job_fx.AnyEffect]) -> list[str]:
    return [e.kind for e in effects]


def _pod(index: int, phase: str = "Running", **kw: Any) -> PodSnapshot:
    return PodSnapshot(
        name=f"j-w-{index}", uid=f"p{index}", job_uid="u1", task="w", index=index, phase=phase, **kw
    )


def test_gate_closed_creates_no_pods_until_podgroup_inqueue() -> None:
    state, out = _run(GATED, observed_job(_manifest()))
    assert state.phase == JobPhase.PENDING
    assert "CreatePods" not in _kinds(out)
    assert "EnsurePodGroup" in _kinds(out)
    state, out = _run(state, job_signals.PodGroupObserved(name="j-u1", phase="Inqueue"))
    (create,) = [e for e in out if isinstance(e, job_fx.CreatePods)]
    assert create.pods == [("w", 0), ("w", 1)] and create.scheduler_override is None


def test_scheduler_override_skips_the_gate() -> None:
    _, out = _run(UNGATED, observed_job(_manifest()))
    (create,) = [e for e in out if isinstance(e, job_fx.CreatePods)]
    assert create.scheduler_override == "default-scheduler"


def test_scale_down_deletes_pods_beyond_replicas() -> None:
    state, _ = _run(
        UNGATED,
        observed_job(_manifest()),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1)]),
    )
    smaller = _manifest()
    smaller["spec"]["tasks"][0]["replicas"] = 1
    smaller["metadata"]["generation"] = 2
    state, out = _run(state, observed_job(smaller))
    (delete,) = [e for e in out if isinstance(e, job_fx.DeletePods)]
    assert delete.names == ["j-w-1"]
    assert "EnsurePodGroup" in _kinds(out)  # minMember follows the new size


def test_last_retry_keeps_finished_pods() -> None:
    manifest = _manifest(maxRetry=1, policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    state, _ = _run(
        UNGATED,
        observed_job(manifest),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1, "Succeeded")]),
    )
    state, out = _run(state, job_signals.PodsChanged(pods=[_pod(0, deleted=True)]))
    assert state.phase == JobPhase.RESTARTING
    assert not [e for e in out if isinstance(e, job_fx.DeletePods)]  # j-w-1 Succeeded is retained
    state, out = _run(state, job_signals.PodsChanged(pods=[]))
    assert state.phase == JobPhase.RESTARTING
    state, _ = _run(state, job_signals.PodGroupObserved(name="j-u1", phase="Inqueue"))
    assert state.phase == JobPhase.FAILED  # one run allowed, it was used


def test_events_on_finished_job_only_soft_kill_and_bump_version() -> None:
    state, _ = _run(
        UNGATED,
        observed_job(_manifest()),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1)]),
    )
    state, _ = _run(
        state, job_signals.PodsChanged(pods=[_pod(0, "Succeeded"), _pod(1, "Succeeded")])
    )
    assert state.phase == JobPhase.COMPLETED
    version = state.status.version or 0
    state, out = _run(state, job_signals.PodsChanged(pods=[_pod(0, "Succeeded", restart_count=1)]))
    assert state.phase == JobPhase.COMPLETED
    assert state.status.version == version + 1
    assert "DeletePods" not in _kinds(out)


def test_ttl_timer_armed_when_finished_then_deletes_job() -> None:
    state, _ = _run(
        UNGATED,
        observed_job(_manifest(ttlSecondsAfterFinished=60)),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1)]),
    )
    state, out = _run(
        state, job_signals.PodsChanged(pods=[_pod(0, "Succeeded"), _pod(1, "Succeeded")])
    )
    (timer,) = [e for e in out if isinstance(e, fx.StartTimer)]
    assert (timer.key, timer.fires_at) == ("ttl", NOW + timedelta(seconds=60))
    state, out = _run(
        state, controller.TimerFired(key="ttl", timer=0), now=NOW + timedelta(seconds=60)
    )
    assert fx.DeleteJob(namespace="ns", name="j", uid="u1") in out


def test_job_deleted_cancels_timers_and_finishes() -> None:
    manifest = _manifest(
        policies=[{"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"}]
    )
    state, _ = _run(
        UNGATED,
        observed_job(manifest),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1)]),
    )
    state, _ = _run(state, job_signals.PodsChanged(pods=[_pod(0, deleted=True)]))
    assert list(state.delayed) == ["j-w-0"]
    state, out = _run(state, common_signals.JobDeleted(uid="u1"))
    assert out == [fx.CancelTimer(key="j-w-0"), fx.Finish()]


def test_same_name_new_uid_starts_over() -> None:
    state, _ = _run(UNGATED, observed_job(_manifest()))
    newer = _manifest()
    newer["metadata"]["uid"] = "u2"
    _, out = _run(state, observed_job(newer))
    assert out == [fx.StartOver(observed=job_signals.JobObserved(job=newer))]


def test_failed_activity_terminates_job() -> None:
    state, _ = _run(UNGATED, observed_job(_manifest()))
    state, out = _run(state, controller.ActionFailed(effect="CreatePods", error="422 Invalid"))
    assert state.phase == JobPhase.TERMINATING
    warning = out[0]
    assert isinstance(warning, fx.RecordEvent) and warning.type == "Warning"


def test_a_job_whose_pods_the_apiserver_refuses_ends_terminated() -> None:
    """Regression (manifest fuzzing): a job whose pod template the apiserver refuses waited in
    Terminating for good, for the deletion of pods that were never created."""
    state, _ = _run(UNGATED, observed_job(_manifest()))
    refused = controller.ActionFailed(effect="CreatePods", error="422 Invalid")
    state, out = _run(state, refused)
    assert state.phase == JobPhase.TERMINATING
    (check,) = [e for e in out if isinstance(e, fx.CheckPods)]
    assert check.names == sorted(state.pods)
    state, _ = _run(state, controller.PodsAbsent(names=check.names))
    assert state.phase == JobPhase.TERMINATED and state.pods == {}


def test_unknown_command_action_is_reported_not_executed() -> None:
    state, _ = _run(UNGATED, observed_job(_manifest()))
    after, out = _run(state, common_signals.CommandIssued(action="Explode", command="c1"))
    assert after == state
    assert [e.reason for e in out if isinstance(e, fx.RecordEvent)] == ["InvalidCommand"]


def test_placed_gang_is_bound_and_stale_placements_go_back() -> None:
    state, _ = _run(
        UNGATED,
        observed_job(_manifest()),
        job_signals.PodsChanged(pods=[_pod(0, "Pending")]),
    )
    placed = scheduler_signals.PodsPlaced(
        session=7,
        placements=[
            scheduler_signals.PlacedPod(pod="j-w-0", node="n1"),
            scheduler_signals.PlacedPod(pod="j-w-9", node="n1"),
        ],
    )
    _, out = _run(state, placed)
    assert out == [
        fx.BindPlacements(
            session=7, placements=[scheduler_signals.PlacedPod(pod="j-w-0", node="n1")]
        ),
        fx.TellScheduler(
            scheduler="scheduler/volcano", failed={"ns/j-w-9": "pod no longer waits for a node"}
        ),
    ]


def test_failed_bind_marks_pod_and_tells_scheduler() -> None:
    state, _ = _run(UNGATED, observed_job(_manifest()))
    _, out = _run(
        state, controller.BindOutcome(failed={"j-w-1": "failed to bind to node n9: node not found"})
    )
    assert out == [
        fx.MarkUnschedulable(pods={"j-w-1": "failed to bind to node n9: node not found"}),
        fx.RecordEvent(
            type="Warning",
            reason="FailedScheduling",
            message="j-w-1: failed to bind to node n9: node not found",
        ),
        fx.TellScheduler(
            scheduler="scheduler/volcano",
            failed={"ns/j-w-1": "failed to bind to node n9: node not found"},
        ),
    ]


def _restarting() -> JobRecord:
    """Restarting after PodEvicted: both pods killed, their deletions not heard yet."""
    manifest = _manifest(maxRetry=3, policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    state, _ = _run(
        UNGATED,
        observed_job(manifest),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1)]),
        job_signals.PodsChanged(pods=[_pod(0, deleted=True)]),
    )
    assert state.phase == JobPhase.RESTARTING
    assert state.status.terminating == 1
    return state


def test_pods_gone_while_no_forwarder_watched_let_a_restarting_job_go_on() -> None:
    """Regression (chaos soak): pods deleted between two forwarder leaders were in no list and
    no watch, and the job waited in Restarting for their deletion for ever."""
    state = _restarting()
    state, out = _run(state, job_signals.PodsListed())
    assert state.phase == JobPhase.PENDING
    assert state.pods == {} or all(p.uid is None for p in state.pods.values())
    assert "CreatePods" in _kinds(out)  # the new version's pods


def test_a_pod_not_heard_of_and_not_listed_is_read_before_it_counts_as_gone() -> None:
    """A pod the job created may be newer than the list: the apiserver is asked first."""
    state, _ = _run(UNGATED, observed_job(_manifest()), job_signals.PodsChanged(pods=[_pod(0)]))
    assert state.pods["j-w-1"].uid is None  # created by the job, not reported yet
    state, out = _run(state, job_signals.PodsListed(uids=["p0"], names=["j-w-0"]))
    assert set(state.pods) == {"j-w-0", "j-w-1"}
    assert out == [fx.CheckPods(names=["j-w-1"])]
    state, out = _run(state, controller.PodsAbsent(names=["j-w-1"]))
    (create,) = [e for e in out if isinstance(e, job_fx.CreatePods)]
    assert create.pods == [("w", 1)]  # gone unseen: created again


def test_an_absent_pod_heard_of_meanwhile_is_left_to_its_news() -> None:
    state, _ = _run(UNGATED, observed_job(_manifest()))
    state, _ = _run(state, job_signals.PodsChanged(pods=[_pod(0), _pod(1)]))
    state, out = _run(state, controller.PodsAbsent(names=["j-w-1"]))
    assert out == [] and state.pods["j-w-1"].uid == "p1"


def test_a_running_pod_missing_from_the_list_was_evicted() -> None:
    manifest = _manifest(policies=[{"event": "PodEvicted", "action": "AbortJob"}])
    state, _ = _run(
        UNGATED,
        observed_job(manifest),
        job_signals.PodsChanged(pods=[_pod(0), _pod(1)]),
    )
    state, _ = _run(state, job_signals.PodsListed(uids=["p0"], names=["j-w-0"]))
    assert state.phase == JobPhase.ABORTING


def test_a_job_hearing_at_once_that_its_pods_ran_and_finished_completes() -> None:
    """Regression (chaos soak): after a restart the job learned in one batch that its pod had
    run and succeeded; it went Pending → Running and stayed Running, the sync Volcano makes
    on the echo of Running never happening (that echo is not sent)."""
    single = make_job("j", namespace="ns").task("w", replicas=1).manifest()
    single["metadata"].update(uid="u1", generation=1, creationTimestamp="2026-01-01T00:00:00Z")
    state, _ = _run(UNGATED, observed_job(single))
    assert state.phase == JobPhase.PENDING
    state, _ = _run(state, job_signals.PodsChanged(pods=[_pod(0, "Succeeded")]))
    assert state.phase == JobPhase.COMPLETED


def test_the_usual_way_to_running_makes_no_second_write() -> None:
    state, _ = _run(UNGATED, observed_job(_manifest()))
    state, out = _run(state, job_signals.PodsChanged(pods=[_pod(0), _pod(1)]))
    assert state.phase == JobPhase.RUNNING
    assert _kinds(out).count("WriteStatus") == 1


JOB_IO = UNGATED.model_copy(update={"job_io": True})
CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def _claimed(created: job_fx.CreatePods) -> list[str | None]:
    return [v.volume_claim_name for v in created.job.spec.volumes or []]


def test_claims_named_by_the_volumes_step_reach_pods_and_status() -> None:
    manifest = _manifest(volumes=[{"mountPath": "/data", "volumeClaim": CLAIM}])
    state, out = _run(JOB_IO, observed_job(manifest))
    assert _kinds(out) == ["PhaseChanged", "WriteStatus", "EnsureVolumes"]
    state, out = _run(state, results.VolumesEnsured(claims=["j-pvc-0123456789ab"]))
    (create,) = [e for e in out if isinstance(e, job_fx.CreatePods)]
    assert _claimed(create) == ["j-pvc-0123456789ab"]
    (write,) = [e for e in out if isinstance(e, job_fx.WriteStatus)]
    assert write.status.controlled_resources == {
        "volume-pvc-j-pvc-0123456789ab": "j-pvc-0123456789ab"
    }
    # A Job observed before the write-back reached the watch keeps the chosen name.
    state, _ = _run(state, observed_job(manifest))
    assert state.job is not None and state.job.spec.volumes is not None
    assert state.job.spec.volumes[0].volume_claim_name == "j-pvc-0123456789ab"


def test_plugin_markers_wait_for_the_next_status_write() -> None:
    """Volcano persists its OnJobAdd markers only together with another status change."""
    state, _ = _run(JOB_IO, observed_job(_manifest(plugins={"svc": []})))
    state, out = _run(state, results.PluginsApplied(controlled={"plugin-svc": "svc"}))
    assert out == [] and state.controlled == {"plugin-svc": "svc"}
    state, out = _run(state, job_signals.PodsChanged(pods=[_pod(0), _pod(1)]))
    (write,) = [e for e in out if isinstance(e, job_fx.WriteStatus)]
    assert write.status.controlled_resources == {"plugin-svc": "svc"}


def test_volumes_step_that_gives_up_terminates_the_pending_job() -> None:
    manifest = _manifest(volumes=[{"mountPath": "/data", "volumeClaimName": "data"}])
    state, _ = _run(JOB_IO, observed_job(manifest))
    error = "pvc data is not found, the job will be in the Pending state until the PVC is created"
    state, out = _run(state, ActionFailed(effect="EnsureVolumes", error=error))
    assert state.phase == JobPhase.TERMINATING
    assert "EnsureVolumes" not in _kinds(out) and "EnsurePodGroup" not in _kinds(out)
    state, out = _run(state, observed_job(manifest))
    assert state.phase == JobPhase.TERMINATED and "EnsureVolumes" not in _kinds(out)


LEGACY = JobRecord(legacy_pod_groups=True)


def test_a_pod_group_from_before_volcano_1_5_gates_the_job_and_names_its_pods() -> None:
    state, _ = _run(LEGACY, observed_job(_manifest()))
    state, out = _run(state, job_signals.PodGroupObserved(name="j", phase="Inqueue"))
    (create,) = [e for e in out if isinstance(e, job_fx.CreatePods)]
    assert create.pod_group == "j"  # the gang in use, so the scheduler finds it
    state, _ = _run(state, job_signals.PodsChanged(pods=[_pod(0), _pod(1)]))
    state, out = _run(
        state, job_signals.PodsChanged(pods=[_pod(0, "Succeeded"), _pod(1, "Succeeded")])
    )
    assert state.phase == JobPhase.COMPLETED
    # The next event to the finished job is its soft kill: the old gang goes, no other is made.
    state, out = _run(state, job_signals.PodsChanged(pods=[_pod(0, "Succeeded", restart_count=1)]))
    assert job_fx.DeletePodGroup(name="j") in out
    assert "EnsurePodGroup" not in _kinds(out)


def test_the_jobs_own_pod_group_wins_over_one_from_before_volcano_1_5() -> None:
    state, _ = _run(LEGACY, observed_job(_manifest()))
    state, out = _run(
        state,
        job_signals.PodGroupObserved(name="j-u1", phase="Inqueue"),
        job_signals.PodGroupObserved(name="j", phase="Pending"),
    )
    (create,) = [e for e in out if isinstance(e, job_fx.CreatePods)]
    assert create.pod_group is None


def test_a_deleted_pod_group_from_before_volcano_1_5_is_replaced_by_the_jobs_own() -> None:
    state, _ = _run(
        LEGACY,
        observed_job(_manifest()),
        job_signals.PodGroupObserved(name="j", phase="Pending"),
    )
    state, out = _run(state, job_signals.PodGroupObserved(name="j", deleted=True))
    assert "EnsurePodGroup" in _kinds(out)
    assert "CreatePods" not in _kinds(out)  # gated until the new one is Inqueue


def test_a_run_from_before_the_patch_ignores_a_pod_group_named_as_its_job() -> None:
    state, _ = _run(GATED, observed_job(_manifest()))
    state, out = _run(state, job_signals.PodGroupObserved(name="j", phase="Inqueue"))
    assert out == [] and not state.legacy_pod_group_exists


def test_only_a_job_that_ran_before_this_run_looks_its_pod_group_up_before_creating_one() -> None:
    _, out = _run(GATED, observed_job(_manifest()))
    assert [e.look_up for e in out if isinstance(e, job_fx.EnsurePodGroup)] == [False]
    adopted = _manifest()
    adopted["status"] = {"state": {"phase": "Pending"}}
    _, out = _run(GATED, observed_job(adopted))
    assert [e.look_up for e in out if isinstance(e, job_fx.EnsurePodGroup)] == [True]
