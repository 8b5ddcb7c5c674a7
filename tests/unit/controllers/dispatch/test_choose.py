"""choose(): which worker cluster takes a job's gang, by weight and room, by value."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controllers.dispatch import choose
from models.dispatch import ClusterStatus, DispatchSettings, QueueThere
from models.keys import QueueName
from tests.builders import make_job

BIG = {"cpu": "16", "memory": "64Gi", "pods": "110"}


def _status(
    name: str, free: dict[str, str], allocatable: dict[str, str] = BIG, reachable: bool = True
) -> ClusterStatus:
    return ClusterStatus(
        name=name, reachable=reachable, allocatable=allocatable, free=free, nodes=1
    )


def _settings(**weights: int) -> DispatchSettings:
    return DispatchSettings(queue=QueueName("multi"), clusters=weights)


NEED = {"cpu": Fraction(4), "memory": Fraction(8 * 2**30), "pods": Fraction(2)}

CASES = [
    pytest.param(
        _settings(a=1, b=1),
        [
            _status("a", {"cpu": "8", "memory": "32Gi"}),
            _status("b", {"cpu": "12", "memory": "32Gi"}),
        ],
        {},
        "b",
        "",
        id="equal-weights-more-room-wins",
    ),
    pytest.param(
        _settings(a=3, b=1),
        [
            _status("a", {"cpu": "8", "memory": "32Gi"}),
            _status("b", {"cpu": "12", "memory": "32Gi"}),
        ],
        {},
        "a",
        "",
        id="weight-outweighs-room",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [
            _status("a", {"cpu": "8", "memory": "32Gi"}),
            _status("b", {"cpu": "8", "memory": "32Gi"}),
        ],
        {},
        "a",
        "",
        id="tie-broken-by-name",
    ),
    pytest.param(
        _settings(a=5, b=1),
        [
            _status("a", {"cpu": "2", "memory": "32Gi"}),
            _status("b", {"cpu": "8", "memory": "32Gi"}),
        ],
        {},
        "b",
        "",
        id="one-without-free-room-comes-after-one-with",
    ),
    pytest.param(
        _settings(a=1, b=2),
        [_status("a", {"cpu": "1", "memory": "1Gi"}), _status("b", {"cpu": "2", "memory": "1Gi"})],
        {},
        "b",
        "",
        id="none-free-queues-where-least-short-per-weight",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [
            _status("a", {"cpu": "8"}, allocatable={"cpu": "2", "memory": "4Gi"}),
            _status("b", {}, reachable=False),
        ],
        {},
        "",
        "NoClusterReachable",
        id="only-the-unreachable-one-could-hold-it",
    ),
    pytest.param(
        _settings(a=1),
        [_status("a", {"cpu": "1"}, allocatable={"cpu": "2", "memory": "64Gi"})],
        {},
        "",
        "NoClusterFits",
        id="none-could-ever-hold-it",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [
            _status("a", {"cpu": "8", "memory": "32Gi"}),
            _status("b", {"cpu": "16", "memory": "64Gi"}),
        ],
        {"b": "holds a stale copy of this job, deleted first"},
        "a",
        "",
        id="excluded-left-out",
    ),
    pytest.param(
        _settings(a=1, c=1),
        [_status("a", {"cpu": "8", "memory": "32Gi"})],
        {"a": "refused"},
        "",
        "NoClusterReachable",
        id="not-probed-and-refused",
    ),
    pytest.param(
        _settings(a=1),
        [_status("a", {"cpu": "8", "memory": "32Gi", "pods": "1"})],
        {},
        "a",
        "",
        id="too-few-pods-free-still-fits-allocatable",
    ),
]


@pytest.mark.parametrize(("settings", "statuses", "excluded", "cluster", "reason"), CASES)
def test_choose_picks_by_weight_and_room(
    settings: DispatchSettings,
    statuses: list[ClusterStatus],
    excluded: dict[str, str],
    cluster: str,
    reason: str,
) -> None:
    choice = choose.choose(settings, statuses, NEED, excluded)
    assert (choice.cluster, choice.reason) == (cluster, reason)
    if not cluster:
        assert "gang" in choice.message


def test_gang_sums_min_available_pods_requests() -> None:
    resources = {"requests": {"cpu": "2", "memory": "1Gi"}}
    container = {"name": "w", "image": "busybox", "resources": resources}
    template = {"spec": {"containers": [container]}}
    job = make_job("j").task("w", replicas=4, minAvailable=2, template=template).build()
    assert choose.gang(job) == {
        "cpu": Fraction(4),
        "memory": Fraction(2 * 2**30),
        "pods": Fraction(2),
    }


def test_quantity_that_does_not_parse_counts_as_none() -> None:
    status = _status("a", {"cpu": "lots", "memory": "32Gi"})
    choice = choose.choose(_settings(a=1), [status], NEED, {})
    assert choice.cluster == "a"  # fits allocatable, not free: queued there


# -- the job's queue there, and extendClusters capacity ------------------------------------------


def _there(
    name: str = "multi",
    state: str = "Open",
    capability: dict[str, str] | None = None,
    allocated: dict[str, str] | None = None,
    used: dict[str, str] | None = None,
    error: str = "",
) -> QueueThere:
    return QueueThere(
        asked="multi",
        name=name,
        state=state,
        capability=capability or {},
        allocated=allocated or {},
        used=used or {},
        error=error,
    )


def _queued(name: str, there: QueueThere, free: dict[str, str] = BIG) -> ClusterStatus:
    return _status(name, free).model_copy(update={"queue": there})


def _capped(capacity: dict[str, dict[str, str]], **weights: int) -> DispatchSettings:
    return _settings(**weights).model_copy(update={"capacity": capacity})


QUEUE_CASES = [
    pytest.param(
        _settings(a=1, b=1),
        [_queued("a", _there(state="Closed")), _queued("b", _there(), {"cpu": "6"})],
        "b",
        "",
        id="closed-queue-rules-the-cluster-out",
    ),
    pytest.param(
        _settings(a=1),
        [_queued("a", _there(state="Closing"))],
        "",
        "NoQueueOpen",
        id="closing-queue-only-cluster",
    ),
    pytest.param(
        _settings(a=1),
        [_queued("a", _there(name=""))],
        "",
        "NoQueueOpen",
        id="no-queue-nor-default-there",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [_queued("a", _there(name="default")), _queued("b", _there(), {"cpu": "6"})],
        "a",
        "",
        id="lands-in-default-when-its-own-is-missing",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [_queued("a", _there(state="")), _queued("b", _there(), {"cpu": "6"})],
        "a",
        "",
        id="no-state-yet-reads-open",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [
            _queued("a", _there(capability={"cpu": "0"})),
            _queued("b", _there(), {"cpu": "6", "memory": "32Gi"}),
        ],
        "b",
        "",
        id="queue-capped-to-zero-there-goes-elsewhere",
    ),
    pytest.param(
        _settings(a=1),
        [_queued("a", _there(capability={"cpu": "2"}))],
        "",
        "NoClusterFits",
        id="capability-below-the-gang-never-fits",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [
            _queued("a", _there(capability={"cpu": "8"}, allocated={"cpu": "6"})),
            _queued("b", _there(), {"cpu": "6", "memory": "32Gi"}),
        ],
        "b",
        "",
        id="capability-less-allocated-is-the-free-room",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [
            _queued("a", _there(capability={"nvidia.com/gpu": "0"})),
            _queued("b", _there(), {"cpu": "6", "memory": "32Gi"}),
        ],
        "a",
        "",
        id="capability-limits-only-what-it-names",
    ),
    pytest.param(
        _settings(a=1, b=1),
        [_queued("a", _there(error="forbidden")), _queued("b", _there(state="Closed"))],
        "",
        "NoClusterReachable",
        id="queue-unread-is-left-out-for-now",
    ),
    pytest.param(
        _capped({"a": {"cpu": "6"}}, a=1, b=1),
        [
            _queued("a", _there(used={"cpu": "3"})),
            _queued("b", _there(), {"cpu": "6", "memory": "32Gi"}),
        ],
        "b",
        "",
        id="capacity-less-the-queues-use-there",
    ),
    pytest.param(
        _capped({"a": {"cpu": "4"}}, a=1, b=1),
        [
            _queued("a", _there(used={"cpu": "3"})),
            _queued("b", _there(), {"cpu": "2", "memory": "32Gi"}),
        ],
        "b",
        "",
        id="both-full-least-short-per-weight-against-capacity",
    ),
    pytest.param(
        _capped({"a": {"cpu": "2"}}, a=1),
        [_queued("a", _there())],
        "",
        "NoClusterFits",
        id="capacity-below-the-gang-never-fits",
    ),
    pytest.param(
        _capped({"a": {"cpu": "64"}}, a=3, b=1),
        [_queued("a", _there(used={"cpu": "8"})), _queued("b", _there())],
        "a",
        "",
        id="capacity-above-the-cluster-changes-nothing",
    ),
    pytest.param(
        _capped({"a": {"cpu": "6"}}, a=1, b=1),
        [_status("a", BIG), _status("b", {"cpu": "12", "memory": "32Gi"})],
        "b",
        "",
        id="capacity-without-queue-figures-counts-no-use",
    ),
]


@pytest.mark.parametrize(("settings", "statuses", "cluster", "reason"), QUEUE_CASES)
def test_choose_weighs_the_queue_there_and_its_capacity(
    settings: DispatchSettings, statuses: list[ClusterStatus], cluster: str, reason: str
) -> None:
    choice = choose.choose(settings, statuses, NEED, {})
    assert (choice.cluster, choice.reason) == (cluster, reason)


def test_closed_queue_is_said_in_the_message() -> None:
    choice = choose.choose(_settings(a=1), [_queued("a", _there(state="Closed"))], NEED, {})
    assert choice.message == (
        "no worker cluster can take the gang (cpu 4, memory 8589934592, pods 2): "
        "a: queue multi there is Closed"
    )


def test_capacity_that_cannot_hold_the_gang_is_said_in_the_message() -> None:
    settings = _capped({"a": {"cpu": "2"}}, a=1)
    status = _queued("a", _there(capability={"memory": "1Ti"}))
    message = choose.choose(settings, [status], NEED, {}).message
    assert message.endswith(
        "a: extendClusters capacity {'cpu': '2'}, queue multi there is capped at "
        "{'memory': '1Ti'} cannot hold the gang"
    )


ROOM_CASES = [
    pytest.param(
        _status("a", {"cpu": "8", "memory": "32Gi"}),
        {},
        {"cpu": 16, "memory": 64 * 2**30, "pods": 110},
        {"cpu": 8, "memory": 32 * 2**30},
        id="cluster-only",
    ),
    pytest.param(
        _queued("a", _there(capability={"cpu": "10"}, allocated={"cpu": "7"}), {**BIG, "cpu": "8"}),
        {},
        {"cpu": 10, "memory": 64 * 2**30, "pods": 110},
        {"cpu": 3, "memory": 64 * 2**30, "pods": 110},
        id="queue-capability",
    ),
    pytest.param(
        _queued("a", _there(capability={"cpu": "10"}, allocated={"cpu": "12"})),
        {},
        {"cpu": 10, "memory": 64 * 2**30, "pods": 110},
        {"cpu": 0, "memory": 64 * 2**30, "pods": 110},
        id="over-capability-is-no-room-not-negative",
    ),
    pytest.param(
        _queued("a", _there(used={"cpu": "1", "pods": "3"})),
        {"cpu": "4", "pods": "5"},
        {"cpu": 4, "memory": 64 * 2**30, "pods": 5},
        {"cpu": 3, "memory": 64 * 2**30, "pods": 2},
        id="extend-capacity-less-use",
    ),
    pytest.param(
        ClusterStatus(name="a", reachable=True, allocatable={"cpu": "16"}, free={"cpu": "16"}),
        {"pods": "4"},
        {"cpu": 16, "pods": 4},
        {"cpu": 16, "pods": 4},
        id="pods-uncounted-by-the-probe-take-the-capacity",
    ),
]


@pytest.mark.parametrize(("status", "capacity", "total", "free"), ROOM_CASES)
def test_room_is_the_least_of_cluster_queue_and_capacity(
    status: ClusterStatus, capacity: dict[str, str], total: dict[str, int], free: dict[str, int]
) -> None:
    got = choose.room(status, capacity)
    assert (got.total, got.free) == (
        {k: Fraction(v) for k, v in total.items()},
        {k: Fraction(v) for k, v in free.items()},
    )


def _spread(settings: DispatchSettings, statuses: list[ClusterStatus], jobs: int) -> dict[str, int]:
    """Where `jobs` jobs that read the same probe go, each by its own draw."""
    counts: dict[str, int] = {}
    for i in range(jobs):
        chosen = choose.choose(settings, statuses, NEED, {}, choose.draw(f"uid-{i}", 1)).cluster
        counts[chosen] = counts.get(chosen, 0) + 1
    return counts


def test_a_burst_spreads_by_weight_instead_of_all_going_to_the_best() -> None:
    same = {"cpu": "12", "memory": "32Gi"}
    counts = _spread(_settings(a=2, b=1), [_status("a", same), _status("b", same)], 600)
    assert 360 <= counts["a"] <= 440 and counts["a"] + counts["b"] == 600  # about 2:1
    even = _spread(_settings(a=1, b=1), [_status("a", same), _status("b", same)], 600)
    assert 260 <= even["a"] <= 340  # about 1:1, where the best ranked sent all 600 to a


def test_the_draw_shares_by_room_and_never_picks_a_cluster_where_the_gang_waits() -> None:
    roomy, tight = {"cpu": "16", "memory": "64Gi"}, {"cpu": "6", "memory": "64Gi"}
    counts = _spread(_settings(a=1, b=1), [_status("a", roomy), _status("b", tight)], 600)
    # headroom after the gang: a 12/16, b 2/16 of its cpu: about 6 to 1
    assert counts["a"] > 4 * counts.get("b", 0) and counts.get("b", 0) > 0
    full = {"cpu": "2", "memory": "64Gi"}  # the gang waits on b: never drawn while a fits
    assert _spread(_settings(a=1, b=5), [_status("a", tight), _status("b", full)], 200) == {
        "a": 200
    }


def test_a_jobs_draw_is_its_own_and_the_same_on_every_replay() -> None:
    assert choose.draw("u", 1) == choose.draw("u", 1)
    assert choose.draw("u", 1) != choose.draw("u", 2)  # a move draws again
    assert all(0 <= choose.draw(f"u{i}", 1) < 1 for i in range(100))


def test_a_drained_cluster_takes_no_new_copy_and_the_message_says_why() -> None:
    drained = _status("a", BIG).model_copy(update={"drained": True})
    choice = choose.choose(_settings(a=5, b=1), [drained, _status("b", BIG)], NEED, {})
    assert choice.cluster == "b"
    alone = choose.choose(_settings(a=1), [drained], NEED, {})
    assert (alone.cluster, alone.reason) == ("", "NoClusterReachable")
    assert alone.message.endswith("a: drained (caldera.dev/drain on its Secret)")
