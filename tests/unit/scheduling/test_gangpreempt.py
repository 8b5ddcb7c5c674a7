"""The gangpreempt action: cases from Volcano's pkg/scheduler/actions/gangpreempt/
gangpreempt_test.go (allowWholeBundle, victim preemptability) and actions/utils/bundle_test.go
(safe and whole bundles), run as whole sessions."""

from __future__ import annotations

from typing import Any

from scheduling.actions import bundles
from scheduling.actions.registry import run_session
from scheduling.api.result import EvictReason, SessionResult
from scheduling.framework.session_config import Action, SessionConfig, parse_actions
from scheduling.framework.state import SessionState
from tests.unit.scheduling.builders import (
    PRIORITY_CLASSES,
    gang,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    snapshot,
)

Obj = dict[str, Any]
GANGPREEMPT = SessionConfig(actions=parse_actions("enqueue, allocate, backfill, gangpreempt"))


def session(
    gangs: list[tuple[Obj, list[Obj]]], config: SessionConfig = GANGPREEMPT, **options: Any
) -> SessionResult:
    options.setdefault("priority_classes", PRIORITY_CLASSES)
    nodes = [make_node("n0", cpu="4").obj()]
    return run_session(snapshot(nodes, gangs=gangs, **options), config)


def evicted(result: SessionResult) -> list[str]:
    return sorted(e.pod.split("/")[1] for e in result.evictions)


def test_gang_without_spare_tasks_goes_whole_for_a_higher_priority_gang() -> None:
    low = running("low", ["n0"] * 4, priorityClassName="low")  # min 4 of 4: whole only
    high = gang("high", 2, priorityClassName="high")
    result = session([low, high])
    assert evicted(result) == [f"low-worker-{i}" for i in range(4)]
    assert {e.reason for e in result.evictions} == {EvictReason.GANG_PREEMPT}
    assert result.evictions[0].message.startswith("Pod is evicted, because of gangpreempt by ")


def test_allow_whole_bundle_false_evicts_no_whole_gang() -> None:
    low = running("low", ["n0"] * 4, priorityClassName="low")
    high = gang("high", 2, priorityClassName="high")
    config = GANGPREEMPT.model_copy(update={"no_whole_bundles": frozenset({Action.GANG_PREEMPT})})
    assert session([low, high], config).evictions == ()


def test_spare_tasks_go_before_the_gang_is_touched() -> None:
    low = running("low", ["n0"] * 4, min_member=2, priorityClassName="low")
    high = gang("high", 2, priorityClassName="high")
    result = session([low, high])
    assert len(result.evictions) == 2  # the safe bundle covers the need; low keeps its two


def test_victim_pods_marked_not_preemptable_are_kept() -> None:
    group = make_podgroup("low", 2, priorityClassName="low")
    group["status"]["phase"] = "Running"
    pods = [
        make_pod(f"low-worker-{i}", group="low", cpu="2")
        .annotate("volcano.sh/preemptable", "false")
        .on("n0")
        .obj()
        for i in range(2)
    ]
    assert session([(group, pods), gang("high", 2, priorityClassName="high")]).evictions == ()


def test_equal_priority_or_another_queue_preempts_nothing() -> None:
    same = running("a", ["n0"] * 4, priorityClassName="high")
    assert session([same, gang("b", 2, priorityClassName="high")]).evictions == ()
    other = running("a", ["n0"] * 4, priorityClassName="low", queue="other")
    queues = [make_queue(), make_queue("other")]
    high = gang("b", 2, priorityClassName="high")
    assert session([other, high], queues=queues).evictions == ()


def test_gang_that_would_still_not_fit_evicts_nobody() -> None:
    low = running("low", ["n0"] * 4, priorityClassName="low")
    assert session([low, gang("high", 5, priorityClassName="high")]).evictions == ()


def test_incomplete_whole_bundle_is_kept_by_caldera_and_broken_by_volcano() -> None:
    group = make_podgroup("low", 3, priorityClassName="low")
    group["status"]["phase"] = "Running"
    pods = [make_pod(f"low-worker-{i}", group="low").on("n0").obj() for i in range(3)]
    kept = make_pod("low-worker-3", group="low").annotate("volcano.sh/preemptable", "false")
    pods.append(kept.on("n0").obj())
    gangs = [(group, pods), gang("high", 2, priorityClassName="high")]
    assert session(gangs).evictions == ()  # Caldera: the gang would run one task short
    volcano = GANGPREEMPT.model_copy(update={"whole_gang_victims": False})
    assert len(session(gangs, volcano).evictions) == 3  # Volcano: its candidates, all of them


def test_bundles_split_spare_tasks_from_the_gang() -> None:
    low = running("low", ["n0"] * 4, min_member=2, priorityClassName="low")
    state = SessionState(snapshot([make_node("n0").obj()], gangs=[low]))
    local = state.tasks_of(next(iter(state.jobs)))
    found = bundles.create(state, local[0].job, local)
    assert [(b.kind, len(b.tasks)) for b in found] == [
        (bundles.Kind.SAFE, 2),
        (bundles.Kind.WHOLE, 2),
    ]
    assert bundles.roi(found[0], local[0].request) == float("inf")
    assert bundles.roi(found[1], local[0].request) < float("inf")


def test_a_gang_already_below_min_available_is_all_safe() -> None:
    low = running("low", ["n0"] * 2, min_member=3, priorityClassName="low")
    state = SessionState(snapshot([make_node("n0").obj()], gangs=[low]))
    local = state.tasks_of(next(iter(state.jobs)))
    found = bundles.create(state, local[0].job, local)
    assert [(b.kind, len(b.tasks)) for b in found] == [(bundles.Kind.SAFE, 2)]


def test_configuration_reads_allow_whole_bundle_and_refuses_unknown_keys() -> None:
    import pytest

    from scheduling.framework import conf

    base = conf.SchedulerConfiguration.model_validate(
        {
            "actions": "enqueue, allocate, gangpreempt, gangreclaim",
            "configurations": [
                {"name": "gangpreempt", "arguments": {"allowWholeBundle": False, "maxDomains": 0}}
            ],
        }
    )
    tiers = conf.load(conf.CALDERA_DEFAULT).session.tiers
    assert tiers
    loaded = conf.from_configuration(base.model_copy(update={"tiers": _tiers()}))
    assert loaded.session.no_whole_bundles == frozenset({Action.GANG_PREEMPT})
    wrong = base.model_copy(
        update={
            "tiers": _tiers(),
            "configurations": (conf.ActionConfiguration(name="gangreclaim", arguments={"x": 1}),),
        }
    )
    with pytest.raises(ValueError, match=r"gangreclaim has no argument\(s\) \['x'\]"):
        conf.from_configuration(wrong)


def _tiers() -> tuple[Any, ...]:
    from scheduling.framework import conf

    document = conf.conffile.mapping(conf.CALDERA_DEFAULT, "actions and tiers")
    return conf.SchedulerConfiguration.model_validate(document).tiers
