"""choose(): which worker cluster takes a job's gang, by weight and room, by value."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controllers.dispatch import choose
from models.dispatch import ClusterStatus, DispatchSettings
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
