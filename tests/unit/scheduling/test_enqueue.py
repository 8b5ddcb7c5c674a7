"""The enqueue action: Pending -> Inqueue under overcommit and queue quota (C7.4, C7.6, C8.1)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest

from models.keys import JobKey
from models.scheduling import PodGroupPhase
from scheduling.actions import enqueue
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from tests.unit.scheduling.builders import (
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    snapshot,
)

OVERUSED = enqueue.CLUSTER_OVERUSED
QUEUES = [make_queue("q1"), make_queue("q2")]
NODES = [make_node("n1", cpu="5").obj(), make_node("n2", cpu="5").obj()]  # 10 cpu, idle 12


def pending(
    name: str, cpu: str | None, queue: str = "q1", **spec: Any
) -> tuple[dict[str, Any], list[Any]]:
    if cpu is not None:
        spec["minResources"] = {"cpu": cpu}
    return make_podgroup(name, queue=queue, phase="Pending", **spec), []


def _run(
    groups: list[tuple[dict[str, Any], list[Any]]],
    queues: Sequence[dict[str, Any]] = QUEUES,
    pods: Sequence[dict[str, Any]] = (),
    config: SessionConfig | None = None,
) -> tuple[dict[str, PodGroupPhase], dict[str, str]]:
    settings = config or SessionConfig()
    state = SessionState(snapshot(NODES, gangs=groups, queues=list(queues), pods=pods), settings)
    enqueue.enqueue(state, settings)
    return {k: j.phase for k, j in state.jobs.items()}, dict(state.job_errors)


INQ, PEND = PodGroupPhase.INQUEUE, PodGroupPhase.PENDING
CASES = [
    pytest.param([pending("a", None)], {"a": INQ}, {}, id="no-min-resources-always"),
    pytest.param(
        [pending("a", "7"), pending("b", "5", "q2")], {"a": INQ, "b": INQ}, {}, id="overcommit-1.2"
    ),
    pytest.param(
        [pending("a", "7"), pending("b", "5", "q2"), pending("c", "1", "q2")],
        {"a": INQ, "b": INQ, "c": PEND},
        {"c": OVERUSED},
        id="beyond-overcommit",
    ),
    pytest.param(
        [pending("a", "11")],
        {"a": PEND},
        {"a": f"{enqueue.QUOTA_INSUFFICIENT}: queue q1"},
        id="beyond-queue-real-capability",
    ),
    pytest.param(
        [pending("a", "6"), pending("b", "6")],
        {"a": INQ, "b": PEND},
        {"b": f"{enqueue.QUOTA_INSUFFICIENT}: queue q1"},
        id="queue-reservations-add-up",
    ),
    pytest.param(
        [pending("a", "8"), pending("b", "8", priorityClassName="high")],
        {"a": PEND, "b": INQ},
        {"a": OVERUSED},
        id="higher-priority-first",
    ),
    pytest.param(
        [(make_podgroup("a", queue="q2", minResources={"cpu": "8"}), []), pending("b", "5")],
        {"a": INQ, "b": PEND},
        {"b": OVERUSED},
        id="existing-inqueue-reservation-counts",
    ),
]


@pytest.mark.parametrize(("groups", "phases", "errors"), CASES)
def test_enqueue(
    groups: list[tuple[dict[str, Any], list[Any]]],
    phases: dict[str, PodGroupPhase],
    errors: dict[str, str],
) -> None:
    classes = [{"metadata": {"name": "high"}, "value": 100}]
    state = SessionState(snapshot(NODES, gangs=groups, queues=QUEUES, priority_classes=classes))
    enqueue.enqueue(state, SessionConfig())
    assert {k.split("/")[1]: j.phase for k, j in state.jobs.items()} == phases
    assert {k.split("/")[1]: v for k, v in state.job_errors.items()} == errors


def test_used_capacity_shrinks_the_overcommitted_room() -> None:
    busy = make_pod("busy", group=None, cpu="4").spec(schedulerName="other").on("n1").obj()
    phases, errors = _run([pending("a", "7"), pending("b", "2", "q2")], pods=[busy])
    assert phases == {JobKey("default/a"): INQ, JobKey("default/b"): PEND}  # 12 - 4 = 8 < 9
    assert errors == {JobKey("default/b"): OVERUSED}


def test_queue_at_its_deserved_share_keeps_no_room_from_other_queues() -> None:
    """q1 holds its deserved share (5 CPUs, all it asks for): its Inqueue job `i` cannot be
    allocated, so its 5 CPUs reserved would keep q2's `b` out (12 - 5 used - 5 < 4) for as long
    as q1 stays there. They do not; q1's own `c` still counts them (issue 37)."""
    busy = running("r", ["n1"], cpu="5", queue="q1", minResources={"cpu": "5"})
    held = (make_podgroup("i", queue="q1", minResources={"cpu": "5"}), [])
    phases, errors = _run([busy, held, pending("b", "4", "q2"), pending("c", "1")])
    assert phases[JobKey("default/b")] is INQ
    assert (phases[JobKey("default/c")], errors[JobKey("default/c")]) == (PEND, OVERUSED)


def test_queue_below_its_deserved_share_keeps_its_reservations() -> None:
    """Volcano's rule while q1 can still run its admitted jobs: they keep their room."""
    busy = running("r", ["n1"], cpu="2", queue="q1", minResources={"cpu": "2"})
    waiting = make_pod("i-w-0", group="i", cpu="5").obj()  # q1 asks for 7 CPUs: deserved 7
    held = (make_podgroup("i", queue="q1", minResources={"cpu": "5"}), [waiting])
    phases, errors = _run([busy, held, pending("b", "6", "q2")])  # 12 - 2 used - 5 < 6
    assert (phases[JobKey("default/b")], errors[JobKey("default/b")]) == (PEND, OVERUSED)


def test_factor_one_disables_overcommit() -> None:
    config = SessionConfig(overcommit_factor=Fraction(1))
    phases, _ = _run([pending("a", "7"), pending("b", "5", "q2")], config=config)
    assert phases[JobKey("default/b")] is PEND


def test_factor_below_one_resets_to_default() -> None:
    assert SessionConfig(overcommit_factor=Fraction(1, 2)).overcommit_factor == Fraction(6, 5)


def test_closed_queue_refuses_jobs_with_min_resources_only() -> None:
    queues = [make_queue("q1", state="Closed")]
    phases, errors = _run([pending("a", "1"), pending("b", None)], queues=queues)
    assert phases == {JobKey("default/a"): PEND, JobKey("default/b"): INQ}
    assert errors == {JobKey("default/a"): f"{enqueue.QUOTA_INSUFFICIENT}: queue q1"}


def test_capability_limits_admission() -> None:
    queues = [make_queue("q1", capability={"cpu": "4"})]
    phases, _ = _run([pending("a", "5")], queues=queues)
    assert phases == {JobKey("default/a"): PEND}
