"""The capacity plugin: queues' own deserved, real capability and guarantee, flat or a tree."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

import pytest

from models.keys import QueueName
from models.scheduling import QueueState
from scheduling.actions.registry import run_session
from scheduling.api.result import EvictReason, SessionResult
from scheduling.api.snapshot import Snapshot
from scheduling.api.vectors import EMPTY, Resources
from scheduling.framework.session_config import SessionConfig
from scheduling.plugins import capacity, proportion, queuerank
from scheduling.plugins.capacity import Capacity, QueueAttr
from tests.unit.scheduling.builders import (
    gang,
    make_nodes,
    make_pod,
    make_podgroup,
    make_queue,
    running,
    session_state,
    snapshot,
)

Obj = dict[str, Any]
FLAT = SessionConfig(capacity=True)
TREE = SessionConfig(capacity=True, hierarchy=True)
GI = 2**30


def cpu(cores: Fraction | int, memory_gi: int = 0) -> Resources:
    return Resources.of(Fraction(cores) * 1000, memory_gi * GI)


def cores(resources: Resources) -> Fraction | int:
    return Fraction(resources.milli_cpu) / 1000


def attrs(snap: Snapshot, hierarchy: bool = False) -> dict[QueueName, QueueAttr]:
    built = capacity.build(snap, proportion.demands(snap), hierarchy)
    assert built.broken is None
    return built.attrs


def one_job_each(*queues: str) -> list[tuple[Obj, list[Obj]]]:
    return [gang(f"{q}-job", 1, queue=q) for q in queues]


def placed_by_queue(result: SessionResult) -> Counter[str]:
    return Counter(p.job.split("/")[1].rstrip("0123456789") for p in result.placements)


# --- the attributes each queue gets when the session opens ------------------------------------

FLAT_ATTRS = [
    pytest.param(
        {"a": {"deserved": {"cpu": "4"}}, "b": {"deserved": {"cpu": "4"}}},
        {"a": (4, 8), "b": (4, 8)},
        id="deserved-as-given",
    ),
    pytest.param(
        {"a": {"deserved": {"cpu": "10"}, "capability": {"cpu": "6"}}, "b": {}},
        {"a": (6, 6), "b": (0, 8)},
        id="deserved-capped-by-capability",
    ),
    pytest.param(
        {"a": {"guarantee": {"resource": {"cpu": "2"}}}, "b": {"deserved": {"cpu": "7"}}},
        {"a": (2, 8), "b": (6, 6)},
        id="guarantee-raises-deserved-and-is-reserved-from-others",
    ),
    pytest.param(
        {"a": {"capability": {"memory": "4Gi"}}, "b": {}},
        {"a": (0, 8), "b": (0, 8)},
        id="unset-cpu-capability-is-unlimited",
    ),
]


@pytest.mark.parametrize(("specs", "expected"), FLAT_ATTRS)
def test_flat_attributes(specs: dict[str, Obj], expected: dict[str, tuple[int, int]]) -> None:
    """(deserved, real capability) in cpu on an 8-cpu cluster, each queue with one job."""
    queues = [make_queue(name, **spec) for name, spec in specs.items()]
    found = attrs(snapshot(make_nodes(2, cpu="4"), gangs=one_job_each(*specs), queues=queues))
    got = {str(n): (cores(a.deserved), cores(a.real_capability)) for n, a in found.items()}
    assert got == expected


def test_flat_queue_without_jobs_gets_no_attributes_but_its_guarantee_counts() -> None:
    queues = [make_queue("a"), make_queue("idle", guarantee={"resource": {"cpu": "3"}})]
    found = attrs(snapshot(make_nodes(2, cpu="4"), gangs=one_job_each("a"), queues=queues))
    assert list(found) == ["a"] and cores(found[QueueName("a")].real_capability) == 5


# The tree of the task: root -> org (capability 6) -> x, y (capability 5 each), z under root.
def tree_queues(**org: Any) -> list[Obj]:
    return [
        make_queue("root"),
        make_queue("org", capability={"cpu": "6"}, **org),
        make_queue("x", parent="org", capability={"cpu": "5"}, deserved={"cpu": "3"}),
        make_queue("y", parent="org", capability={"cpu": "5"}, deserved={"cpu": "2"}),
        make_queue("z", parent="root", deserved={"cpu": "1"}),
    ]


def test_tree_children_are_bounded_by_their_parent() -> None:
    found = attrs(
        snapshot(make_nodes(3, cpu="4"), gangs=one_job_each("x", "y", "z"), queues=tree_queues()),
        True,
    )
    real = {n: cores(a.real_capability) for n, a in found.items() if n != "root"}
    assert real == {"org": 6, "x": 5, "y": 5, "z": Fraction(capacity.UNBOUNDED, 1000)}
    assert cores(found[QueueName("root")].deserved) == 1  # org names none: 0 + z's 1
    assert found[QueueName("x")].ancestors == ("root", "org")
    assert found[QueueName("org")].subtree == ("org", "x", "y") and not found[QueueName("org")].leaf


def test_tree_guarantees_are_carved_out_of_the_parent() -> None:
    queues = [
        make_queue("root", capability={"cpu": "12", "memory": "64Gi"}),
        make_queue("org", capability={"cpu": "6"}),
        make_queue("x", parent="org", guarantee={"resource": {"cpu": "1"}}),
        make_queue("y", parent="org", guarantee={"resource": {"cpu": "2"}}),
    ]
    found = attrs(
        snapshot(make_nodes(3, cpu="4"), gangs=one_job_each("x", "y"), queues=queues), True
    )
    # x: min(6 - 3 + 1, 6 inherited) = 4; y: 6 - 3 + 2 = 5; deserved raised to the guarantee.
    got = {str(n): (cores(a.deserved), cores(a.real_capability)) for n, a in found.items()}
    assert got["x"] == (1, 4) and got["y"] == (2, 5)
    assert found[QueueName("x")].real_capability.memory == 64 * GI  # inherited from root


BROKEN = [
    pytest.param([make_queue("a")], "a", "queue root is missing", id="no-root"),
    pytest.param(
        [make_queue("root"), make_queue("a", parent="ghost")],
        "a",
        "queue a has invalid parent queue ghost",
        id="unknown-parent",
    ),
    pytest.param(
        [make_queue("root"), make_queue("a", parent="b"), make_queue("b", parent="a")],
        "a",
        "cycle detected in queue hierarchy for queue a",
        id="cycle",
    ),
    pytest.param(
        [make_queue("root"), make_queue("org"), make_queue("x", parent="org")],
        "org",
        "queue org of job default/org-job is not a leaf queue",
        id="job-in-a-parent-queue",
    ),
]


@pytest.mark.parametrize(("queues", "job_queue", "why"), BROKEN)
def test_unusable_trees(queues: list[Obj], job_queue: str, why: str) -> None:
    snap = snapshot(make_nodes(1, cpu="4"), gangs=one_job_each(job_queue), queues=queues)
    assert capacity.build(snap, proportion.demands(snap), True).broken == why


# --- the votes ------------------------------------------------------------------------------


def flat(**fields: Any) -> Capacity:
    """One queue `a` with these attributes (deserved 4, real capability 6 unless given)."""
    attr = {"name": QueueName("a"), "deserved": cpu(4), "real_capability": cpu(6), **fields}
    return Capacity(attrs={QueueName("a"): QueueAttr.model_validate(attr)})


A = QueueName("a")
OPEN = QueueState.OPEN


@pytest.mark.parametrize(
    ("held", "wanted", "state", "expected"),
    [
        pytest.param(3, 1, OPEN, True, id="within-deserved"),
        pytest.param(4, 2, OPEN, True, id="beyond-deserved-within-real-capability"),
        pytest.param(5, 2, OPEN, False, id="beyond-real-capability"),
        pytest.param(0, 1, QueueState.CLOSED, False, id="closed"),
    ],
)
def test_allocatable(held: int, wanted: int, state: QueueState, expected: bool) -> None:
    assert capacity.allocatable(flat(), state, {A: cpu(held)}, A, cpu(wanted)) is expected


@pytest.mark.parametrize(
    ("held", "wanted", "expected"),
    [
        pytest.param(2, 2, True, id="ends-at-deserved"),
        pytest.param(3, 2, False, id="would-pass-deserved"),
        pytest.param(Fraction(1, 2), Resources.of(1000, GI), True, id="one-dimension-within"),
    ],
)
def test_preemptive(held: Fraction | int, wanted: Resources | int, expected: bool) -> None:
    request = wanted if isinstance(wanted, Resources) else cpu(wanted)
    quota = flat(real_capability=cpu(6, 8))
    assert capacity.preemptive(quota, OPEN, {A: cpu(held)}, A, request) is expected


def test_preemptive_needs_a_deserved_share() -> None:
    assert not capacity.preemptive(flat(deserved=EMPTY), OPEN, {A: EMPTY}, A, cpu(1))


def one_cpu_task(key: str = "default/v", memory_gi: int = 0) -> Any:
    return make_pod(key.split("/")[1], cpu="1").request(memory=f"{memory_gi}Gi").info()


GIVES_UP = [
    pytest.param({}, cpu(6), 2, True, id="above-deserved-down-to-it"),
    pytest.param({}, cpu(5), 2, False, id="second-would-take-it-below-deserved"),
    pytest.param({}, cpu(4), 1, False, id="at-deserved"),
    pytest.param(
        {"deserved": cpu(2, 4), "guarantee": cpu(2, 4)},
        cpu(4, 2),
        1,
        False,
        id="guarantee-kept-whole",
    ),
    pytest.param(
        {"deserved": Resources.of(0, 8 * GI)}, cpu(2, 1), 2, True, id="deserves-none-of-its-dims"
    ),
]


@pytest.mark.parametrize(("fields", "held", "count", "expected"), GIVES_UP)
def test_gives_up(fields: Obj, held: Resources, count: int, expected: bool) -> None:
    victims = [one_cpu_task(f"default/v{i}") for i in range(count)]
    reclaimer = one_cpu_task("default/r")
    assert capacity.gives_up(flat(**fields), held, A, victims, reclaimer) is expected


def test_gives_up_only_tasks_sharing_a_dimension_with_the_reclaimer() -> None:
    gpu = make_pod("r", cpu="").request(**{"nvidia.com/gpu": "1"}).info()
    assert not capacity.gives_up(flat(), cpu(8), A, [one_cpu_task()], gpu)


@pytest.mark.parametrize(
    ("held", "deserved", "expected"),
    [
        pytest.param(cpu(2), cpu(4), Fraction(1, 2), id="cpu-only-deserved"),
        pytest.param(cpu(2, 8), cpu(4), Fraction(1, 2), id="undeserved-memory-ignored"),
        pytest.param(cpu(9), EMPTY, Fraction(1), id="best-effort-queue"),
    ],
)
def test_queue_share(held: Resources, deserved: Resources, expected: Fraction) -> None:
    assert queuerank.queue_share(held, deserved) == expected


def test_tree_order_compares_the_subtrees_under_the_common_ancestor() -> None:
    jobs = one_job_each("x", "y", "z")
    state = session_state(make_nodes(3, cpu="4"), jobs, TREE, queues=tree_queues())
    state.queue_allocated.update({QueueName("x"): cpu(1), QueueName("z"): cpu(1)})
    assert state.capacity is not None
    books = state.queue_allocated
    rank = {q: queuerank.rank(state.capacity, books, QueueName(q)) for q in ("x", "y", "z", "org")}
    assert rank["y"] < rank["x"]  # siblings: 0/2 before 1/3
    # x and z meet at root: org (1 held, deserves nothing: share 1, best effort) against z
    # (1/1 = 1, deserved): equal shares, the queue with a deserved share first.
    assert rank["z"] < rank["x"] and rank["z"] < rank["y"]
    assert rank["x"] < rank["org"]  # leaves before parents


# --- whole sessions ----------------------------------------------------------------------------

TWO_QUEUES = [make_queue("a", deserved={"cpu": "4"}), make_queue("b", deserved={"cpu": "4"})]


def test_idle_neighbours_room_is_borrowed_up_to_capability() -> None:
    queues = [make_queue("a", deserved={"cpu": "4"}, capability={"cpu": "6"}), TWO_QUEUES[1]]
    jobs = [gang(f"a{i}", 1, queue="a") for i in range(8)]
    result = run_session(snapshot(make_nodes(2, cpu="4"), gangs=jobs, queues=queues), FLAT)
    assert placed_by_queue(result) == {"a": 6}
    assert set(result.why_not.values()) == {
        "1/1 tasks in gang unschedulable: queue a would exceed its real capability"
    }


def test_the_borrowed_room_is_reclaimed_down_to_deserved_when_the_owner_comes() -> None:
    jobs = [running(f"a{i}", [f"n{i % 2}"], queue="a") for i in range(8)]
    jobs += [gang("b", 4, queue="b")]
    result = run_session(snapshot(make_nodes(2, cpu="4"), gangs=jobs, queues=TWO_QUEUES), FLAT)
    assert Counter(e.job.split("/")[1][0] for e in result.evictions) == {"a": 4}
    assert {e.reason for e in result.evictions} == {EvictReason.RECLAIM}
    assert {e.preemptor.split("/")[1] for e in result.evictions} == {
        f"b-worker-{i}" for i in range(4)
    }


def test_deserved_not_weight_shares_a_full_cluster() -> None:
    queues = [make_queue("a", deserved={"cpu": "2"}), make_queue("b", deserved={"cpu": "6"})]
    jobs = [gang(f"{q}{i}", 1, queue=q) for q in "ab" for i in range(8)]
    snap = snapshot(make_nodes(2, cpu="4"), gangs=jobs, queues=queues)
    assert placed_by_queue(run_session(snap, FLAT)) == {"a": 2, "b": 6}
    assert placed_by_queue(run_session(snap)) == {"a": 4, "b": 4}  # proportion: equal weights


def test_guarantee_is_reserved_while_its_queue_is_idle() -> None:
    queues = [
        make_queue("a", deserved={"cpu": "8"}),
        make_queue("g", guarantee={"resource": {"cpu": "3"}}),
    ]
    jobs = [gang(f"a{i}", 1, queue="a") for i in range(8)]
    big = make_podgroup("big", queue="a", phase="Pending", minResources={"cpu": "6"})
    result = run_session(
        snapshot(make_nodes(2, cpu="4"), gangs=[*jobs, (big, [])], queues=queues), FLAT
    )
    assert placed_by_queue(result) == {"a": 5}
    assert result.why_not["default/big"] == "queue resource quota insufficient: queue a"


def test_tree_parent_capability_caps_its_children_together() -> None:
    jobs = [gang(f"{q}{i}", 1, queue=q) for q in "xy" for i in range(5)]
    result = run_session(snapshot(make_nodes(3, cpu="4"), gangs=jobs, queues=tree_queues()), TREE)
    # Served by share (x deserves 3, y 2) until org's 6 cpu are taken: 3/3 + 2/2, then 4/3.
    assert placed_by_queue(result) == {"x": 4, "y": 2}
    assert set(result.why_not.values()) == {
        f"1/1 tasks in gang unschedulable: queue {q} would exceed the real capability of its "
        "ancestor queue org"
        for q in "xy"
    }


def test_tree_enqueue_checks_every_ancestor() -> None:
    group = make_podgroup("wide", queue="x", phase="Pending", minResources={"cpu": "5"})
    held = [running(f"y{i}", ["n0"], queue="y", minResources={"cpu": "1"}) for i in range(2)]
    result = run_session(
        snapshot(make_nodes(3, cpu="4"), gangs=[*held, (group, [])], queues=tree_queues()), TREE
    )
    # x alone could (5 <= 5), but org would hold 2 + 5 > 6 (y's pods are no elastic room).
    assert result.why_not["default/wide"] == "queue resource quota insufficient: queue x"


def test_a_job_in_a_parent_queue_stops_the_tree() -> None:
    jobs = [gang("stray", 1, queue="org"), gang("fine", 1, queue="z")]
    result = run_session(snapshot(make_nodes(3, cpu="4"), gangs=jobs, queues=tree_queues()), TREE)
    assert result.placements == ()
    why = "queue hierarchy is not usable: queue org of job default/stray is not a leaf queue"
    assert set(result.why_not.values()) == {f"1/1 tasks in gang unschedulable: {why}"}


def test_without_the_hierarchy_parents_bound_nothing() -> None:
    jobs = [gang(f"{q}{i}", 1, queue=q) for q in "xy" for i in range(5)]
    result = run_session(snapshot(make_nodes(3, cpu="4"), gangs=jobs, queues=tree_queues()), FLAT)
    assert placed_by_queue(result) == {"x": 5, "y": 5}


def test_an_unusable_tree_admits_nothing() -> None:
    waiting = make_podgroup("later", queue="z", phase="Pending")  # no minResources
    jobs = [gang("stray", 1, queue="org"), (waiting, [])]
    result = run_session(snapshot(make_nodes(3, cpu="4"), gangs=jobs, queues=tree_queues()), TREE)
    assert result.phase_updates == ()
    assert result.why_not["default/later"] == (
        "queue hierarchy is not usable: queue org of job default/stray is not a leaf queue"
    )


def test_a_queue_deserving_nothing_gets_what_the_deserving_leave() -> None:
    queues = [make_queue("a", deserved={"cpu": "4"}), make_queue("be")]
    jobs = [gang(f"{q}{i}", 1, queue=q) for q in ("a", "be") for i in range(8)]
    result = run_session(snapshot(make_nodes(2, cpu="4"), gangs=jobs, queues=queues), FLAT)
    # a first up to its 4; at share 1 it ties with be's constant 1 and, deserving, wins: a
    # fifth; above 1 it comes after be, which takes the rest.
    assert placed_by_queue(result) == {"a": 5, "be": 3}
