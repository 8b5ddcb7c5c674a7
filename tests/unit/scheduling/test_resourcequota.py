"""The resourcequota plugin: enqueue admits no job its namespace's ResourceQuotas cannot hold.

The first table is Volcano's `pkg/scheduler/plugins/resourcequota/resourcequota_test.go`
(TestResourceQuotaPlugin: a quota of 2 CPUs and 2G; a PodGroup asking that much, one asking
ten times as much, one with no quota in the cluster, one without minResources), then its
TestJobEnqueuedOnOtherPluginsReject (a job another plugin of the tier refuses charges no
quota). The rest follow resourcequota.go and the quota evaluator's names (`PodUsageFunc`),
then what Caldera does further (an Inqueue job whose pods do not exist yet holds its room).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Final

import pytest

from models.keys import JobKey
from models.scheduling import PodGroupPhase
from scheduling.actions import enqueue
from scheduling.api import quotas
from scheduling.api.quotas import ResourceQuota
from scheduling.framework import conf
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import tiers_of
from scheduling.plugins.resourcequota import INSUFFICIENT
from tests.unit.scheduling.builders import (
    PRIORITY_CLASSES,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    make_resource_quota,
    snapshot,
)

Obj = dict[str, Any]
Gang = tuple[Obj, list[Obj]]
INQ, PEND = PodGroupPhase.INQUEUE, PodGroupPhase.PENDING
NODES: Final = [make_node("n1", cpu="64", memory="256Gi").obj()]
ONLY_QUOTA: Final = SessionConfig(tiers=tiers_of(("resourcequota",)))
NORMAL: Final = {"cpu": "2000m", "memory": "2G"}  # Volcano's normalResource
HUGE: Final = {"cpu": "20000m", "memory": "20G"}  # Volcano's hugeResource


def pending(
    name: str, min_resources: dict[str, str] | None, namespace: str = "default", **spec: Any
) -> Gang:
    if min_resources is not None:
        spec["minResources"] = min_resources
    return make_podgroup(name, namespace=namespace, phase="Pending", **spec), []


def _run(
    groups: Sequence[Gang],
    resource_quotas: Sequence[Obj] = (),
    config: SessionConfig = ONLY_QUOTA,
) -> tuple[dict[str, PodGroupPhase], dict[str, str]]:
    snap = snapshot(
        NODES,
        gangs=groups,
        resource_quotas=resource_quotas,
        priority_classes=PRIORITY_CLASSES,
    )
    state = SessionState(snap, config)
    enqueue.enqueue(state, config)
    return {k: j.phase for k, j in state.jobs.items()}, dict(state.job_errors)


# --- resourcequota_test.go TestResourceQuotaPlugin ------------------------------------------
VOLCANO_CASES = [
    pytest.param(pending("pg1", NORMAL), [make_resource_quota("test", NORMAL)], INQ, id="fits"),
    pytest.param(pending("pg2", HUGE), [make_resource_quota("test", NORMAL)], PEND, id="too-big"),
    pytest.param(pending("pg2", HUGE), [], INQ, id="no-resource-quota"),
    pytest.param(pending("pg3", None), [make_resource_quota("test", NORMAL)], INQ, id="no-min"),
]


@pytest.mark.parametrize(("group", "rqs", "phase"), VOLCANO_CASES)
def test_volcanos_resourcequota_cases(group: Gang, rqs: list[Obj], phase: PodGroupPhase) -> None:
    phases, _ = _run([group], rqs)
    assert list(phases.values()) == [phase]


def test_a_job_another_plugin_refuses_charges_no_quota() -> None:
    """TestJobEnqueuedOnOtherPluginsReject: `a` comes first and fits the 1-CPU quota, but
    overcommit (same tier) refuses it; `b` still finds the quota's room."""
    config = SessionConfig(tiers=tiers_of(("priority", "resourcequota", "overcommit")))
    a = pending("a", {"cpu": "1", "memory": "1000Gi"}, priorityClassName="high")
    b = pending("b", {"cpu": "1", "memory": "1G"})
    phases, errors = _run([a, b], [make_resource_quota("rq1", {"cpu": "1"})], config)
    assert phases == {JobKey("default/a"): PEND, JobKey("default/b"): INQ}
    assert errors == {JobKey("default/a"): enqueue.CLUSTER_OVERUSED}


