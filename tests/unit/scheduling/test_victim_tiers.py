"""Victims tier by tier, as Volcano's framework asks (issue 35 item 7).

The table's rows are tier votes: the configured tiers with their switches and each plugin's
answer over the same candidates, and the victims Volcano's walk makes of them. Each row names
the Volcano function (at the mirror's HEAD) it is read from. The plugin functions after it are
checked over a session's books, each against its Volcano original.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import pytest

from models.keys import JobKey
from scheduling.api.snapshot import PodKey
from scheduling.framework import victim_tiers
from scheduling.framework.session_config import SessionConfig, default_tiers
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import PluginOn, Point, Tiers
from tests.unit.scheduling.builders import (
    LIGHT_HEAVY,
    PRIORITY_CLASSES,
    gang,
    make_node,
    make_pod,
    make_podgroup,
    running,
    session_state,
)

P, R = Point.PREEMPTABLE, Point.RECLAIMABLE
NOT_ASKED: Final = "not asked"  # the walk must not call this plugin


def plugins(*entries: str) -> tuple[PluginOn, ...]:
    """`name` with every switch on; `name-` with enablePreemptable and enableReclaimable off."""
    return tuple(
        PluginOn(name=e.rstrip("-"), off=frozenset({P, R}) if e.endswith("-") else frozenset())
        for e in entries
    )


DEFAULT: Final = default_tiers()
# Volcano's Helm chart: enablePreemptable false on gang and drf, binpack in tier 2.
HELM: Final = (
    (PluginOn(name="priority"), PluginOn(name="gang", off=frozenset({P})), *plugins("conformance")),
    (
        *plugins("overcommit"),
        PluginOn(name="drf", off=frozenset({P})),
        *plugins("predicates", "proportion", "nodeorder", "binpack"),
    ),
)
SP = "session_plugins.go Preemptable"
SR = "session_plugins.go Reclaimable"

Answers = Mapping[str, tuple[str, ...] | str | None]
ROWS = [
    # (source, point, tiers, answers, victims)
    pytest.param(
        SP + ": all switches on, tier 1 intersects priority, gang and conformance",
        P,
        DEFAULT,
        {"priority": ("a", "b"), "gang": ("a",), "conformance": ("a", "b"), "drf": NOT_ASKED},
        ("a",),
        id="default-preempt-tier-1-intersects",
    ),
    pytest.param(
        SP + ": !isEnabled(plugin.EnabledPreemptable) skips gang (Helm's switch)",
        P,
        HELM,
        {"priority": ("a", "b"), "gang": NOT_ASKED, "conformance": ("a", "b"), "drf": NOT_ASKED},
        ("a", "b"),
        id="helm-preempt-gang-switched-off",
    ),
    pytest.param(
        SR + ": Helm turns off no reclaim switch, gang still answers",
        R,
        HELM,
        {"gang": ("a",), "conformance": ("a", "b"), "proportion": NOT_ASKED},
        ("a",),
        id="helm-reclaim-gang-still-asked",
    ),
    pytest.param(
        SR + ": len(candidates) == 0 sets victims nil and breaks the tier; the next decides",
        R,
        DEFAULT,
        {"gang": (), "conformance": NOT_ASKED, "proportion": ("a", "b")},
        ("a", "b"),
        id="gang-names-nobody-proportion-decides-without-conformance",
    ),
    pytest.param(
        SR + ": victims != nil after a tier returns them; later tiers are not asked",
        R,
        DEFAULT,
        {"gang": ("b",), "conformance": ("a", "b"), "proportion": NOT_ASKED},
        ("b",),
        id="tier-1-decides-proportion-never-asked",
    ),
    pytest.param(
        SP + ": an empty intersection is a nil slice, the next plugin's answer replaces it",
        P,
        DEFAULT,
        {"priority": ("a",), "gang": ("b",), "conformance": ("a", "b")},
        ("a", "b"),
        id="empty-intersection-is-nil-then-replaced",
    ),
    pytest.param(
        SP + ": an empty intersection left at the end of a tier goes to the next tier",
        P,
        (plugins("priority", "gang"), plugins("drf")),
        {"priority": ("a",), "gang": ("b",), "drf": ("b", "c")},
        ("b", "c"),
        id="empty-intersection-ends-tier",
    ),
    pytest.param(
        SP + ": abstain == 0 skips the plugin (extender's abstain)",
        P,
        (plugins("extender", "conformance"),),
        {"extender": None, "conformance": ("a",)},
        ("a",),
        id="abstain-skipped",
    ),
    pytest.param(
        SR + ": only plugins in reclaimableFns are asked (priority has no reclaim function)",
        R,
        (plugins("priority", "conformance"),),
        {"priority": NOT_ASKED, "conformance": ("a", "b")},
        ("a", "b"),
        id="no-function-at-the-point",
    ),
    pytest.param(
        SP + ": no tier with victims returns nil",
        P,
        DEFAULT,
        {"priority": (), "gang": NOT_ASKED, "drf": ()},
        (),
        id="nobody-anywhere",
    ),
    pytest.param(
        SP + ": the intersection keeps the first answer's order",
        P,
        (plugins("priority", "conformance"),),
        {"priority": ("c", "a", "b"), "conformance": ("a", "b", "c")},
        ("c", "a", "b"),
        id="first-answer-order",
    ),
    pytest.param(
        SR + ": a switched-off plugin of a later tier is skipped there too",
        R,
        (plugins("gang"), plugins("proportion-", "conformance")),
        {"gang": (), "proportion": NOT_ASKED, "conformance": ("a",)},
        ("a",),
        id="later-tier-switch-off",
    ),
]


def asker(name: str, answer: tuple[str, ...] | str | None) -> Callable[[], Any]:
    def ask() -> Any:
        if answer == NOT_ASKED:
            raise AssertionError(f"{name} was asked")
        return None if answer is None else [PodKey(a) for a in answer]

    return ask


@pytest.mark.parametrize(("source", "point", "tiers", "answers", "expected"), ROWS)
def test_tier_votes(
    source: str, point: Point, tiers: Tiers, answers: Answers, expected: tuple[str, ...]
) -> None:
    asks = {name: asker(name, answer) for name, answer in answers.items()}
    assert victim_tiers.victims_by_tiers(tiers, point, asks) == tuple(map(PodKey, expected))


# --- the plugins' victim functions over a session's books ---------------------------------


def on_n0(state: SessionState) -> list[Any]:
    return sorted((t for t in state.tasks.values() if t.node_name == "n0"), key=lambda t: t.key)


def names(tasks: list[Any]) -> list[str]:
    return [t.key.split("/")[1] for t in tasks]


def test_gang_counts_each_jobs_spare_tasks_down() -> None:
    """gang.go preemptableFn: jobOccupiedMap starts at ReadyTaskNum and counts down."""
    state = session_state(
        [make_node("n0", cpu="64").obj()],
        [running("a", ["n0"] * 4, min_member=2), running("b", ["n0"] * 2), gang("p", 1)],
    )
    found = on_n0(state)
    preemptor = state.tasks[PodKey("default/p-worker-0")]
    assert names(victim_tiers.gang(state, preemptor, found)) == ["a-worker-0", "a-worker-1"]


def test_priority_compares_jobs_and_within_a_job_tasks() -> None:
    """priority.go preemptableFn: job priority between jobs, task priority within one."""
    group = make_podgroup("j", min_member=1, phase="Running", priorityClassName="high")
    own = [make_pod(f"j-worker-{i}", group="j").priority(p).on("n0").obj() for i, p in [(0, 1)]]
    own.append(make_pod("j-worker-1", group="j").priority(10).obj())
    state = session_state(
        [make_node("n0", cpu="64").obj()],
        [
            (group, own),
            running("lo", ["n0"], priorityClassName="low"),
            running("hi", ["n0"], priorityClassName="high"),
        ],
        priority_classes=PRIORITY_CLASSES,
    )
    preemptor = state.tasks[PodKey("default/j-worker-1")]
    found = on_n0(state)
    assert names(victim_tiers.priority(state, preemptor, found)) == ["j-worker-0", "lo-worker-0"]


def test_drf_takes_from_jobs_whose_share_stays_at_least_the_preemptors() -> None:
    """drf.go preemptableFn: ls (preemptor's job with it) <= rs (victim's job without it),
    each victim job's book counted down as its tasks are looked at."""
    state = session_state(
        [make_node("n0", cpu="10").obj()],
        [running("big", ["n0"] * 6, min_member=1), running("one", ["n0"]), gang("p", 1)],
    )
    preemptor = state.tasks[PodKey("default/p-worker-0")]
    # p with its task: 1/10. big without 1..6 tasks: 5/10 ... 0/10; one without its task: 0.
    found = on_n0(state)
    assert names(victim_tiers.drf(state, preemptor, found)) == [f"big-worker-{i}" for i in range(5)]


