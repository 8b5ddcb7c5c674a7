"""decide(): placing, mirroring, commands, failover, stale copies and deletion, by value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers import effects as fx
from controllers.dispatch import controller, steps
from controllers.dispatch import effects as dfx
from controllers.dispatch.results import (
    CommandSent,
    CopyDeleted,
    CopyMade,
    CopyUpdated,
    EventMark,
    Followed,
    Probed,
    RemoteEvent,
    Resumed,
)
from controllers.dispatch.state import DispatchState, Stale
from controllers.job.lease import LEASE_EXPIRED
from controllers.outcomes import ActionFailed, TimerFired
from controllers.parsed import ParsedJob
from models.dispatch import ClusterStatus, DispatchSettings, RemoteCopy, RemoteState
from models.keys import QueueName
from models.signals import common as common_signals
from models.signals.dispatch import DispatchObserved
from models.vcjob import Job
from tests.builders import make_job

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SETTINGS = DispatchSettings(queue=QueueName("multi"), clusters={"a": 2, "b": 1})
ROOM = {"cpu": "16", "memory": "64Gi", "pods": "110"}
A1 = RemoteCopy(cluster="a", generation=1, uid="copy-a1")
B2 = RemoteCopy(cluster="b", generation=2, uid="copy-b2")


def _manifest(uid: str = "u1", **spec: Any) -> dict[str, Any]:
    doc = make_job("train", "ns").task("w", replicas=2).spec(queue="multi", **spec).manifest()
    doc["metadata"]["uid"] = uid
    return doc


def _observed(doc: dict[str, Any] | None = None) -> ParsedJob[Job]:
    doc = doc or _manifest()
    signal = DispatchObserved(job=doc, settings=SETTINGS)
    return ParsedJob(signal=signal, job=Job.model_validate(doc))


def _probed(*up: str, down: tuple[str, ...] = ()) -> Probed:
    statuses = [ClusterStatus(name=n, reachable=True, allocatable=ROOM, free=ROOM) for n in up]
    statuses += [ClusterStatus(name=n, reachable=False, error="connection refused") for n in down]
    return Probed(statuses=statuses)


def _running(copy: RemoteCopy = A1, phase: str = "Running", message: str = "") -> Followed:
    state: dict[str, Any] = {"phase": phase}
    if message:
        state["message"] = message
    status = {"state": state, "running": 2}
    remote = RemoteState(
        cluster=copy.cluster, generation=copy.generation, found=True, phase=phase, status=status
    )
    return Followed(cluster=copy.cluster, generation=copy.generation, remote=remote)


def _silent(copy: RemoteCopy = A1) -> Followed:
    return Followed(
        cluster=copy.cluster, generation=copy.generation, reachable=False, error="refused"
    )


def _run(
    state: DispatchState, *inputs: controller.Input, now: datetime = NOW
) -> tuple[DispatchState, list[dfx.AnyEffect]]:
    out: list[dfx.AnyEffect] = []
    for item in inputs:
        decision = controller.decide(state, item, now)
        state = decision.state
        out += decision.effects
    return state, out


def _kinds(effects: list[dfx.AnyEffect]) -> list[str]:
    return [e.kind for e in effects]


def _reasons(effects: list[dfx.AnyEffect]) -> list[str]:
    return [e.reason for e in effects if isinstance(e, fx.RecordEvent)]


def _placed() -> DispatchState:
    """Observed, placed on `a` (weight 2), made, followed once: Running there."""
    state, _ = _run(
        DispatchState(),
        _observed(),
        _probed("a", "b"),
        CopyMade(cluster="a", generation=1, uid="copy-a1", created=True),
        _running(),
    )
    return state


def test_first_sight_probes_the_queues_clusters() -> None:
    state, out = _run(DispatchState(), _observed())
    assert out == [dfx.ProbeClusters(clusters=["a", "b"], queue="multi")]
    assert state.probing and state.settings == SETTINGS and state.job is not None
    assert state.job.status is None


def test_probe_answer_creates_the_copy_on_the_chosen_cluster() -> None:
    state, _ = _run(DispatchState(), _observed())
    state, out = _run(state, _probed("a", "b"))
    assert state.current == RemoteCopy(cluster="a", generation=1)
    assert state.job is not None
    assert out == [
        dfx.CreateCopy(
            target=RemoteCopy(cluster="a", generation=1), job=state.job, lease_seconds=60
        )
    ]


def test_copy_made_marks_the_job_and_follows_the_copy() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed("a"))
    state, out = _run(state, CopyMade(cluster="a", generation=1, uid="copy-a1", created=True))
    assert state.current == A1
    assert out == [
        dfx.MarkDispatched(cluster="a"),
        fx.RecordEvent(
            reason="Dispatched",
            message="dispatched to cluster a (generation 1), copy uid copy-a1",
        ),
        dfx.FollowCopy(target=A1, known="", events=EventMark(), renew=True, lease_seconds=60),
    ]


def test_no_cluster_fits_says_so_once_and_probes_again() -> None:
    state, _ = _run(DispatchState(), _observed())
    state, out = _run(state, _probed(down=("a", "b")))
    assert _kinds(out) == [
        "MarkDispatched",
        "WriteStatus",
        "RecordEvent",
        "PhaseChanged",
        "StartTimer",
    ]
    assert out[0] == dfx.MarkDispatched(cluster="")
    assert _reasons(out) == ["NoClusterReachable"]
    timer = out[-1]
    assert isinstance(timer, fx.StartTimer) and timer.key == steps.RECHECK
    state, out = _run(state, TimerFired(key=steps.RECHECK), _probed(down=("a", "b")))
    assert _kinds(out) == ["ProbeClusters", "StartTimer"]  # the same reason: not said again
    state, out = _run(state, TimerFired(key=steps.RECHECK), _probed("b", down=("a",)))
    assert _kinds(out) == ["ProbeClusters", "CancelTimer", "CreateCopy"]
    assert state.current == RemoteCopy(cluster="b", generation=1) and not state.waiting


def test_mirror_writes_a_changed_status_once_and_follows_on() -> None:
    state = _placed()
    assert state.phase == "Running" and state.digest
    state, out = _run(state, _running())
    assert _kinds(out) == ["FollowCopy"]  # nothing new: nothing written
    events = [
        RemoteEvent(name="e1", reason="ExecuteAction", message="go", last_seen=NOW),
    ]
    answer = _running(phase="Completed").model_copy(update={"events": events})
    state, out = _run(state, answer)
    assert _kinds(out) == ["WriteStatus", "PhaseChanged", "MirrorEvents", "FollowCopy"]
    assert out[2] == dfx.MirrorEvents(cluster="a", events=events)
    follow = out[-1]
    assert isinstance(follow, dfx.FollowCopy) and not follow.renew  # finished: no lease
    assert state.events == EventMark(since=NOW, seen=["e1"])


def test_unreachable_arms_the_lost_timer_once_and_retries() -> None:
    state, out = _run(_placed(), _silent())
    assert _kinds(out) == ["RecordEvent", "StartTimer", "StartTimer"]
    assert _reasons(out) == ["ClusterUnreachable"]
    lost, reach = out[1], out[2]
    assert isinstance(lost, fx.StartTimer) and lost.key == steps.LOST
    assert lost.fires_at == NOW + timedelta(seconds=180)
    assert isinstance(reach, fx.StartTimer) and reach.key == steps.REACH
    state, out = _run(state, TimerFired(key=steps.REACH), _silent(), now=NOW + timedelta(seconds=2))
    assert _kinds(out) == ["FollowCopy", "StartTimer"]  # retried, the lost timer left alone
    state, out = _run(state, _running())
    assert _kinds(out)[:3] == ["CancelTimer", "CancelTimer", "RecordEvent"]
    assert _reasons(out) == ["ClusterReachable"] and state.unreachable_since is None


def test_lost_cluster_moves_the_job_to_another_never_the_lost_one() -> None:
    state, _ = _run(_placed(), _silent())
    later = NOW + timedelta(seconds=180)
    state, out = _run(state, TimerFired(key=steps.LOST), now=later)
    assert state.current is None and state.stale == [Stale(target=A1, why="cluster a lost")]
    assert _kinds(out) == [
        "StopFollowing",
        "CancelTimer",
        "CancelTimer",
        "RecordEvent",
        "ProbeClusters",
        "DeleteCopy",
    ]
    assert _reasons(out) == ["ClusterLost"]
    assert out[4] == dfx.ProbeClusters(clusters=["b"], queue="multi")
    # Even a probe that says `a` answers again chooses `b`: `a` holds a stale copy.
    state, out = _run(state, _probed("a", "b"), now=later)
    assert state.current == RemoteCopy(cluster="b", generation=2)
    assert _kinds(out) == ["CreateCopy"]
    state, out = _run(
        state,
        CopyDeleted(cluster="a", generation=1, reachable=False, error="refused"),
        now=later,
    )
    assert _kinds(out) == ["StartTimer"]
    assert isinstance(out[0], fx.StartTimer) and out[0].key == "stale/a/1"


def test_stale_copy_deleted_when_its_cluster_is_back_and_a_completed_one_recorded() -> None:
    state, _ = _run(_placed(), _silent())
    later = NOW + timedelta(seconds=180)
    state, _ = _run(
        state,
        TimerFired(key=steps.LOST),
        _probed("b"),
        CopyMade(cluster="b", generation=2, uid="copy-b2", created=True),
        now=later,
    )
    state, out = _run(state, TimerFired(key="stale/a/1"), now=later)
    assert out == [dfx.DeleteCopy(target=A1, why="cluster a lost")]
    state, out = _run(state, CopyDeleted(cluster="a", generation=1, phase="Completed"), now=later)
    assert _reasons(out) == ["StaleCopyCompleted", "StaleCopyDeleted"]
    assert state.stale == [] and state.current == B2


def test_finished_job_is_never_moved() -> None:
    state, _ = _run(_placed(), _running(phase="Completed"))
    state, out = _run(state, _silent())
    assert _kinds(out) == ["RecordEvent", "StartTimer"]  # a retry, no lost timer
    assert state.lost_at is None
    state, out = _run(state, TimerFired(key=steps.LOST), now=NOW + timedelta(hours=1))
    assert out == [] and state.current == A1


def test_fenced_copy_is_not_mirrored_and_runs_again() -> None:
    fenced = _running(
        phase="Aborted", message=f"no pod left running after AbortJob: {LEASE_EXPIRED}"
    )
    state, out = _run(_placed(), fenced)
    assert state.phase == "Running"  # the Aborted is not the job's
    assert state.current is None and state.stale == [Stale(target=A1, why="fenced")]
    assert _reasons(out) == ["CopyFenced"]
    assert _kinds(out)[-2:] == ["ProbeClusters", "DeleteCopy"]


def test_vanished_copy_runs_again_and_one_never_made_is_made() -> None:
    gone = Followed(
        cluster="a", generation=1, remote=RemoteState(cluster="a", generation=1, found=False)
    )
    state, out = _run(_placed(), gone)
    assert _reasons(out) == ["CopyVanished"] and state.current is None
    assert "DeleteCopy" not in _kinds(out)
    state, _ = _run(DispatchState(), _observed(), _probed("a"))
    state, out = _run(state, gone)
    assert _kinds(out) == ["CreateCopy"]


def test_commands_pass_to_the_copy_or_wait_for_it() -> None:
    abort = common_signals.CommandIssued(action="AbortJob", command="train-abort")
    state, out = _run(_placed(), abort)
    assert out[1:] == [dfx.SendCommand(target=A1, command=abort, serial=1)]
    state, _ = _run(state, _silent())
    restart = common_signals.CommandIssued(action="RestartJob")
    state, out = _run(state, restart)
    assert state.commands == [restart] and _kinds(out) == ["RecordEvent"]
    state, out = _run(state, _running())
    assert dfx.SendCommand(target=A1, command=restart, serial=2) in out
    assert state.commands == []
    state, out = _run(
        state, CommandSent(cluster="a", generation=1, reachable=False, command=restart)
    )
    assert state.commands == [restart] and state.unreachable_since == NOW


def test_abort_while_waiting_ends_the_job_here_and_resume_places_it_again() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed(down=("a", "b")))
    abort = common_signals.CommandIssued(action="AbortJob")
    state, out = _run(state, abort)
    assert state.ended_here == "Aborted" and state.finished
    assert _kinds(out) == ["CancelTimer", "WriteStatus", "PhaseChanged", "RecordEvent"]
    state, out = _run(state, TimerFired(key=steps.RECHECK))
    assert out == []
    state, out = _run(state, common_signals.CommandIssued(action="ResumeJob"))
    assert not state.ended_here and _kinds(out) == ["RecordEvent", "ProbeClusters"]


def test_older_copy_of_ours_in_the_way_is_deleted_first() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed("a"))
    found = CopyMade(
        cluster="a", generation=1, found_origin="u1", found_generation=0, found_uid="old"
    )
    state = state.model_copy(update={"generation": 1})
    state, out = _run(state, found)
    old = RemoteCopy(cluster="a", generation=0, uid="old")
    assert out == [dfx.DeleteCopy(target=old, why="an older generation in the way")]
    state, out = _run(state, CopyDeleted(cluster="a", generation=0))
    assert _kinds(out) == ["RecordEvent", "CreateCopy"]


def test_job_of_another_origin_there_refuses_that_cluster() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed("a", "b"))
    state, out = _run(state, CopyMade(cluster="a", generation=1, found_origin="other"))
    assert "a" in state.refused and state.current is None
    assert _reasons(out) == ["ClusterRefused"]
    assert out[-1] == dfx.ProbeClusters(clusters=["b"], queue="multi")
    state, out = _run(state, _probed("b"))
    assert state.current == RemoteCopy(cluster="b", generation=2)


def test_refused_create_rules_the_cluster_out() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed("a", "b"))
    state, out = _run(state, ActionFailed(effect="CreateCopy", error="403 Forbidden"))
    assert state.current is None and "a" in state.refused
    assert _kinds(out) == ["RecordEvent", "ProbeClusters"]


def test_deleting_the_job_deletes_every_copy_then_finishes() -> None:
    state, _ = _run(_placed(), _silent())
    state, _ = _run(state, TimerFired(key=steps.LOST), now=NOW + timedelta(seconds=180))
    state, _ = _run(
        state, _probed("b"), CopyMade(cluster="b", generation=2, uid="copy-b2", created=True)
    )
    state, out = _run(state, common_signals.JobDeleted(uid="u1"))
    assert state.deleted and state.current is None
    assert [e for e in out if isinstance(e, dfx.DeleteCopy)] == [
        dfx.DeleteCopy(target=A1, why="cluster a lost"),
        dfx.DeleteCopy(target=B2, why="job deleted"),
    ]
    assert "Finish" not in _kinds(out)
    state, out = _run(state, CopyDeleted(cluster="b", generation=2))
    assert out == []  # no Events on a Job that is gone; one copy is left
    state, out = _run(state, CopyDeleted(cluster="a", generation=1, outcome="absent"))
    assert out == [fx.Finish()]


def test_deletion_of_another_uid_is_ignored_and_a_new_uid_starts_over_after_cleanup() -> None:
    state = _placed()
    assert _run(state, common_signals.JobDeleted(uid="other"))[1] == []
    again = _observed(_manifest(uid="u2"))
    state, out = _run(state, again)
    assert state.deleted and _kinds(out)[-1] == "DeleteCopy"
    state, out = _run(state, CopyDeleted(cluster="a", generation=1))
    assert out == [fx.StartOver(observed=again.signal)]


def test_never_dispatched_job_deleted_finishes_at_once() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed(down=("a",)))
    state, out = _run(state, common_signals.JobDeleted(uid="u1"))
    assert out[-1] == fx.Finish()


def test_resumed_run_asks_again_what_it_waited_on() -> None:
    state, _ = _run(_placed(), _silent())
    state, _ = _run(state, TimerFired(key=steps.LOST), now=NOW + timedelta(seconds=180))
    state, out = _run(state, Resumed())
    assert _kinds(out) == ["DeleteCopy", "ProbeClusters"]
    restored = steps.restored(_run(_placed(), _silent())[0])
    assert [t.key for t in restored] == [steps.LOST]


@pytest.mark.parametrize(
    ("phase", "armed"),
    [
        pytest.param("Completed", True, id="completed-ttl"),
        pytest.param("Terminated", True, id="terminated-ttl"),
        pytest.param("Aborted", False, id="aborted-no-ttl"),
    ],
)
def test_ttl_after_finished_deletes_the_managers_job(phase: str, armed: bool) -> None:
    state, _ = _run(
        DispatchState(),
        _observed(_manifest(ttlSecondsAfterFinished=30)),
        _probed("a"),
        CopyMade(cluster="a", generation=1, uid="copy-a1", created=True),
    )
    state, out = _run(state, _running(phase=phase))
    assert (state.ttl_at is not None) == armed
    if armed:
        state, out = _run(state, TimerFired(key=steps.TTL), now=NOW + timedelta(seconds=30))
        assert out[-1] == fx.DeleteJob(namespace="ns", name="train", uid="u1")


def test_lease_is_half_of_a_short_lost_after() -> None:
    short = SETTINGS.model_copy(update={"lost_after_seconds": 20})
    assert steps.lease_seconds(short) == 10
    assert steps.lease_seconds(SETTINGS) == 60


def test_copy_that_began_aborting_after_its_lease_is_fenced() -> None:
    lease = NOW + timedelta(seconds=60)
    aborted = _running(phase="Aborted", message="no pod left running after SyncJob")
    assert aborted.remote is not None
    status = {
        **aborted.remote.status,
        "conditions": [{"status": "Aborting", "lastTransitionTime": "2026-01-01T00:01:00Z"}],
    }
    remote = aborted.remote.model_copy(update={"status": status})
    answer = aborted.model_copy(update={"remote": remote, "lease_until": lease})
    state, out = _run(_placed(), answer)
    assert _reasons(out) == ["CopyFenced"] and state.phase == "Running"
    state, out = _run(_placed(), answer.model_copy(update={"lease_until": lease + timedelta(1)}))
    assert state.phase == "Aborted" and "CopyFenced" not in _reasons(out)


def _scaled(replicas: int) -> ParsedJob[Job]:
    doc = make_job("train", "ns").task("w", replicas=replicas).spec(queue="multi").manifest()
    doc["metadata"]["uid"] = "u1"
    return _observed(doc)


def _updates(effects: list[dfx.AnyEffect]) -> list[dfx.UpdateCopy]:
    return [e for e in effects if isinstance(e, dfx.UpdateCopy)]


def test_spec_change_passes_to_the_copy_once_and_not_before_it_exists() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed("a"))
    state, out = _run(state, _scaled(3))  # the copy is being made: nothing to update yet
    assert _updates(out) == []
    state, out = _run(state, CopyMade(cluster="a", generation=1, uid="copy-a1", created=True))
    (update,) = _updates(out)  # made from the spec before the change: it gets the new one
    assert update.target == A1 and update.job.spec.tasks[0].replicas == 3
    state, out = _run(state, _running(), _scaled(3))
    assert _updates(out) == []  # the same spec again: nothing to pass


def test_spec_change_waits_for_a_silent_cluster_and_never_reaches_a_finished_job() -> None:
    state, _ = _run(_placed(), _silent())
    state, out = _run(state, _scaled(4))
    assert _updates(out) == []
    state, out = _run(state, _running())  # it answers again: the change goes now
    assert [u.job.spec.tasks[0].replicas for u in _updates(out)] == [4]
    silent = CopyUpdated(cluster="a", generation=1, reachable=False, error="refused")
    state, out = _run(state, silent, _running())  # lost on the way: passed again on reach
    assert len(_updates(out)) == 1
    done, _ = _run(state, _running(phase="Completed"))
    _, out = _run(done, _scaled(5))
    assert _updates(out) == []


def test_an_older_copy_still_being_deleted_is_waited_for_not_deleted_again_and_again() -> None:
    state, _ = _run(DispatchState(), _observed(), _probed("a"))
    going = CopyMade(
        cluster="a",
        generation=1,
        found_origin="u1",
        found_generation=0,
        found_uid="old",
        found_deleting=True,
    )
    state = state.model_copy(update={"generation": 1})
    state, out = _run(state, going)
    assert _kinds(out) == ["StartTimer"] and not state.stale  # no delete, no create yet
    state, out = _run(state, TimerFired(key=steps.REACH))
    assert _kinds(out) == ["CreateCopy"]
    state, out = _run(state, going)  # still going: a longer wait
    (timer,) = out
    assert isinstance(timer, fx.StartTimer) and timer.fires_at == NOW + steps.backoff(2)


def _given_up(deadline: bool = True) -> CopyDeleted:
    return CopyDeleted(
        cluster="a", generation=1, reachable=False, error="no Secret", deadline=deadline
    )


def _moved_off_a() -> DispatchState:
    """The copy on `a` given up as lost, the job running as generation 2 on `b`."""
    state, _ = _run(_placed(), _silent())
    state, _ = _run(
        state,
        TimerFired(key=steps.LOST),
        _probed("b"),
        CopyMade(cluster="b", generation=2, uid="copy-b2", created=True),
        now=NOW + timedelta(seconds=180),
    )
    return state


def test_stale_copy_of_a_cluster_that_never_returns_is_left_behind_at_the_deadline() -> None:
    state = _moved_off_a()
    first = NOW + timedelta(seconds=200)
    state, out = _run(state, _given_up(), now=first)
    assert _kinds(out) == ["StartTimer"] and state.stale[0].silent_since == first
    deadline = timedelta(seconds=SETTINGS.stale_deadline_seconds)
    state, out = _run(state, _given_up(), now=first + deadline - timedelta(seconds=1))
    assert _kinds(out) == ["StartTimer"], "tried again until the deadline"
    state, out = _run(state, _given_up(), now=first + deadline)
    assert state.stale == [] and state.left_behind == ["a/1"] and state.current == B2
    assert _reasons(out) == ["StaleCopyLeftBehind"]
    assert dfx.MarkLeftBehind(copies=["a/1"]) in out
    assert "StartTimer" not in _kinds(out)


def test_a_run_recorded_before_the_deadline_tries_for_ever() -> None:
    state = _moved_off_a()
    state, _ = _run(state, _given_up(deadline=False), now=NOW + timedelta(seconds=200))
    state, out = _run(state, _given_up(deadline=False), now=NOW + timedelta(days=30))
    assert _kinds(out) == ["StartTimer"] and [s.target for s in state.stale] == [A1]


def test_deleted_job_whose_copy_is_left_behind_finishes_without_an_event() -> None:
    state = _moved_off_a()
    state, _ = _run(
        state, common_signals.JobDeleted(uid="u1"), CopyDeleted(cluster="b", generation=2)
    )
    first = NOW + timedelta(seconds=200)
    state, _ = _run(state, _given_up(), now=first)
    later = first + timedelta(seconds=SETTINGS.stale_deadline_seconds)
    state, out = _run(state, _given_up(), now=later)
    assert out == [fx.Finish()] and state.left_behind == ["a/1"]


def test_a_cluster_that_answers_past_the_deadline_still_has_its_copy_deleted() -> None:
    state = _moved_off_a()
    state, _ = _run(state, _given_up(), now=NOW + timedelta(seconds=200))
    state, out = _run(state, CopyDeleted(cluster="a", generation=1), now=NOW + timedelta(days=1))
    assert _reasons(out) == ["StaleCopyDeleted"] and state.left_behind == []


def _drained(copy: RemoteCopy = A1) -> Followed:
    return _running(copy).model_copy(update={"drained": True})


def test_queue_that_moves_on_drain_asks_the_poll_and_moves_the_copy_off_a_drained_cluster() -> None:
    moving = SETTINGS.model_copy(update={"move_on_drain": True})
    signal = DispatchObserved(job=_manifest(), settings=moving)
    state, out = _run(
        DispatchState(),
        ParsedJob(signal=signal, job=Job.model_validate(_manifest())),
        _probed("a", "b"),
        CopyMade(cluster="a", generation=1, uid="copy-a1", created=True),
    )
    (poll,) = [e for e in out if isinstance(e, dfx.FollowCopy)]
    assert poll.move_on_drain
    state, out = _run(state, _drained())
    assert state.current is None and [s.target for s in state.stale] == [A1]
    assert _reasons(out) == ["ClusterDrained"]
    assert dfx.DeleteCopy(target=A1, why="cluster a drained") in out
    assert "ProbeClusters" in _kinds(out)


def test_queue_that_stays_on_drain_keeps_the_copy_where_it_runs() -> None:
    state = _placed()
    state, out = _run(state, _drained())
    assert state.current == A1 and _kinds(out)[-1] == "FollowCopy"
    poll = out[-1]
    assert isinstance(poll, dfx.FollowCopy) and not poll.move_on_drain
