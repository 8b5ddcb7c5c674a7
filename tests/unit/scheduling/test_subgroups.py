"""Sub-groups (a PodGroup's subGroupPolicy, a Job's partitionPolicy): each partition is a gang
of its own, kept within its own network tier, and the job is ready only with minSubGroups
whole partitions (Volcano's SubJobInfo, allocate's allocateForSubJob, gang's
CheckSubJobReady / CheckSubJobValid)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from models.keys import job_key
from models.scheduling import SubGroupPolicySpec
from scheduling.api.subgroups import DEFAULT, group_of, rules
from tests.unit.scheduling.builders import gang, running
from tests.unit.scheduling.test_topology import placed, rack_of, session

Obj = dict[str, Any]
TASK, PARTITION = "volcano.sh/task-spec", "volcano.sh/partition-id"


def partitioned(
    name: str,
    partitions: int,
    size: int,
    min_partitions: int,
    tier: int | None = 1,
    cpu: str = "6",
) -> tuple[Obj, list[Obj]]:
    """A job's PodGroup as Volcano's job controller writes it for one task `worker` with a
    partitionPolicy, and its pods labelled as the controller labels them."""
    policy: Obj = {
        "name": "worker",
        "subGroupSize": size,
        "minSubGroups": min_partitions,
        "labelSelector": {"matchLabels": {TASK: "worker"}},
        "matchLabelKeys": [PARTITION],
    }
    if tier is not None:
        policy["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
    group, pods = gang(
        name,
        partitions * size,
        cpu=cpu,
        min_member=min_partitions * size,
        subGroupPolicy=[policy],
    )
    for i, pod in enumerate(pods):
        pod["metadata"]["labels"] = {TASK: "worker", PARTITION: str(i // size)}
    return group, pods


def partition_of(pod: str, size: int) -> int:
    return int(pod.rsplit("-", 1)[1]) // size


def racks_by_partition(result_nodes: dict[str, str], size: int) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for pod, node in result_nodes.items():
        if pod.startswith("a-"):
            out.setdefault(partition_of(pod, size), set()).add(rack_of(node))
    return out


def test_each_partition_is_kept_within_a_rack_of_its_own() -> None:
    """One pod per node (6 of 8 CPUs), n1 busy: a rack holds one partition of 2, never the
    gang of 4, and the first partition must skip the rack with one free node. As one gang
    with tier 1 the job could not be placed at all."""
    busy = running("busy", ["n1"], cpu="6")
    result = session([busy, partitioned("a", partitions=2, size=2, min_partitions=2)])
    by_partition = racks_by_partition(placed(result), 2)
    assert by_partition == {0: {"s1"}, 1: {"s2"}}
    whole = session([busy, gang("b", 4, cpu="6", networkTopology={"highestTierAllowed": 1})])
    assert not [p for p in placed(whole) if p.startswith("b-")]


def test_partitions_stay_within_the_jobs_own_tier_too() -> None:
    """The job within one spine (tier 2), each partition within one rack: with n1 busy the
    racks with room for a partition are s1 (spine t0) and s2 (spine t1), so it waits."""
    busy = running("busy", ["n1"], cpu="6")
    group, pods = partitioned("a", partitions=2, size=2, min_partitions=2)
    group["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
    result = session([busy, (group, pods)])
    assert racks_by_partition(placed(result), 2) == {}
    assert "no HyperNode of tier 2 or lower" in result.why_not[job_key("default", "a")]


def test_a_job_needs_whole_partitions_not_only_min_member_pods() -> None:
    """Four nodes are free, one in each of two racks and the whole third rack: four pods fit,
    but only one partition of 2 fits within one rack, and the job needs two."""
    busy = running("busy", ["n0", "n2"], cpu="6")
    result = session([busy, partitioned("a", partitions=3, size=2, min_partitions=2)])
    assert not {p for p in placed(result) if p.startswith("a-")}
    spread = session([busy, partitioned("a", partitions=3, size=2, min_partitions=2, tier=None)])
    assert len({p for p in placed(spread) if p.startswith("a-")}) == 4


def test_partitions_beyond_the_minimum_are_placed_whole_or_not_at_all() -> None:
    """Three partitions of 2, two needed, no tier: five free nodes take two whole partitions
    and leave the third's two pods waiting rather than place one of them."""
    busy = running("busy", ["n5"], cpu="6")
    result = session([busy, partitioned("a", partitions=3, size=2, min_partitions=2, tier=None)])
    ours = [p for p in placed(result) if p.startswith("a-")]
    assert len(ours) == 4
    assert set(Counter(partition_of(p, 2) for p in ours).values()) == {2}


def test_the_job_is_ready_with_its_minimum_and_adds_whole_partitions_after() -> None:
    """Minimum 1 partition of 2 within a rack, n1 busy: the two whole racks take a partition
    each; the third partition does not fit whole in a rack and is not placed in part."""
    busy = running("busy", ["n1"], cpu="6")
    result = session([busy, partitioned("a", partitions=3, size=2, min_partitions=1)])
    assert sorted(map(sorted, racks_by_partition(placed(result), 2).values())) == [["s1"], ["s2"]]


def test_a_job_with_fewer_partitions_than_its_minimum_is_invalid() -> None:
    group, pods = partitioned("a", partitions=2, size=2, min_partitions=2, tier=None)
    group["spec"]["subGroupPolicy"][0]["minSubGroups"] = 3
    group["spec"]["minMember"] = 4
    result = session([(group, pods)])
    assert placed(result) == {}
    assert "Not enough valid subGroups" in result.why_not[job_key("default", "a")]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param({TASK: "worker", PARTITION: "1"}, ("worker", ("1",)), id="selected"),
        pytest.param({TASK: "ps", PARTITION: "1"}, DEFAULT, id="other-task"),
        pytest.param({TASK: "worker"}, DEFAULT, id="no-partition-label"),
        pytest.param({TASK: "worker", PARTITION: ""}, DEFAULT, id="empty-partition-label"),
    ],
)
def test_a_pod_is_in_the_first_policy_that_selects_it_and_gives_every_key_a_value(
    labels: dict[str, str], expected: tuple[str, tuple[str, ...]]
) -> None:
    policy = SubGroupPolicySpec.model_validate(
        {
            "name": "worker",
            "labelSelector": {"matchLabels": {TASK: "worker"}},
            "matchLabelKeys": [PARTITION],
        }
    )
    assert group_of(rules([policy]), labels) == expected


def test_a_policy_without_match_keys_leaves_its_pods_in_the_default_group() -> None:
    policy = SubGroupPolicySpec.model_validate({"name": "all", "subGroupSize": 2})
    assert group_of(rules([policy]), {TASK: "worker"}) == DEFAULT


def test_a_partition_too_big_for_any_rack_says_so() -> None:
    result = session([partitioned("a", partitions=1, size=3, min_partitions=1)])
    assert placed(result) == {}
    assert (
        "no HyperNode of tier 1 or lower has room for sub-group worker 0"
        in result.why_not[job_key("default", "a")]
    )