# --- what resourcequota.go adds up, and the names it compares ------------------------------
def test_two_jobs_in_one_namespace_only_the_first_fits_with_volcanos_reason() -> None:
    quota = make_resource_quota("compute", {"requests.cpu": "3"}, used={"requests.cpu": "1"})
    phases, errors = _run([pending("a", {"cpu": "2"}), pending("b", {"cpu": "1"})], [quota])
    assert phases == {JobKey("default/a"): INQ, JobKey("default/b"): PEND}
    assert errors == {
        JobKey("default/b"): (
            "resource quota insufficient, requested: map[requests.cpu:1], "
            "used: map[requests.cpu:3], limited: map[requests.cpu:3], quota: compute"
        )
    }


def test_the_refusal_becomes_the_podgroups_unschedulable_condition() -> None:
    from scheduling.actions.registry import run_session

    snap = snapshot(
        NODES,
        gangs=[pending("a", {"cpu": "2", "memory": "1Gi"})],
        resource_quotas=[make_resource_quota("rq", {"cpu": "1", "memory": "4Gi"})],
    )
    result = run_session(
        snap, conf.load(conf.CALDERA_DEFAULT + "  - name: resourcequota\n").session
    )
    (found,) = [c for c in result.conditions if c.job == "default/a"]
    assert (found.type, found.reason) == ("Unschedulable", "NotEnoughResources")
    assert found.message == (
        f"{INSUFFICIENT}, requested: map[cpu:2], used: map[cpu:0], limited: map[cpu:1], quota: rq"
    )


def test_a_quota_in_another_namespace_has_no_effect() -> None:
    quota = make_resource_quota("tight", {"requests.cpu": "1"}, namespace="other")
    phases, _ = _run([pending("a", {"cpu": "4"}), pending("b", {"cpu": "4"}, "team")], [quota])
    assert set(phases.values()) == {INQ}


def test_the_admitted_count_per_namespace() -> None:
    """What `a` takes from namespace `x` leaves namespace `y`'s equal quota whole."""
    rqs = [make_resource_quota("rq", {"cpu": "2"}, namespace=ns) for ns in ("x", "y")]
    groups = [pending("a", {"cpu": "2"}, "x"), pending("b", {"cpu": "2"}, "y")]
    groups.append(pending("c", {"cpu": "1"}, "x"))
    phases, _ = _run(groups, rqs)
    assert phases == {JobKey("x/a"): INQ, JobKey("x/c"): PEND, JobKey("y/b"): INQ}


def test_resourcequota_not_in_the_tiers_has_no_effect() -> None:
    quota = make_resource_quota("rq", {"requests.cpu": "1"})
    phases, errors = _run([pending("a", {"cpu": "4"})], [quota], SessionConfig())
    assert (phases, errors) == ({JobKey("default/a"): INQ}, {})


def test_enable_job_enqueued_false_silences_it() -> None:
    text = conf.CALDERA_DEFAULT + "  - name: resourcequota\n    enableJobEnqueued: false\n"
    quota = make_resource_quota("rq", {"requests.cpu": "1"})
    phases, _ = _run([pending("a", {"cpu": "4"})], [quota], conf.load(text).session)
    assert phases == {JobKey("default/a"): INQ}


def test_resourcequota_loads_without_arguments_and_refuses_any() -> None:
    session = conf.load(conf.CALDERA_DEFAULT + "  - name: resourcequota\n").session
    assert session.runs("resourcequota")
    with pytest.raises(ValueError, match="plugin resourcequota has no such argument"):
        conf.load(conf.CALDERA_DEFAULT + "  - name: resourcequota\n    arguments: {a: 1}\n")


