"""Weighted water-filling of deserved shares and the proportion callbacks (C7.6)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from models.keys import QueueName
from models.scheduling import QueueState
from scheduling.api.vectors import EMPTY, Resources
from scheduling.plugins import proportion
from scheduling.plugins.proportion import QueueDemand
from tests.unit.scheduling.builders import gang, make_node, make_pod, make_queue, snapshot


def cpu(cores: Fraction | int) -> Resources:
    return Resources.of(Fraction(cores) * 1000)


def demand(name: str, weight: int = 1, request: int = 0, **fields: object) -> QueueDemand:
    return QueueDemand.model_validate(
        {"name": QueueName(name), "weight": weight, "request": cpu(request), **fields}
    )


WATER_FILL = [
    pytest.param(
        [demand("a", 1, 8), demand("b", 1, 2), demand("c", 2, 10)],
        EMPTY,
        {"a": Fraction(8, 3), "b": 2, "c": Fraction(16, 3)},
        id="spec-worked-example",
    ),
    pytest.param(
        [demand("a", 1, 100), demand("b", 3, 100)],
        EMPTY,
        {"a": Fraction(5, 2), "b": Fraction(15, 2)},
        id="weights-1-3-under-contention",
    ),
    pytest.param(
        [demand("a", 1, 3), demand("b", 1, 3)],
        EMPTY,
        {"a": 3, "b": 3},
        id="everyone-satisfied",
    ),
    pytest.param(
        [demand("a", 1, 10, guarantee=cpu(7)), demand("b", 1, 10)],
        cpu(7),
        {"a": 7, "b": 3},
        id="guarantee-reserved",
    ),
    pytest.param(
        [demand("a", 1, 10, capability=cpu(2)), demand("b", 1, 10)],
        EMPTY,
        {"a": 2, "b": 8},
        id="capability-caps-and-rest-flows-on",
    ),
    pytest.param(
        [demand("a", 1, 10, capability=Resources.of(0, 2**30)), demand("b", 1, 10)],
        EMPTY,
        {"a": 5, "b": 5},
        id="zero-cpu-capability-is-unlimited",
    ),
    pytest.param([demand("a", 1, 0)], EMPTY, {"a": 0}, id="nothing-requested"),
]


@pytest.mark.parametrize(("demands", "guaranteed", "expected"), WATER_FILL)
def test_water_fill(
    demands: list[QueueDemand], guaranteed: Resources, expected: dict[str, Fraction]
) -> None:
    deserved = proportion.water_fill(cpu(10), demands, guaranteed)
    assert {name: r.milli_cpu / 1000 for name, r in deserved.items()} == expected


def test_worked_example_share_makes_a_overused() -> None:
    deserved = proportion.water_fill(
        cpu(10), [demand("a", 1, 8), demand("b", 1, 2), demand("c", 2, 10)]
    )
    assert proportion.queue_share(cpu(4), deserved[QueueName("a")]) == Fraction(3, 2)
    assert proportion.overused(cpu(4), deserved[QueueName("a")])
    assert not proportion.overused(cpu(5), deserved[QueueName("c")])


@pytest.mark.parametrize(
    ("state", "allocated", "wanted", "expected"),
    [
        pytest.param(QueueState.OPEN, 3, 1, True, id="fits-deserved"),
        pytest.param(QueueState.OPEN, 4, 1, False, id="beyond-deserved"),
        pytest.param(QueueState.CLOSED, 0, 1, False, id="closed-queue"),
    ],
)
def test_allocatable(state: QueueState, allocated: int, wanted: int, expected: bool) -> None:
    assert proportion.allocatable(state, cpu(allocated), cpu(4), cpu(wanted)) is expected


def test_allocatable_checks_only_the_task_dimensions() -> None:
    memory_only = Resources.of(0, 2**30)
    assert proportion.allocatable(QueueState.OPEN, cpu(9), cpu(4), memory_only) is False
    assert proportion.allocatable(QueueState.OPEN, cpu(9), cpu(4).add(memory_only), memory_only)


@pytest.mark.parametrize(
    ("fields", "inqueue", "min_request", "expected"),
    [
        pytest.param({}, 0, 10, True, id="whole-cluster"),
        pytest.param({}, 0, 11, False, id="beyond-real-capability"),
        pytest.param({"allocated": cpu(4)}, 4, 3, False, id="allocated-and-reserved-count"),
        pytest.param({"allocated": cpu(4), "elastic": cpu(2)}, 4, 4, True, id="elastic-lendable"),
    ],
)
def test_enqueueable(
    fields: dict[str, object], inqueue: int, min_request: int, expected: bool
) -> None:
    queue = demand("a", 1, 10, **fields)
    real = proportion.real_capability(cpu(10), EMPTY, queue)
    verdict = proportion.enqueueable(QueueState.OPEN, queue, cpu(inqueue), real, cpu(min_request))
    assert verdict is expected


def test_enqueueable_rejects_a_closed_queue() -> None:
    queue = demand("a", 1, 10)
    assert not proportion.enqueueable(QueueState.CLOSED, queue, EMPTY, cpu(10), cpu(1))


def test_demands_from_snapshot() -> None:
    running = [make_pod(f"a-run-{i}", group="a", cpu="2").on("n1").obj() for i in range(2)]
    group, pending = gang("a", 1, cpu="1", minResources={"cpu": "3"})
    group["status"]["phase"] = "Running"
    snap = snapshot(
        [make_node("n1", cpu="8").obj()],
        gangs=[(group, running + pending), gang("b", 1, queue="idle", minResources={"cpu": "1"})],
        queues=[make_queue("default", weight=2), make_queue("idle"), make_queue("empty")],
    )
    found = {d.name: d for d in proportion.demands(snap)}
    assert sorted(found) == ["default", "idle"]
    queue = found[QueueName("default")]
    assert queue.weight == 2
    assert queue.allocated.milli_cpu == 4000
    assert queue.request.milli_cpu == 5000
    assert queue.elastic.milli_cpu == 1000
    assert queue.inqueue == EMPTY  # running with min met: min 3 cpu is already exceeded
    assert found[QueueName("idle")].inqueue.milli_cpu == 1000  # Inqueue: its minResources


def test_deserved_of_snapshot_uses_all_nodes() -> None:
    snap = snapshot(
        [make_node("n1", cpu="2").obj(), make_node("n2", cpu="2").obj()],
        gangs=[gang("a", 8, queue="q1"), gang("b", 8, queue="q3")],
        queues=[make_queue("q1", weight=1), make_queue("q3", weight=3)],
    )
    deserved = proportion.deserved_of(snap)
    assert deserved[QueueName("q1")].milli_cpu == 1000
    assert deserved[QueueName("q3")].milli_cpu == 3000
