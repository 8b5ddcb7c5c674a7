"""The cdp plugin: a pod within its cooldown is not reclaim's or preempt's victim.

The first tables are Volcano's `pkg/scheduler/plugins/cdp/cdp_test.go`:
Test_CooldownTimePlugin_podPreemptStableTime (a valid `volcano.sh/cooldown-time` is read, an
unparsable one disables protection) and TestPreemptableFn (of three running pods, the one
started 100 s ago with a 600 s cooldown is kept; the unparsable and the expired ones go), asked
through the tiers at both points. The sessions after them run reclaim whole, under Caldera's
victim rule and Volcano's, at the session's clock (`Snapshot.now`; none: nobody protected).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest

from models import labels
from models.keys import JobKey
from scheduling.actions.registry import run_session
from scheduling.api.snapshot import TaskInfo
from scheduling.cache.tasks import task_info
from scheduling.framework import conf, victim_tiers
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.tiers import Point, tiers_of
from scheduling.plugins import cdp
from tests.unit.scheduling.builders import (
    LIGHT_HEAVY,
    gang,
    make_nodes,
    make_pod,
    running,
    session_state,
    snapshot,
)

Obj = dict[str, Any]
NOW: Final = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

CALDERA: Final = conf.load(conf.CALDERA_DEFAULT + "  - name: cdp\n").session
# Volcano's rule, cdp beside proportion in tier 2; in tier 1, after gang, it is not asked when
# gang names nobody (one-pod jobs have no task to spare), as Volcano's walk ends that tier.
VOLCANO_TEXT: Final = conf.VOLCANO_DEFAULT.replace('backfill"', 'backfill, reclaim"')
VOLCANO: Final = conf.load(
    VOLCANO_TEXT.replace("  - name: proportion\n", "  - name: proportion\n  - name: cdp\n")
).session
VOLCANO_TIER_1: Final = conf.load(
    VOLCANO_TEXT.replace("  - name: conformance\n", "  - name: conformance\n  - name: cdp\n")
).session
VOLCANO_RECLAIM_OFF: Final = conf.load(
    conf.VOLCANO_DEFAULT.replace('backfill"', 'backfill, reclaim"')
    + "  - name: cdp\n    enableReclaimable: false\n"
).session
WITHOUT_CDP: Final = conf.load(conf.CALDERA_DEFAULT).session


def started(pod: Obj, ago: timedelta | None, on: str = "PodScheduled") -> Obj:
    """The pod Running since `ago` before NOW by its `on` condition (None: Pending, none)."""
    if ago is not None:
        pod["status"] = {
            "phase": "Running",
            "conditions": [
                {
                    "type": on,
                    "status": "True",
                    "lastTransitionTime": (NOW - ago).isoformat().replace("+00:00", "Z"),
                }
            ],
        }
    return pod


def cooled(name: str, cooldown: str | None, ago: timedelta | None, label: bool = False) -> Obj:
    builder = make_pod(name).on("n0")
    if cooldown is not None and not label:
        builder.annotate(labels.COOLDOWN_TIME, cooldown)
    pod = started(builder.obj(), ago)
    if cooldown is not None and label:
        pod["metadata"]["labels"] = {labels.COOLDOWN_TIME: cooldown}
    return pod


def _info(pod: Obj) -> TaskInfo:
    return task_info(pod, JobKey("default/pg"))


def task(name: str, cooldown: str | None, ago: timedelta | None) -> TaskInfo:
    return _info(cooled(name, cooldown, ago))


# --- podCooldownTime -------------------------------------------------------------------------

READ_CASES = [
    pytest.param("600s", False, timedelta(seconds=600), id="normal"),
    pytest.param("600abcde", False, None, id="not-enabled"),
    pytest.param("1m30s", True, timedelta(seconds=90), id="from-the-label"),
    pytest.param(None, False, None, id="absent"),
]


@pytest.mark.parametrize(("value", "label", "expected"), READ_CASES)
def test_cooldown_read_from_label_or_annotation(
    value: str | None, label: bool, expected: timedelta | None
) -> None:
    pod = cooled("p", value, timedelta(seconds=100), label=label)
    assert _info(pod).cooldown == expected


def test_label_wins_over_annotation() -> None:
    pod = cooled("p", "10s", timedelta(seconds=100))
    pod["metadata"]["labels"] = {labels.COOLDOWN_TIME: "600s"}
    assert _info(pod).cooldown == timedelta(seconds=600)


START_CASES = [
    pytest.param(timedelta(seconds=100), "PodScheduled", NOW - timedelta(seconds=100), id="run"),
    pytest.param(None, "PodScheduled", None, id="pending-has-no-start"),
    pytest.param(timedelta(seconds=100), "Ready", None, id="only-podscheduled-counts"),
]


@pytest.mark.parametrize(("ago", "condition", "expected"), START_CASES)
def test_running_since_is_the_podscheduled_time_of_a_running_pod(
    ago: timedelta | None, condition: str, expected: datetime | None
) -> None:
    pod = started(make_pod("p").on("n0").obj(), ago, on=condition)
    assert _info(pod).running_since == expected


# --- the filter, through the tiers (TestPreemptableFn) ----------------------------------------

FN_TASKS: Final = [
    task("task1", "600s", timedelta(seconds=100)),  # within: kept
    task("task2", "600abcde", timedelta(seconds=100)),  # unparsable: goes
    task("task3", "600s", timedelta(seconds=800)),  # expired: goes
]


@pytest.mark.parametrize("point", [Point.PREEMPTABLE, Point.RECLAIMABLE])
def test_preemptable_fn_keeps_the_pod_within_its_cooldown(point: Point) -> None:
    state = session_state(make_nodes(1, cpu="8"), now=NOW)
    victims = victim_tiers.victims_for(state, tiers_of(["cdp"]), point, FN_TASKS[0], list(FN_TASKS))
    assert [t.key for t in victims] == ["default/task2", "default/task3"]


CLOCK_CASES = [
    pytest.param("600s", timedelta(seconds=100), NOW, True, id="within"),
    pytest.param("600s", timedelta(seconds=600), NOW, False, id="exactly-over-goes"),
    pytest.param("600s", timedelta(seconds=800), NOW, False, id="expired"),
    pytest.param("600s", None, NOW, False, id="not-running"),
    pytest.param(None, timedelta(seconds=1), NOW, False, id="no-cooldown"),
    pytest.param("600s", timedelta(seconds=100), None, False, id="no-clock-protects-nobody"),
]


@pytest.mark.parametrize(("cooldown", "ago", "now", "protected"), CLOCK_CASES)
def test_cooling(
    cooldown: str | None, ago: timedelta | None, now: datetime | None, protected: bool
) -> None:
    assert cdp.cooling(task("p", cooldown, ago), now) is protected


# --- reclaim, whole sessions -----------------------------------------------------------------


def light_fills_the_cluster(fresh: int) -> list[tuple[Obj, list[Obj]]]:
    """12 one-pod 2-CPU jobs of `light` on 3 nodes of 8 CPUs, each with a 10 m cooldown; the
    first `fresh` started a minute ago, the others an hour ago."""
    jobs = []
    for i in range(12):
        group, pods = running(f"l{i}", [f"n{i % 3}"], cpu="2", queue="light")
        ago = timedelta(minutes=1 if i < fresh else 60)
        pods[0]["metadata"]["annotations"][labels.COOLDOWN_TIME] = "10m"
        started(pods[0], ago)
        jobs.append((group, pods))
    return jobs


HEAVY: Final = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(12)]

RECLAIM_CASES = [
    pytest.param(CALDERA, 12, NOW, 0, id="caldera-all-fresh"),
    pytest.param(CALDERA, 6, NOW, 6, id="caldera-expired-only"),
    pytest.param(CALDERA, 0, NOW, 9, id="caldera-all-expired-share-bounds"),
    pytest.param(VOLCANO, 12, NOW, 0, id="volcano-all-fresh"),
    pytest.param(VOLCANO, 6, NOW, 6, id="volcano-expired-only"),
    pytest.param(VOLCANO_TIER_1, 12, NOW, 9, id="volcano-tier-1-after-gang-not-asked"),
    pytest.param(WITHOUT_CDP, 12, NOW, 9, id="cdp-not-in-the-tiers-protects-nothing"),
    pytest.param(VOLCANO_RECLAIM_OFF, 12, NOW, 9, id="cdp-enableReclaimable-false"),
    pytest.param(CALDERA, 12, None, 9, id="no-clock-protects-nobody"),
]


@pytest.mark.parametrize(("config", "fresh", "now", "taken"), RECLAIM_CASES)
def test_reclaim_spares_pods_within_their_cooldown(
    config: SessionConfig, fresh: int, now: datetime | None, taken: int
) -> None:
    jobs = light_fills_the_cluster(fresh) + HEAVY
    snap = snapshot(make_nodes(3, cpu="8"), gangs=jobs, queues=LIGHT_HEAVY, now=now)
    evictions = run_session(snap, config).evictions
    assert len(evictions) == taken
    fresh_pods = {f"default/l{i}-worker-0" for i in range(fresh)}
    if taken < 9:
        assert not {e.pod for e in evictions} & fresh_pods


GANG_CASES = [
    pytest.param(WITHOUT_CDP, (), "default/lb", id="without-cdp-lb-goes-whole"),
    pytest.param(CALDERA, ("lb",), "default/la", id="lb-cooling-la-goes-instead"),
    pytest.param(CALDERA, ("la", "lb"), None, id="both-cooling-nobody-goes"),
]


@pytest.mark.parametrize(("config", "fresh", "gone"), GANG_CASES)
def test_a_gang_with_a_cooling_pod_is_not_evicted_whole(
    config: SessionConfig, fresh: tuple[str, ...], gone: str | None
) -> None:
    """Caldera's rule: a gang without spare tasks goes whole or not at all, so one pod within
    its cooldown keeps the whole gang (the two-gang case of test_reclaim.py)."""
    gangs = []
    for name in ("la", "lb"):
        group, pods = running(name, ["n0", "n1", "n2"], cpu="4", queue="light")
        for i, pod in enumerate(pods):
            pod["metadata"]["annotations"][labels.COOLDOWN_TIME] = "10m"
            started(pod, timedelta(minutes=1 if i == 0 and name in fresh else 60))
        gangs.append((group, pods))
    heavy = [gang(f"h{i}", 1, cpu="4", queue="heavy") for i in range(3)]
    snap = snapshot(make_nodes(3, cpu="8"), gangs=[*gangs, *heavy], queues=LIGHT_HEAVY, now=NOW)
    evictions = run_session(snap, config).evictions
    assert {e.job for e in evictions} == ({gone} if gone else set())
    assert len(evictions) == (3 if gone else 0)