NAME_CASES = [
    pytest.param({"requests.cpu": "1"}, {"cpu": "2"}, PEND, id="requests.cpu-holds-cpu"),
    pytest.param({"cpu": "1"}, {"cpu": "2"}, PEND, id="cpu-holds-cpu"),
    pytest.param({"requests.memory": "1Gi"}, {"memory": "2Gi"}, PEND, id="requests.memory"),
    pytest.param({"pods": "1"}, {"pods": "2"}, PEND, id="pods"),
    pytest.param({"count/pods": "1"}, {"pods": "2"}, PEND, id="count/pods-holds-pods"),
    pytest.param(
        {"requests.nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}, PEND, id="extended-requests"
    ),
    pytest.param({"limits.cpu": "1"}, {"cpu": "2"}, INQ, id="limits-not-in-min-resources"),
    pytest.param({"limits.cpu": "1"}, {"limits.cpu": "2"}, PEND, id="limits-given-compared"),
    pytest.param({"requests.storage": "1"}, {"cpu": "2"}, INQ, id="other-names-ignored"),
    pytest.param({"requests.cpu": "2"}, {"cpu": "2"}, INQ, id="equal-to-hard-fits"),
    pytest.param({"requests.cpu": "2", "pods": "1"}, {"cpu": "2", "pods": "2"}, PEND, id="any"),
]


@pytest.mark.parametrize(("hard", "wanted", "phase"), NAME_CASES)
def test_names_compared(hard: dict[str, str], wanted: dict[str, str], phase: PodGroupPhase) -> None:
    phases, _ = _run([pending("a", wanted)], [make_resource_quota("rq", hard)])
    assert phases == {JobKey("default/a"): phase}


def test_every_quota_of_the_namespace_must_hold_the_first_by_name_says_why() -> None:
    rqs = [
        make_resource_quota("b-pods", {"pods": "1"}),
        make_resource_quota("a-cpu", {"requests.cpu": "8"}),
        make_resource_quota("c-mem", {"requests.memory": "1Gi"}),
    ]
    phases, errors = _run([pending("a", {"cpu": "1", "memory": "2Gi", "pods": "2"})], rqs)
    assert phases == {JobKey("default/a"): PEND}
    assert errors[JobKey("default/a")].endswith("limited: map[pods:1], quota: b-pods")


def test_used_counts_and_a_quota_without_status_limits_nothing() -> None:
    used = make_resource_quota("rq", {"cpu": "4"}, used={"cpu": "3"})
    unsynced = make_resource_quota("new", {"cpu": "1"}, synced=False)  # Volcano reads status
    phases, _ = _run([pending("a", {"cpu": "2"}), pending("b", {"cpu": "1"}, "ns")], [used])
    assert phases == {JobKey("default/a"): PEND, JobKey("ns/b"): INQ}
    phases, _ = _run([pending("a", {"cpu": "2"})], [unsynced])
    assert phases == {JobKey("default/a"): INQ}


# --- Caldera further: admitted jobs whose pods the apiserver has not charged yet -----------
def test_an_inqueue_job_without_pods_holds_its_room() -> None:
    held = (make_podgroup("held", minResources={"cpu": "2"}), [])
    quota = make_resource_quota("rq", {"requests.cpu": "3"})
    phases, errors = _run([held, pending("a", {"cpu": "2"})], [quota])
    assert phases[JobKey("default/a")] is PEND
    assert "used: map[requests.cpu:2]" in errors[JobKey("default/a")]


def test_an_inqueue_jobs_pods_are_counted_once_through_used() -> None:
    pods = [make_pod(f"held-{i}", group="held", cpu="1").obj() for i in range(2)]
    held = (make_podgroup("held", min_member=2, minResources={"cpu": "2"}), pods)
    quota = make_resource_quota("rq", {"requests.cpu": "3"}, used={"requests.cpu": "2"})
    phases, _ = _run([held, pending("a", {"cpu": "1"})], [quota])
    assert phases[JobKey("default/a")] is INQ


def test_pods_charged_before_the_session_sees_them_are_not_counted_twice() -> None:
    # The apiserver charged `second`'s new pod to `used` (4 = both jobs' pods) before the pod
    # reached the scheduler's cache: `second` holds nothing more, and `third`'s reason says
    # used 4, as the next session (which sees the pod) says it too. It said 6 (CI of stop 45).
    first = (
        make_podgroup("first", minResources={"cpu": "2"}),
        [make_pod("first-0", group="first", cpu="2").on("n0").obj()],
    )
    second = (make_podgroup("second", minResources={"cpu": "2"}), [])
    quota = make_resource_quota("rq", {"requests.cpu": "4"}, used={"requests.cpu": "4"})
    _, errors = _run([first, second, pending("third", {"cpu": "2"})], [quota])
    assert "used: map[requests.cpu:4]" in errors[JobKey("default/third")]
    pods = [make_pod("second-0", group="second", cpu="2").on("n0").obj()]
    _, later = _run([first, (second[0], pods), pending("third", {"cpu": "2"})], [quota])
    assert later[JobKey("default/third")] == errors[JobKey("default/third")]


# --- the parsing ----------------------------------------------------------------------------
USAGE_CASES = [
    pytest.param(
        {"cpu": "500m", "memory": "1Gi", "pods": "1"},
        {
            "count/pods": 1,
            "cpu": Fraction(1, 2),
            "memory": 2**30,
            "pods": 1,
            "requests.cpu": Fraction(1, 2),
            "requests.memory": 2**30,
        },
        id="cpu-memory-pods",
    ),
    pytest.param(
        {"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi", "ephemeral-storage": "1G"},
        {
            "ephemeral-storage": 10**9,
            "hugepages-2Mi": 4 * 2**20,
            "nvidia.com/gpu": 2,
            "requests.ephemeral-storage": 10**9,
            "requests.hugepages-2Mi": 4 * 2**20,
            "requests.nvidia.com/gpu": 2,
        },
        id="extended-hugepages-storage",
    ),
    pytest.param(
        {"cpu": "1", "requests.cpu": "3", "kubernetes.io/x": "1"},
        {"cpu": 1, "kubernetes.io/x": 1, "requests.cpu": 3},
        id="given-prefixed-wins-native-prefixed-kept",
    ),
]


@pytest.mark.parametrize(("given", "expected"), USAGE_CASES)
def test_quota_usage(given: dict[str, str], expected: dict[str, int | Fraction]) -> None:
    assert quotas.quota_usage(given) == expected


def test_quota_parse_reads_the_status_and_a_broken_one_is_left_out() -> None:
    good = make_resource_quota("rq", {"cpu": "1"}, used={"cpu": "250m"}, namespace="x")
    assert ResourceQuota.parse(good) == ResourceQuota(
        namespace="x", name="rq", hard={"cpu": Fraction(1)}, used={"cpu": Fraction(1, 4)}
    )
    broken = make_resource_quota("broken", {"cpu": "lots"})
    snap = snapshot(NODES, resource_quotas=[broken, good])
    assert [q.key for q in snap.quotas] == ["x/rq"]


def test_the_queue_still_speaks_when_the_quota_holds() -> None:
    """The quota permits; proportion in the same walk still refuses past the queue's share."""
    config = SessionConfig(tiers=tiers_of(("resourcequota", "proportion")))
    snap = snapshot(
        NODES,
        gangs=[pending("a", {"cpu": "100"})],
        queues=[make_queue("default")],
        resource_quotas=[make_resource_quota("rq", {"cpu": "1000"})],
    )
    state = SessionState(snap, config)
    enqueue.enqueue(state, config)
    assert state.job_errors[JobKey("default/a")].startswith(enqueue.QUOTA_INSUFFICIENT)