def test_proportion_takes_while_the_queue_is_above_deserved() -> None:
    """proportion.go reclaimableFn: !allocated.LessEqual(deserved), allocated counted down."""
    jobs = [running(f"l{i}", ["n0"], cpu="2", queue="light") for i in range(4)]
    jobs.append(gang("h", 3, cpu="2", queue="heavy"))  # light deserves 2 of 8
    state = session_state([make_node("n0", cpu="8").obj()], jobs, queues=LIGHT_HEAVY)
    reclaimer = state.tasks[PodKey("default/h-worker-0")]
    found = on_n0(state)
    assert names(victim_tiers.proportion(state, reclaimer, found)) == [
        "l0-worker-0",
        "l1-worker-0",
        "l2-worker-0",
    ]


def test_conformance_keeps_critical_and_kube_system_pods() -> None:
    """conformance.go evictableFn."""
    critical = make_pod("c-worker-0", group="c").spec(priorityClassName="system-node-critical")
    system = make_pod("s-worker-0", group="s", namespace="kube-system")
    state = session_state(
        [make_node("n0", cpu="64").obj()],
        [
            running("a", ["n0"]),
            (make_podgroup("c", phase="Running"), [critical.on("n0").obj()]),
            (make_podgroup("s", namespace="kube-system", phase="Running"), [system.on("n0").obj()]),
            gang("p", 1),
        ],
    )
    found = sorted((t for t in state.tasks.values() if t.node_name), key=lambda t: t.key)
    preemptor = state.tasks[PodKey("default/p-worker-0")]
    assert names(victim_tiers.conformance(state, preemptor, found)) == ["a-worker-0"]


