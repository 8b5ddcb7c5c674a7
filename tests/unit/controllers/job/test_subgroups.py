"""The PodGroup's subGroupPolicy as Volcano's job controller writes it (setPgSubGroupPolicy,
getSubGroupPolicy) and rewrites it (updatePgSubGroupPolicy)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job import podspec, subgroups
from models.vcjob import Job
from tests.builders import make_job

pytestmark = pytest.mark.unit


def _partitions(total: int, size: int, **extra: Any) -> dict[str, Any]:
    return {"partitionPolicy": {"totalPartitions": total, "partitionSize": size, **extra}}


def _job() -> Job:
    """ps: 2 partitions of 1 (minPartitions unset); x: no partitions; w: 3 of 2, 2 needed,
    each within tier 1."""
    return (
        make_job("j")
        .task("ps", 2, **_partitions(2, 1))
        .task("x", 1)
        .task(
            "w",
            6,
            **_partitions(3, 2, minPartitions=2, networkTopology={"highestTierAllowed": 1}),
        )
        .build()
    )


def _dumped(job: Job) -> list[dict[str, Any]]:
    return [p.dump() for p in subgroups.sub_group_policy(job)]


def test_one_policy_per_partitioned_task_in_task_order() -> None:
    assert _dumped(_job()) == [
        {
            "name": "ps",
            "subGroupSize": 1,
            "minSubGroups": 0,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "ps"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
        },
        {
            "name": "w",
            "subGroupSize": 2,
            "minSubGroups": 2,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "w"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        },
    ]


def test_a_job_without_partitions_has_no_policy() -> None:
    assert subgroups.sub_group_policy(make_job("j").task("a", 2).task("b", 1).build()) == []


@pytest.mark.parametrize(
    ("topology", "copied"),
    [
        pytest.param(
            {"mode": "soft", "highestTierName": "rack"},
            {"mode": "soft", "highestTierName": "rack"},
            id="name-and-mode",
        ),
        pytest.param(
            {"highestTierAllowed": 2}, {"mode": "hard", "highestTierAllowed": 2}, id="hard"
        ),
        pytest.param(
            {"highestTierAllowed": 2, "highestTierName": ""},
            {"mode": "hard", "highestTierAllowed": 2},
            id="empty-name-is-unset",
        ),
    ],
)
def test_the_partitions_network_topology_is_copied(
    topology: dict[str, Any], copied: dict[str, Any]
) -> None:
    job = make_job("j").task("w", 2, **_partitions(2, 1, networkTopology=topology)).build()
    (policy,) = _dumped(job)
    assert policy["networkTopology"] == copied


def test_the_policy_selects_the_pods_partitions_as_labelled() -> None:
    """Pod ix is in partition ix // partitionSize, the key the policy groups by."""
    job = _job()
    (_, policy) = subgroups.sub_group_policy(job)
    assert policy.label_selector is not None and policy.match_label_keys is not None
    (key,) = policy.match_label_keys
    partition_of = {}
    for index in range(6):
        labels = podspec.build_pod(job, "w", index, 0, 0)["metadata"]["labels"]
        assert policy.label_selector.match_labels is not None
        assert policy.label_selector.match_labels.items() <= labels.items()
        partition_of[index] = labels[key]
    assert partition_of == {0: "0", 1: "0", 2: "1", 3: "1", 4: "2", 5: "2"}


def test_stored_policies_that_match_stand() -> None:
    job = _job()
    assert subgroups.updated_sub_group_policy(job, _dumped(job)) is None


def test_their_order_and_an_entry_named_for_no_task_are_left_as_found() -> None:
    job = _job()
    stored = [*reversed(_dumped(job)), {"name": "someone-elses", "subGroupSize": 3}]
    assert subgroups.updated_sub_group_policy(job, stored) is None


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param(None, id="none-stored"),
        pytest.param([], id="empty"),
        pytest.param("first-differs", id="differs"),
        pytest.param("first-missing", id="one-missing"),
        pytest.param("not-a-policy", id="unreadable"),
    ],
)
def test_a_differing_policy_rewrites_them_all_in_task_order(stored: Any) -> None:
    job = _job()
    wanted = _dumped(job)
    if stored == "first-differs":
        stored = [{**wanted[0], "subGroupSize": 5}, wanted[1]]
    elif stored == "first-missing":
        stored = [wanted[1]]
    elif stored == "not-a-policy":
        stored = [{**wanted[0], "subGroupSize": "many"}, wanted[1]]
    updated = subgroups.updated_sub_group_policy(job, stored)
    assert updated is not None and [p.dump() for p in updated] == wanted


def test_a_task_without_partitions_that_still_has_a_policy_clears_it() -> None:
    """updatePgSubGroupPolicy: the task's old entry goes; with no partitioned task left, the
    list is empty."""
    job = make_job("j").task("ps", 2).task("x", 1).build()
    stored = _dumped(_job())
    assert subgroups.updated_sub_group_policy(job, stored) == []
    assert subgroups.updated_sub_group_policy(job, None) is None
    assert subgroups.updated_sub_group_policy(job, []) is None
