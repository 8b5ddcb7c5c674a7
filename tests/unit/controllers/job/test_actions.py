"""actions.sync_job and actions.kill on small literal pod tables, by value.

Expectations come from Volcano's syncJob / killPods (`job_controller_actions.go`, ed72c7c) as
restated in the Volcano Job spec: §4.1 syncJob, §4.6 killJob / killTarget, §4.7 status-write
rules, §4.8 dependsOn, §4.10 version and retry. Cells of the state table are taken from
`transitions.rule_for`, which test_transitions.py checks cell by cell. Where the product does
not do what Volcano does, the case asserts the product and says "differs from Volcano".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from controllers import effects as fx
from controllers.job import actions, clock, naming, transitions
from controllers.job import effects as job_fx
from controllers.job.actions import Target
from controllers.job.policies import Request
from controllers.job.state import JobRecord, PodRecord
from models.bus import Action, Event
from models.defaults import default_job
from models.signals import job as job_signals
from models.vcjob import Job, JobCondition, JobPhase, JobState, JobStatus
from tests.builders import make_job

CREATED = datetime(2026, 1, 1, tzinfo=UTC)  # the Job's creationTimestamp
T0 = datetime(2026, 1, 1, 0, 30, tzinfo=UTC)  # when the stored phase was entered
NOW = datetime(2026, 1, 1, 1, 2, 3, tzinfo=UTC)  # 1h2m3s after creation
MISSING = "missing"  # pod-group argument: no PodGroup exists
WHY = "RestartJob: PodEvicted on pod j-w-1 (task w)"
EVICTED = Request(event=Event.POD_EVICTED, task="w", pod="j-w-1", pod_uid="uid-j-w-1")

E = TypeVar("E")


def _job(*tasks: tuple[str, int] | tuple[str, int, dict[str, Any]], **spec: Any) -> Job:
    """Job ns/j (uid u1, generation 1 unless `generation=` is given) after webhook defaults."""
    generation = spec.pop("generation", 1)
    builder = make_job("j", namespace="ns")
    for name, replicas, *fields in tasks:
        builder.task(name, replicas, **(fields[0] if fields else {}))
    doc = builder.spec(**spec).manifest()
    doc["metadata"].update(uid="u1", generation=generation, creationTimestamp=CREATED.isoformat())
    return default_job(Job.model_validate(doc))


def _pod(name: str, phase: str = "Running", **fields: Any) -> PodRecord:
    """A pod the forwarder reported: `j-<task>-<index>`."""
    _, task, index = name.split("-")
    return PodRecord(
        name=name, task=task, index=int(index), uid=f"uid-{name}", phase=phase, **fields
    )


def _state(
    job: Job,
    phase: str | None,
    *pods: PodRecord,
    pg: str | None = "Inqueue",
    pg_generation: int | None = None,
    plugins: int | None = None,
    settings: job_signals.ControllerSettings | None = None,
    **status: Any,
) -> JobRecord:
    """The workflow's record of `job` in `phase` (None: never initiated).

    pg: the PodGroup's phase (None: created, no phase yet; MISSING: no PodGroup);
    pg_generation: the generation the PodGroup was ensured for (None: the job's);
    plugins: the generation plugins were applied for (None: not applied).
    """
    entered = JobPhase(phase) if phase else None
    stored = JobStatus(
        state=JobState(phase=entered, last_transition_time=T0) if entered else None,
        conditions=[JobCondition(status=entered, last_transition_time=T0)] if entered else None,
        min_available=job.spec.min_available if entered else None,
        **status,
    )
    exists = pg != MISSING
    return JobRecord(
        settings=settings or job_signals.ControllerSettings(),
        job=job,
        status=stored,
        pods={p.name: p for p in pods},
        pod_group_exists=exists,
        pod_group_phase=pg if exists else None,
        pod_group_generation=(pg_generation or job.metadata.generation) if exists else None,
        plugins_generation=plugins,
    )


def _sync(state: JobRecord) -> actions.Plan:
    return actions.sync_job(
        state, transitions.rule_for(state.phase, Action.SYNC_JOB), NOW, "SyncJob: x"
    )


def _kill(
    state: JobRecord,
    action: str,
    target: Target | None = None,
    request: Request = EVICTED,
    why: str = WHY,
) -> actions.Plan:
    return actions.kill(
        state, transitions.rule_for(state.phase, Action(action)), request, NOW, why, target
    )


def _kinds(plan: actions.Plan) -> list[str]:
    return [e.kind for e in plan.effects]


def _all(plan: actions.Plan, kind: type[E]) -> list[E]:
    return [e for e in plan.effects if isinstance(e, kind)]


def _only(plan: actions.Plan, kind: type[E]) -> E:
    (effect,) = _all(plan, kind)
    return effect


def _created(plan: actions.Plan) -> list[tuple[str, int]]:
    return [pod for e in _all(plan, job_fx.CreatePods) for pod in e.pods]


def _deleted(plan: actions.Plan) -> list[str]:
    return [name for e in _all(plan, job_fx.DeletePods) for name in e.names]


def _written(plan: actions.Plan) -> JobStatus:
    return _only(plan, job_fx.WriteStatus).status


def _counters(status: JobStatus) -> dict[str, int | None]:
    return {
        "pending": status.pending,
        "running": status.running,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "unknown": status.unknown,
        "terminating": status.terminating,
    }


def _phase(status: JobStatus) -> str | None:
    return status.state.phase if status.state else None


# ---- names, durations, finished -------------------------------------------------------------


def test_pod_and_podgroup_names_follow_volcano() -> None:
    job = _job(("w", 3))
    assert naming.pod_name(job, "w", 2) == "j-w-2"  # <job>-<task>-<index>
    assert naming.pod_group_name(job) == "j-u1"  # <job>-<uid>


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        pytest.param(timedelta(0), "0s", id="zero"),
        pytest.param(timedelta(seconds=1.5), "1.5s", id="fraction"),
        pytest.param(timedelta(seconds=59), "59s", id="seconds"),
        pytest.param(timedelta(minutes=1), "1m0s", id="minute"),
        pytest.param(timedelta(seconds=62), "1m2s", id="minute-seconds"),
        pytest.param(timedelta(hours=1), "1h0m0s", id="hour"),
        pytest.param(timedelta(hours=1, minutes=2, seconds=3), "1h2m3s", id="hour-minute-second"),
        pytest.param(timedelta(hours=25), "25h0m0s", id="over-a-day"),
        # differs from Volcano: Go's Duration.String prints "500ms" below one second.
        pytest.param(timedelta(milliseconds=500), "0.5s", id="sub-second"),
        # differs from Volcano: Go keeps every digit ("1m2.345678s"); `:g` keeps 6 significant.
        pytest.param(timedelta(seconds=62.345678), "1m2.34568s", id="microseconds"),
    ],
)
def test_go_duration_prints_metav1_duration(delta: timedelta, text: str) -> None:
    assert clock.go_duration(delta) == text


@pytest.mark.parametrize(
    ("phase", "done"),
    [
        pytest.param(None, False, id="never-initiated"),
        pytest.param(JobPhase.PENDING, False, id="Pending"),
        pytest.param(JobPhase.RUNNING, False, id="Running"),
        pytest.param(JobPhase.RESTARTING, False, id="Restarting"),
        pytest.param(JobPhase.ABORTING, False, id="Aborting"),
        pytest.param(JobPhase.ABORTED, False, id="Aborted"),
        pytest.param(JobPhase.COMPLETING, False, id="Completing"),
        pytest.param(JobPhase.TERMINATING, False, id="Terminating"),
        pytest.param(JobPhase.COMPLETED, True, id="Completed"),
        pytest.param(JobPhase.FAILED, True, id="Failed"),
        pytest.param(JobPhase.TERMINATED, True, id="Terminated"),
    ],
)
def test_finished_only_for_terminal_phases(phase: JobPhase | None, done: bool) -> None:
    assert transitions.finished(phase) is done


# ---- sync_job: initiation and the PodGroup gate ---------------------------------------------


def test_sync_first_observation_enters_pending_and_creates_podgroup_but_no_pods() -> None:
    job = _job(("w", 3))
    plan = _sync(JobRecord(job=job))
    assert _kinds(plan) == ["PhaseChanged", "EnsurePodGroup", "WriteStatus"]
    assert _only(plan, fx.PhaseChanged) == fx.PhaseChanged(
        phase="Pending", previous=None, reason="Created"
    )
    status = _written(plan)
    assert status.state is not None
    assert (status.state.phase, status.state.last_transition_time) == ("Pending", NOW)
    assert status.min_available == 3
    assert status.conditions == [JobCondition(status=JobPhase.PENDING, last_transition_time=NOW)]
    assert _only(plan, job_fx.EnsurePodGroup).job.metadata.uid == "u1"
    assert plan.state.pod_group_exists and plan.state.pod_group_generation == 1
    assert plan.state.pods == {}


@pytest.mark.parametrize(
    ("pg", "created"),
    [
        pytest.param(MISSING, [], id="podgroup-missing"),
        pytest.param(None, [], id="podgroup-without-phase"),
        pytest.param("", [], id="podgroup-empty-phase"),
        pytest.param("Pending", [], id="podgroup-Pending"),
        pytest.param("Inqueue", [("w", 0), ("w", 1), ("w", 2)], id="podgroup-Inqueue"),
        pytest.param("Running", [("w", 0), ("w", 1), ("w", 2)], id="podgroup-Running"),
        pytest.param("Unknown", [("w", 0), ("w", 1), ("w", 2)], id="podgroup-Unknown"),
        pytest.param("Completed", [("w", 0), ("w", 1), ("w", 2)], id="podgroup-Completed"),
    ],
)
def test_sync_podgroup_gate_holds_pod_creation(
    pg: str | None, created: list[tuple[str, int]]
) -> None:
    """§4.1 step 5: no pods while the PodGroup is missing, without phase, or Pending."""
    plan = _sync(_state(_job(("w", 3)), "Pending", pg=pg))
    assert _created(plan) == created
    assert sorted(plan.state.pods) == [f"j-w-{i}" for _, i in created]
    assert ("EnsurePodGroup" in _kinds(plan)) is (pg == MISSING)


def test_sync_scheduler_override_skips_the_gate() -> None:
    """Caldera's setting: pods go to another scheduler, so nothing waits for the PodGroup."""
    settings = job_signals.ControllerSettings(scheduler_override="default-scheduler")
    plan = _sync(_state(_job(("w", 2)), "Pending", pg=MISSING, settings=settings))
    create = _only(plan, job_fx.CreatePods)
    assert (create.pods, create.scheduler_override) == ([("w", 0), ("w", 1)], "default-scheduler")
    assert "EnsurePodGroup" in _kinds(plan)


def test_sync_gate_closed_and_nothing_changed_writes_nothing() -> None:
    """Volcano compares the status before writing: an unchanged status is not written."""
    state = _state(_job(("w", 3)), "Pending", pg="Pending")
    assert _sync(state).effects == ()


@pytest.mark.parametrize(
    ("stored", "phase", "reason"),
    [
        pytest.param(
            {"terminating": 3, "retry_count": 1},
            "Restarting",
            None,
            id="old-pods-still-terminating",
        ),
        pytest.param(
            {"terminating": 0, "retry_count": 1},
            "Pending",
            "Restarted: retry 1 of 3",
            id="old-pods-gone",
        ),
        pytest.param(
            {"terminating": 3, "retry_count": 3},
            "Failed",
            "MaxRetryExceeded: ran 3 times, maxRetry 3",
            id="maxRetry-reached",
        ),
    ],
)
def test_sync_gate_closed_restarting_decides_on_stored_counters(
    stored: dict[str, Any], phase: str, reason: str | None
) -> None:
    """§3.8 trace 2: the PodGroup is recreated without phase; f_restarting runs on the counters
    the kill stored (N - terminating ≥ minAvailable → Pending; retryCount ≥ maxRetry → Failed)."""
    state = _state(_job(("w", 3)), "Restarting", pg=None, **stored)
    plan = _sync(state)
    assert _created(plan) == []
    assert plan.state.phase == phase
    changes = _all(plan, fx.PhaseChanged)
    if reason is None:
        assert plan.effects == ()
    else:
        assert changes == [fx.PhaseChanged(phase=phase, previous="Restarting", reason=reason)]
        assert _phase(_written(plan)) == phase


# ---- sync_job: creating, deleting, counting -------------------------------------------------


def test_sync_creates_missing_indices_stamped_with_version_and_retry() -> None:
    state = _state(_job(("w", 3)), "Pending", _pod("j-w-0"), version=2, retry_count=1)
    plan = _sync(state)
    create = _only(plan, job_fx.CreatePods)
    assert (create.pods, create.version, create.retry_count) == ([("w", 1), ("w", 2)], 2, 1)
    assert create.scheduler_override is None
    assert plan.state.pods["j-w-1"] == PodRecord(name="j-w-1", task="w", index=1, job_version=2)
    assert plan.state.pods["j-w-0"] == state.pods["j-w-0"]
    assert _counters(_written(plan)) == {
        "pending": 2,
        "running": 1,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
        "terminating": 0,
    }


def test_sync_creates_tasks_in_spec_order() -> None:
    plan = _sync(_state(_job(("master", 1), ("worker", 2)), "Pending"))
    assert _created(plan) == [("master", 0), ("worker", 0), ("worker", 1)]


def test_sync_counts_pods_by_phase_and_terminating_pod_blocks_recreation() -> None:
    """§4.1 step 6 and §4.10: a pod being deleted counts as terminating and keeps its name."""
    state = _state(
        _job(("w", 4)),
        "Running",
        _pod("j-w-0", "Running"),
        _pod("j-w-1", "Succeeded"),
        _pod("j-w-2", "Running", deleting=True),
        _pod("j-w-3", "Unknown"),
        running_duration="30m0s",
    )
    plan = _sync(state)
    assert _created(plan) == [] and _deleted(plan) == []
    status = _written(plan)
    assert _counters(status) == {
        "pending": 0,
        "running": 1,
        "succeeded": 1,
        "failed": 0,
        "unknown": 1,
        "terminating": 1,
    }
    assert status.task_status_count is not None
    assert {t: s.phase for t, s in status.task_status_count.items()} == {
        "w": {"Running": 1, "Succeeded": 1, "Unknown": 1}
    }
    assert status.running_duration is None  # §1.3: dropped by a recounting sync
    assert _phase(status) == "Running"


@pytest.mark.parametrize(
    ("pods", "deleted", "terminating"),
    [
        pytest.param(
            [_pod("j-w-0"), _pod("j-w-1"), _pod("j-w-2", "Succeeded")],
            ["j-w-1", "j-w-2"],
            2,
            id="indices-beyond-replicas",
        ),
        pytest.param(
            [_pod("j-w-0"), PodRecord(name="j-w-extra", task="w", uid="x", phase="Running")],
            ["j-w-extra"],
            1,
            id="pod-without-index",
        ),
        # differs from Volcano: Volcano deletes a leftover pod again even when it is already
        # terminating and counts it (terminating 1); the product skips it and counts 0.
        pytest.param(
            [_pod("j-w-0"), _pod("j-w-1", deleting=True)], [], 0, id="leftover-already-deleting"
        ),
    ],
)
def test_sync_scale_down_deletes_leftover_pods(
    pods: list[PodRecord], deleted: list[str], terminating: int
) -> None:
    """§4.1 step 6 / §7.7: pods of the task outside 0..replicas-1 are deleted, not counted."""
    job = _job(("w", 1), generation=2)
    state = _state(job, "Running", *pods, pg="Running", pg_generation=1)
    plan = _sync(state)
    assert _deleted(plan) == deleted
    assert all(plan.state.pods[n].deleting for n in deleted)
    assert "EnsurePodGroup" in _kinds(plan)  # minMember follows the new size
    status = _written(plan)
    assert (status.running, status.terminating) == (1, terminating)
    assert _created(plan) == []


def test_sync_deletes_out_of_sync_pod_without_recreating_it() -> None:
    state = _state(_job(("w", 3)), "Running", *(_pod(f"j-w-{i}") for i in range(3)))
    pods = {**state.pods, "j-w-1": _pod("j-w-1", out_of_sync=True)}
    plan = _sync(state.model_copy(update={"pods": pods}))
    delete = _only(plan, job_fx.DeletePods)
    assert delete.names == ["j-w-1"]
    assert plan.state.pods["j-w-1"].deleting
    assert _created(plan) == []
    status = _written(plan)
    # differs from Volcano: syncJob also counts the out-of-sync pod by its phase before
    # deleting it (running 3, terminating 1); the product counts it as terminating only.
    assert (status.running, status.terminating) == (2, 1)


@pytest.mark.parametrize(
    ("dependency_pods", "created"),
    [
        pytest.param([], [("master", 0)], id="master-not-created-yet"),
        pytest.param([_pod("j-master-0", "Pending")], [], id="master-pending"),
        pytest.param([_pod("j-master-0", "Running")], [], id="master-running-not-ready"),
        pytest.param(
            [_pod("j-master-0", "Running", ready=True)],
            [("worker", 0), ("worker", 1)],
            id="master-running-ready",
        ),
        pytest.param(
            [_pod("j-master-0", "Succeeded")],
            [("worker", 0), ("worker", 1)],
            id="master-succeeded",
        ),
    ],
)
def test_sync_depends_on_holds_dependent_task(
    dependency_pods: list[PodRecord], created: list[tuple[str, int]]
) -> None:
    """§4.8: a dependent task's pods wait until minAvailable dependency pods are Running and
    Ready, or Succeeded."""
    job = _job(("master", 1), ("worker", 2, {"dependsOn": {"name": ["master"]}}))
    plan = _sync(_state(job, "Pending", *dependency_pods))
    assert _created(plan) == created


@pytest.mark.parametrize(
    ("iteration", "created"),
    [
        pytest.param("any", [("c", 0)], id="any-one-ready"),
        pytest.param("all", [], id="all-one-ready"),
        pytest.param(None, [], id="default-is-all"),
    ],
)
def test_sync_depends_on_iteration(iteration: str | None, created: list[tuple[str, int]]) -> None:
    depends: dict[str, Any] = {"name": ["a", "b"]}
    if iteration is not None:
        depends["iteration"] = iteration
    job = _job(("a", 1), ("b", 1), ("c", 1, {"dependsOn": depends}))
    pods = (_pod("j-a-0", "Running", ready=True), _pod("j-b-0", "Pending"))
    assert _created(_sync(_state(job, "Pending", *pods))) == created


# ---- sync_job: status functions on recounted pods -------------------------------------------

_PHASES = {"P": "Pending", "R": "Running", "S": "Succeeded", "F": "Failed"}


def _pods_of(phases: str) -> list[PodRecord]:
    return [_pod(f"j-w-{i}", _PHASES[p]) for i, p in enumerate(phases)]


@pytest.mark.parametrize(
    ("spec", "phases", "after"),
    [
        pytest.param({}, "RRR", "Running", id="gang-running"),
        pytest.param({}, "RSF", "Running", id="running-or-finished-count"),
        pytest.param({}, "RRP", "Pending", id="one-pod-pending"),
        pytest.param({}, "RR", "Pending", id="missing-pod-created-as-pending"),
        pytest.param({"minAvailable": 2}, "RRP", "Running", id="minAvailable-2-of-3"),
    ],
)
def test_sync_pending_runs_once_min_available_pods_are_up(
    spec: dict[str, Any], phases: str, after: str
) -> None:
    """f_pending: minAvailable ≤ running + succeeded + failed → Running."""
    plan = _sync(_state(_job(("w", 3), **spec), "Pending", *_pods_of(phases)))
    assert _phase(_written(plan)) == after
    assert plan.state.phase == after
    changes = _all(plan, fx.PhaseChanged)
    assert [c.phase for c in changes] == ([] if after == "Pending" else ["Running"])


def test_sync_pending_to_running_names_the_reason() -> None:
    plan = _sync(_state(_job(("w", 3)), "Pending", *_pods_of("RRS")))
    assert _only(plan, fx.PhaseChanged) == fx.PhaseChanged(
        phase="Running",
        previous="Pending",
        reason="MinAvailableReached: 3 pods running or finished, minAvailable 3",
    )
    status = _written(plan)
    assert status.state is not None and status.state.last_transition_time == NOW
    assert status.conditions == [
        JobCondition(status=JobPhase.PENDING, last_transition_time=T0),
        JobCondition(status=JobPhase.RUNNING, last_transition_time=NOW),
    ]


@pytest.mark.parametrize(
    ("spec", "phases", "after"),
    [
        pytest.param({}, "SSS", "Completed", id="all-succeeded"),
        pytest.param({}, "SSF", "Failed", id="task-minAvailable-not-succeeded"),
        pytest.param({"minAvailable": 1}, "SFF", "Completed", id="minAvailable-1-succeeded"),
        pytest.param({"minSuccess": 1}, "SRR", "Completed", id="minSuccess-reached-early"),
        pytest.param({"minAvailable": 1, "minSuccess": 2}, "SFF", "Failed", id="minSuccess-missed"),
        pytest.param({}, "RRS", "Running", id="still-running"),
        pytest.param({}, "RRP", "Pending", id="gang-lost"),
        pytest.param({"minAvailable": 2}, "RRP", "Running", id="gang-kept-minAvailable-2"),
    ],
)
def test_sync_running_finishes_or_loses_gang(spec: dict[str, Any], phases: str, after: str) -> None:
    """f_running (§3.6) on the pods this sync counted."""
    plan = _sync(_state(_job(("w", 3), **spec), "Running", *_pods_of(phases), pg="Running"))
    assert plan.state.phase == after
    assert _phase(_written(plan)) == after


def test_sync_running_scaled_to_zero_keeps_phase() -> None:
    plan = _sync(_state(_job(("w", 0)), "Running", pg="Running", running=2))
    assert plan.state.phase == "Running"
    assert _all(plan, fx.PhaseChanged) == []


def test_sync_counter_change_refreshes_transition_time_without_phase_change() -> None:
    """§4.7: syncJob refreshes lastTransitionTime on any status change and re-appends the
    condition of the current phase, keeping one condition per phase."""
    state = _state(_job(("w", 3)), "Running", *_pods_of("RRS"), pg="Running", running=3)
    status = _written(_sync(state))
    assert status.state is not None
    assert (status.state.phase, status.state.last_transition_time) == ("Running", NOW)
    assert status.conditions == [JobCondition(status=JobPhase.RUNNING, last_transition_time=NOW)]
    assert (status.running, status.succeeded) == (2, 1)


def test_sync_again_with_nothing_new_has_no_effects() -> None:
    first = _sync(_state(_job(("w", 3)), "Running", *_pods_of("RRR"), pg="Running"))
    assert "WriteStatus" in _kinds(first)
    assert _sync(first.state).effects == ()


# ---- sync_job: PodGroup, plugins, volumes ---------------------------------------------------


@pytest.mark.parametrize(
    ("pg", "pg_generation", "generation", "ensured"),
    [
        pytest.param(MISSING, None, 1, True, id="missing"),
        pytest.param("Inqueue", 1, 1, False, id="current"),
        pytest.param("Inqueue", 1, 2, True, id="spec-updated"),
    ],
)
def test_sync_ensures_podgroup_when_missing_or_stale(
    pg: str, pg_generation: int | None, generation: int, ensured: bool
) -> None:
    job = _job(("w", 1), generation=generation)
    plan = _sync(_state(job, "Running", _pod("j-w-0"), pg=pg, pg_generation=pg_generation))
    assert ("EnsurePodGroup" in _kinds(plan)) is ensured
    assert (plan.state.pod_group_exists, plan.state.pod_group_generation) == (True, generation)


@pytest.mark.parametrize(
    ("plugins", "applied", "generation", "ensured"),
    [
        pytest.param({"env": []}, None, 1, True, id="not-applied-yet"),
        pytest.param({"env": []}, 1, 1, False, id="applied-for-this-generation"),
        pytest.param({"env": []}, 1, 2, True, id="spec-updated"),
        pytest.param(None, None, 1, False, id="no-plugins"),
    ],
)
def test_sync_ensures_plugins_once_per_generation(
    plugins: dict[str, list[str]] | None, applied: int | None, generation: int, ensured: bool
) -> None:
    job = _job(("w", 1), generation=generation, plugins=plugins)
    plan = _sync(_state(job, "Running", _pod("j-w-0"), plugins=applied))
    assert ("EnsurePlugins" in _kinds(plan)) is ensured
    assert plan.state.plugins_generation == (generation if plugins else None)


@pytest.mark.parametrize(
    ("phase", "ensured"),
    [
        pytest.param(None, True, id="first-sync"),
        pytest.param("Pending", False, id="already-initiated"),
        pytest.param("Running", False, id="running"),
    ],
)
def test_sync_ensures_volumes_on_initiation(phase: str | None, ensured: bool) -> None:
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    job = _job(("w", 1), volumes=[{"mountPath": "/data", "volumeClaim": claim}])
    plan = _sync(_state(job, phase))
    volumes = _all(plan, job_fx.EnsureVolumes)
    assert len(volumes) == (1 if ensured else 0)
    assert all(v.job.spec.volumes == job.spec.volumes for v in volumes)


CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
MARKERS = {"plugin-svc": "svc", "volume-pvc-j-pvc-abc": "j-pvc-abc"}


@pytest.mark.parametrize(
    ("phase", "claims", "pg", "expected"),
    [
        pytest.param(
            None,
            None,
            MISSING,
            ["PhaseChanged", "EnsurePlugins", "WriteStatus", "EnsureVolumes"],
            id="first-sync-volumes-before-the-pod-group",
        ),
        pytest.param(
            "Pending",
            None,
            MISSING,
            ["EnsurePlugins", "WriteStatus", "EnsureVolumes"],
            id="pending-volumes-still-to-succeed",
        ),
        pytest.param(
            "Pending",
            ["j-pvc-abc"],
            MISSING,
            ["EnsurePlugins", "EnsurePodGroup", "WriteStatus"],
            id="pending-claims-named-pod-group-next",
        ),
        pytest.param(
            "Running",
            None,
            "Running",
            ["EnsurePlugins", "WriteStatus"],
            id="running-never-ensures-volumes",
        ),
    ],
)
def test_sync_with_job_io_names_claims_before_the_pod_group(
    phase: str | None, claims: list[str] | None, pg: str, expected: list[str]
) -> None:
    """Volcano's initiateJob: the volumes step before the PodGroup, while the job initiates;
    the status is written first, so a job waiting for its claim says Pending."""
    job = _job(
        ("w", 1), volumes=[{"mountPath": "/data", "volumeClaim": CLAIM}], plugins={"svc": []}
    )
    pods = [_pod("j-w-0")] if phase == "Running" else []
    state = _state(job, phase, *pods, pg=pg).model_copy(
        update={"job_io": True, "volume_claims": claims, "controlled": MARKERS}
    )
    plan = _sync(state)
    assert _kinds(plan) == expected
    if "WriteStatus" in expected:
        assert _written(plan).controlled_resources == MARKERS


@pytest.mark.parametrize(
    ("action", "target", "markers"),
    [
        pytest.param(
            "RestartJob", None, {"volume-pvc-j-pvc-abc": "j-pvc-abc"}, id="full-kill-drops-plugins"
        ),
        pytest.param("RestartTask", Target.TASK, MARKERS, id="targeted-kill-keeps-them"),
    ],
)
def test_kill_with_job_io_writes_the_markers_left(
    action: str, target: Target | None, markers: dict[str, str]
) -> None:
    """Volcano's pluginOnJobDelete precedes the status write and drops the plugins' markers;
    Caldera removes plugins on full kills only."""
    job = _job(
        ("w", 1), volumes=[{"mountPath": "/data", "volumeClaim": CLAIM}], plugins={"svc": []}
    )
    state = _state(job, "Running", _pod("j-w-0"), pg="Running", plugins=1).model_copy(
        update={"job_io": True, "volume_claims": ["j-pvc-abc"], "controlled": MARKERS}
    )
    plan = _kill(state, action, target)
    assert _written(plan).controlled_resources == markers
    assert plan.state.controlled == markers


def test_sync_without_job_io_keeps_the_adopted_markers() -> None:
    """A run from before the patch writes the status it adopted, markers as they were."""
    job = _job(("w", 1), volumes=[{"mountPath": "/data", "volumeClaim": CLAIM}])
    plan = _sync(_state(job, None, pg=MISSING, controlled_resources={"plugin-x": "x"}))
    assert _kinds(plan) == ["PhaseChanged", "EnsureVolumes", "EnsurePodGroup", "WriteStatus"]
    assert _written(plan).controlled_resources == {"plugin-x": "x"}


def test_sync_and_kill_skip_a_job_being_deleted() -> None:
    """§4.1 step 1, §4.6 step 1: a job with a deletionTimestamp is left to the GC."""
    job = _job(("w", 2))
    gone = job.model_copy(
        update={"metadata": job.metadata.model_copy(update={"deletion_timestamp": NOW})}
    )
    state = _state(gone, "Running", _pod("j-w-0"))
    assert _sync(state) == actions.Plan(state=state)
    assert _kill(state, "RestartJob") == actions.Plan(state=state)


def test_sync_and_kill_without_an_observed_job_do_nothing() -> None:
    state = JobRecord()
    assert _sync(state) == actions.Plan(state=state)
    assert _kill(state, "AbortJob") == actions.Plan(state=state)


# ---- kill: retain sets, version, retry ------------------------------------------------------

FOUR = (
    _pod("j-w-0", "Pending"),
    _pod("j-w-1", "Running"),
    _pod("j-w-2", "Succeeded"),
    _pod("j-w-3", "Failed"),
)
ALL_FOUR = ["j-w-0", "j-w-1", "j-w-2", "j-w-3"]
UNFINISHED = ["j-w-0", "j-w-1"]


@pytest.mark.parametrize(
    ("phase", "action", "retry", "deleted"),
    [
        pytest.param("Running", "RestartJob", 0, ALL_FOUR, id="Running-RestartJob"),
        pytest.param("Running", "RestartJob", 1, ALL_FOUR, id="Running-RestartJob-retry-1-of-3"),
        pytest.param("Running", "RestartJob", 2, UNFINISHED, id="Running-RestartJob-last-retry"),
        pytest.param("Pending", "RestartJob", 0, ALL_FOUR, id="Pending-RestartJob"),
        pytest.param("Running", "AbortJob", 0, UNFINISHED, id="Running-AbortJob"),
        pytest.param("Running", "CompleteJob", 0, UNFINISHED, id="Running-CompleteJob"),
        pytest.param("Running", "TerminateJob", 0, UNFINISHED, id="Running-TerminateJob"),
        pytest.param("Restarting", "AbortJob", 1, ALL_FOUR, id="Restarting-AbortJob"),
        pytest.param("Restarting", "AbortJob", 2, UNFINISHED, id="Restarting-AbortJob-last-retry"),
        pytest.param("Aborting", "SyncJob", 0, UNFINISHED, id="Aborting-SyncJob"),
        pytest.param("Aborted", "ResumeJob", 0, UNFINISHED, id="Aborted-ResumeJob"),
        pytest.param("Completed", "SyncJob", 0, UNFINISHED, id="Completed-SyncJob"),
        pytest.param("Failed", "RestartJob", 0, UNFINISHED, id="Failed-RestartJob"),
    ],
)
def test_kill_job_keeps_the_retain_set(
    phase: str, action: str, retry: int, deleted: list[str]
) -> None:
    """§4.6 step 2: R_None deletes every pod, R_Soft keeps Succeeded and Failed ones, and the
    last retry (retryCount ≥ maxRetry - 1, maxRetry 3) always keeps them."""
    state = _state(_job(("w", 4)), phase, *FOUR, retry_count=retry)
    plan = _kill(state, action)
    assert _deleted(plan) == deleted
    for name, pod in plan.state.pods.items():
        marked = name in deleted
        assert (pod.deleting, pod.out_of_sync) == (marked, marked)
        if not marked:
            assert pod == state.pods[name]


def test_kill_restart_job_plans_delete_status_podgroup_in_volcano_order() -> None:
    """Running + RestartJob (§3.8 trace 1): pods deleted, version 1 → 2, retry 0 → 1,
    Restarting, status written, then the PodGroup deleted (full kills only)."""
    state = _state(_job(("w", 4)), "Running", *FOUR, version=1, retry_count=0, running=1)
    plan = _kill(state, "RestartJob")
    assert _kinds(plan) == ["DeletePods", "WriteStatus", "DeletePodGroup", "PhaseChanged"]
    assert _only(plan, job_fx.DeletePods) == job_fx.DeletePods(names=ALL_FOUR, why=WHY)
    assert _only(plan, job_fx.DeletePodGroup) == job_fx.DeletePodGroup(name="j-u1")
    assert _only(plan, fx.PhaseChanged) == fx.PhaseChanged(
        phase="Restarting", previous="Running", reason=WHY
    )
    status = _written(plan)
    assert (status.version, status.retry_count) == (2, 1)
    assert status.state == JobState(
        phase=JobPhase.RESTARTING,
        reason="RestartJob",
        message="PodEvicted on pod j-w-1 (task w)",
        last_transition_time=NOW,
    )
    assert _counters(status) == {
        "pending": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "unknown": 0,
        "terminating": 4,
    }
    assert status.task_status_count == {}
    assert status.running_duration == "1h2m3s"  # lastTransitionTime - creationTimestamp
    assert plan.state.status == status
    assert (
        plan.state.pod_group_exists,
        plan.state.pod_group_phase,
        plan.state.pod_group_generation,
    ) == (False, None, None)


def test_kill_counts_the_pods_it_keeps() -> None:
    """After a soft kill the kept Succeeded/Failed pods still count (differs from Volcano's
    master, whose issue #4616 leaves a Completed job saying 0 succeeded)."""
    state = _state(_job(("w", 4)), "Running", *FOUR, running=1, succeeded=1, failed=1)
    status = _written(_kill(state, "AbortJob", why="AbortJob: command c1"))
    assert _counters(status) == {
        "pending": 0,
        "running": 0,
        "succeeded": 1,
        "failed": 1,
        "unknown": 0,
        "terminating": 2,
    }
    assert _phase(status) == "Aborting"


def test_kill_counts_terminating_pod_without_deleting_it_again() -> None:
    pods = (_pod("j-w-0", "Pending"), _pod("j-w-1", "Running", deleting=True), *FOUR[2:])
    state = _state(_job(("w", 4)), "Running", *pods)
    plan = _kill(state, "RestartJob")
    assert _deleted(plan) == ["j-w-0", "j-w-2", "j-w-3"]
    assert _written(plan).terminating == 4


@pytest.mark.parametrize(
    ("phase", "action", "target", "retry", "version", "retry_after", "after"),
    [
        pytest.param("Running", "RestartJob", None, 0, 6, 1, "Restarting", id="Running-RestartJob"),
        pytest.param("Running", "AbortJob", None, 0, 6, 0, "Aborting", id="Running-AbortJob"),
        pytest.param(
            "Running", "RestartPod", Target.POD, 0, 5, 1, "Restarting", id="Running-RestartPod"
        ),
        pytest.param(
            "Pending", "RestartTask", Target.TASK, 0, 5, 1, "Restarting", id="Pending-RestartTask"
        ),
        pytest.param(
            "Aborted", "ResumeJob", None, 1, 6, 2, "Restarting", id="Aborted-ResumeJob-retry++"
        ),
        pytest.param("Completed", "SyncJob", None, 0, 6, 0, "Completed", id="Completed-SyncJob"),
        pytest.param(
            "Restarting", "RestartTask", Target.TASK, 1, 5, 1, "Restarting", id="Restarting-Task"
        ),
        pytest.param(
            "Restarting", "RestartJob", None, 1, 6, 1, "Restarting", id="Restarting-RestartJob"
        ),
        pytest.param(
            "Restarting", "RestartJob", None, 3, 6, 3, "Failed", id="Restarting-maxRetry-reached"
        ),
    ],
)
def test_kill_bumps_version_on_full_kills_and_retry_on_restarts(
    phase: str,
    action: str,
    target: Target | None,
    retry: int,
    version: int,
    retry_after: int,
    after: str,
) -> None:
    """§4.10: version +1 on every full kill only; retryCount +1 entering Restarting by
    Restart* from Pending/Running or ResumeJob from Aborting/Aborted."""
    state = _state(_job(("w", 4)), phase, *FOUR, version=5, retry_count=retry)
    plan = _kill(state, action, target)
    status = _written(plan)
    assert (status.version, status.retry_count, _phase(status)) == (version, retry_after, after)
    assert plan.state.phase == after


@pytest.mark.parametrize(
    ("phase", "drained"),
    [
        pytest.param("Aborting", "Aborted", id="Aborting"),
        pytest.param("Completing", "Completed", id="Completing"),
        pytest.param("Terminating", "Terminated", id="Terminating"),
    ],
)
@pytest.mark.parametrize(
    ("pods", "alive"),
    [
        pytest.param((FOUR[1], FOUR[2]), True, id="running-pod-deleted-now"),
        pytest.param((_pod("j-w-1", deleting=True), FOUR[2]), True, id="pod-still-terminating"),
        pytest.param((FOUR[2], FOUR[3]), False, id="only-finished-pods-left"),
        pytest.param((), False, id="no-pods-left"),
    ],
)
def test_kill_drains_into_final_phase_once_nothing_is_alive(
    phase: str, drained: str, pods: tuple[PodRecord, ...], alive: bool
) -> None:
    """f_drain: terminating == pending == running == 0 → the final phase; else stay."""
    state = _state(_job(("w", 4)), phase, *pods)
    plan = _kill(state, "SyncJob", why="SyncJob: OutOfSync")
    after = phase if alive else drained
    assert plan.state.phase == after
    assert [(c.phase, c.previous) for c in _all(plan, fx.PhaseChanged)] == (
        [] if alive else [(drained, phase)]
    )
    assert "j-w-2" not in _deleted(plan)  # the Succeeded pod is kept


def test_kill_finished_job_only_bumps_version_and_keeps_transition_time() -> None:
    """§3.8 trace 8 and §4.7: an event for a Completed job re-runs the soft kill: version +1,
    a status write, the PodGroup deleted again; lastTransitionTime moves only on a change."""
    pods = (_pod("j-w-0", "Succeeded"), _pod("j-w-1", "Succeeded"))
    state = _state(_job(("w", 2)), "Completed", *pods, pg="Completed", version=3)
    plan = _kill(state, "SyncJob", why="SyncJob: OutOfSync")
    assert _kinds(plan) == ["WriteStatus", "DeletePodGroup"]
    status = _written(plan)
    assert status.state is not None
    assert (status.version, status.state.phase, status.state.last_transition_time) == (
        4,
        "Completed",
        T0,
    )
    assert status.conditions == state.status.conditions
    assert status.running_duration == "30m0s"  # T0 - creationTimestamp
    without_podgroup = state.model_copy(update={"pod_group_exists": False})
    assert _kinds(_kill(without_podgroup, "SyncJob")) == ["WriteStatus"]


# ---- kill: targets --------------------------------------------------------------------------


def _partitioned(retry: int = 0) -> JobRecord:
    """Task w: 4 pods in partitions "0" (w-0, w-1) and "1" (w-2, w-3); task ps: 2 pods in
    partitions "0" and "1" of its own; task x: 1 pod, no partitions."""

    def partitions(size: int) -> dict[str, Any]:
        return {"partitionPolicy": {"totalPartitions": 2, "partitionSize": size}}

    job = _job(("ps", 2, partitions(1)), ("w", 4, partitions(2)), ("x", 1), plugins={"env": []})
    pods = [
        _pod("j-ps-0", partition="0"),
        _pod("j-ps-1", partition="1"),
        *(
            _pod(f"j-w-{i}", phase, partition=str(i // 2))
            for i, phase in enumerate(("Running", "Succeeded", "Running", "Failed"))
        ),
        _pod("j-x-0"),
    ]
    return _state(job, "Running", *pods, pg="Running", plugins=1, version=2, retry_count=retry)


@pytest.mark.parametrize(
    ("action", "target", "request_", "deleted"),
    [
        pytest.param(
            "RestartTask",
            Target.TASK,
            Request(task="w", pod="j-w-0"),
            ["j-w-0", "j-w-1", "j-w-2", "j-w-3"],
            id="task-every-pod-whatever-its-phase",
        ),
        pytest.param(
            "RestartPod",
            Target.POD,
            Request(task="w", pod="j-w-1"),
            ["j-w-1"],
            id="pod-even-if-succeeded",
        ),
        pytest.param(
            "RestartPartition",
            Target.PARTITION,
            Request(task="w", pod="j-w-3", partition="1"),
            ["j-w-2", "j-w-3"],
            id="partition-of-the-pod-in-its-task",
        ),
    ],
)
@pytest.mark.parametrize(
    "retry", [pytest.param(0, id="first-run"), pytest.param(2, id="last-retry")]
)
def test_kill_target_deletes_only_the_target_and_keeps_podgroup(
    action: str, target: Target, request_: Request, deleted: list[str], retry: int
) -> None:
    """§4.6: a targeted kill has no retain set (not even at the last retry), no version bump,
    and keeps the PodGroup (since v1.16), while the job enters Restarting with retry + 1."""
    state = _partitioned(retry)
    plan = _kill(state, action, target, request_, why=f"{action}: PodFailed")
    assert _only(plan, job_fx.DeletePods).names == deleted
    assert "DeletePodGroup" not in _kinds(plan)
    assert plan.state.pod_group_exists
    status = _written(plan)
    assert (status.version, status.retry_count, _phase(status)) == (2, retry + 1, "Restarting")
    assert status.terminating == len(deleted)
    # differs from Volcano: killPods runs every plugin's OnJobDelete on targeted kills too
    # (§4.6 step 7, e.g. the svc Service is removed on RestartPod); the product does not.
    assert "RemovePlugins" not in _kinds(plan)
    assert plan.state.plugins_generation == 1


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(Request(task="x", pod="j-x-0"), id="pod-without-partition"),
        pytest.param(Request(task="w", pod="j-w-0", partition="7"), id="unknown-partition"),
    ],
)
def test_kill_partition_that_does_not_exist(request_: Request) -> None:
    state = _partitioned()
    plan = _kill(state, "RestartPartition", Target.PARTITION, request_, why="RestartPartition: x")
    assert _deleted(plan) == []
    # differs from Volcano: killPods returns before any status write when the task has no
    # such partition, so the job stays Running with retryCount 0; the product still enters
    # Restarting, counts a retry and zeroes the counters.
    assert _kinds(plan) == ["WriteStatus", "PhaseChanged"]
    status = _written(plan)
    assert (_phase(status), status.retry_count) == ("Restarting", 1)


@pytest.mark.parametrize(
    ("min_available", "after"),
    [
        pytest.param(None, "Restarting", id="not-enough-pods-left-for-gang"),
        pytest.param(2, "Pending", id="enough-pods-left-for-gang"),
    ],
)
def test_kill_target_while_restarting_uses_restarting_status(
    min_available: int | None, after: str
) -> None:
    """restarting.go: Restart{Task,Pod,Partition} kill the target under f_restarting, without
    counting a retry: N - terminating ≥ minAvailable → Pending."""
    spec = {} if min_available is None else {"minAvailable": min_available}
    state = _state(_job(("w", 4), **spec), "Restarting", *FOUR, retry_count=1)
    plan = _kill(state, "RestartPod", Target.POD, Request(task="w", pod="j-w-1"))
    assert _deleted(plan) == ["j-w-1"]
    status = _written(plan)
    assert (_phase(status), status.retry_count, status.terminating) == (after, 1, 1)


# ---- kill: plugins --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("applied", "removed"),
    [
        pytest.param(1, True, id="plugins-applied"),
        pytest.param(None, False, id="plugins-not-applied"),
    ],
)
def test_full_kill_removes_plugins_before_writing_status(
    applied: int | None, removed: bool
) -> None:
    """§4.6 step 7: OnJobDelete precedes the status write; it is a no-op without the marker."""
    job = _job(("w", 4), plugins={"svc": []})
    state = _state(job, "Running", *FOUR, plugins=applied)
    plan = _kill(state, "RestartJob")
    expected = ["DeletePods", "RemovePlugins", "WriteStatus", "DeletePodGroup", "PhaseChanged"]
    assert _kinds(plan) == (expected if removed else [k for k in expected if k != "RemovePlugins"])
    assert plan.state.plugins_generation is None
    next_sync = _sync(plan.state.model_copy(update={"pod_group_phase": "Inqueue"}))
    assert "EnsurePlugins" in _kinds(next_sync)  # applied again when the job restarts