def test_capacity_with_an_unusable_queue_tree_names_nobody() -> None:
    """capacity.go reclaimableFn: !readyToSchedule returns Reject with no victims."""
    config = SessionConfig(capacity=True, hierarchy=True)
    state = session_state(
        [make_node("n0", cpu="8").obj()],
        [running("l", ["n0"], queue="light"), gang("h", 1, queue="heavy")],
        config,
        queues=LIGHT_HEAVY,  # no root queue: the tree cannot be used
    )
    assert state.capacity is not None and state.capacity.broken is not None
    reclaimer = state.tasks[PodKey("default/h-worker-0")]
    assert victim_tiers.capacity(state, reclaimer, on_n0(state)) == []


def test_victims_for_asks_the_configured_tiers_over_real_functions() -> None:
    """A gang at minMember, at preempt. Default tiers: gang names nobody, so tier 1 ends and
    drf decides in tier 2 (the preemptor's job with its task, 1/2 of the cluster's CPU, is no
    larger than low's without one task, 1/2; without both, 0). Helm's tiers: gang is not
    asked, and priority with conformance let both go."""
    jobs = [
        running("low", ["n0"] * 2, priorityClassName="low"),
        gang("hi", 1, priorityClassName="high"),
    ]
    state = session_state([make_node("n0", cpu="2").obj()], jobs, priority_classes=PRIORITY_CLASSES)
    preemptor = state.tasks[PodKey("default/hi-worker-0")]
    found = on_n0(state)
    assert state.jobs[JobKey("default/low")].min_member == 2
    default = victim_tiers.victims_for(state, DEFAULT, P, preemptor, found)
    assert names(default) == ["low-worker-0"]
    assert names(victim_tiers.victims_for(state, HELM, P, preemptor, found)) == [
        "low-worker-0",
        "low-worker-1",
    ]
