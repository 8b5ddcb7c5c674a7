"""run_session: the action table, a whole session, and results that survive serialisation."""

from __future__ import annotations

from models.keys import JobKey
from models.scheduling import PodGroupPhase
from scheduling.actions.registry import ACTIONS, run_session
from scheduling.api.result import PhaseUpdate, SessionResult
from scheduling.api.snapshot import Snapshot
from scheduling.framework.session_config import Action, SessionConfig
from tests.unit.scheduling.builders import gang, make_node, make_pod, make_podgroup, snapshot


def test_every_action_has_an_implementation() -> None:
    assert sorted(ACTIONS) == sorted(Action)


def test_default_config_is_volcanos_with_reclaim() -> None:
    config = SessionConfig()
    assert config.actions == (Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL, Action.RECLAIM)
    assert (config.scoring.least_allocated, config.scoring.binpack) == (1, 0)


def test_pending_group_is_enqueued_and_placed_in_one_session() -> None:
    group, pods = gang("a", 2, phase="Pending", minResources={"cpu": "2"})
    pods.append(make_pod("a-log-0", group="a", cpu="").obj())
    group["spec"]["minMember"] = 3
    result = run_session(
        snapshot([make_node("n0").obj(), make_node("n1").obj()], gangs=[(group, pods)])
    )
    assert result.node_of == {
        "default/a-worker-0": "n0",
        "default/a-worker-1": "n1",
        "default/a-log-0": "n0",
    }
    assert result.phase_updates == (
        PhaseUpdate(job=JobKey("default/a"), old=PodGroupPhase.PENDING, new=PodGroupPhase.INQUEUE),
    )


def test_snapshot_and_result_survive_json() -> None:
    jobs = [gang("a", 3, cpu="1500m"), gang("b", 2, cpu="333m")]
    snap = snapshot([make_node("n0", cpu="3").obj(), make_node("n1").obj()], gangs=jobs)
    again = Snapshot.model_validate_json(snap.model_dump_json())
    assert again == snap
    result = run_session(again)
    assert result == run_session(snap)
    assert SessionResult.model_validate_json(result.model_dump_json()) == result


def test_running_job_with_nothing_pending_changes_nothing() -> None:
    group = make_podgroup("a", min_member=1, phase="Running")
    pods = [make_pod("a-worker-0", group="a").on("n0").obj()]
    result = run_session(snapshot([make_node("n0").obj()], gangs=[(group, pods)]))
    assert (result.placements, result.phase_updates, result.pod_conditions) == ((), (), ())
    assert [c.type for c in result.conditions] == ["Scheduled"]
