"""The pdb plugin: reclaim and preempt take no victim that would break a disruption budget.

The first table is Volcano's `pkg/scheduler/plugins/pdb/pdb_test.go`
(TestPreemptableAndReclaimableFn: no PDB, a PDB allowing 0, one allowing 1, over two pods of
one job) asked through the tiers at both points. The budgets' arithmetic follows pdb.go
(`status.disruptionsAllowed`, `status.disruptedPods`) and, for the `volcano.sh/jdb-*`
annotations, tdm.go's `getMaxPodEvictNum` and `parseIntStr`. The sessions after them run the
reclaim and preempt actions whole, under Caldera's victim rule and Volcano's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

import pytest

from models import labels
from scheduling.actions.registry import run_session
from scheduling.api.disruption import JobBudget, PodDisruptionBudget, job_budget
from scheduling.api.result import EvictReason, SessionResult
from scheduling.api.snapshot import PodKey, TaskStatus
from scheduling.framework import conf, victim_tiers
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.statement import Statement
from scheduling.framework.tiers import Point, tiers_of
from scheduling.plugins import pdb
from tests.unit.scheduling.builders import (
    LIGHT_HEAVY,
    PRIORITY_CLASSES,
    gang,
    make_node,
    make_nodes,
    make_pdb,
    running,
    session_state,
    snapshot,
)

Obj = dict[str, Any]
Gang = tuple[Obj, list[Obj]]
P, R = Point.PREEMPTABLE, Point.RECLAIMABLE
JOB_NAME: Final = labels.JOB_NAME  # the label Volcano's test selects on

# Caldera's defaults with pdb, by Caldera's victim rule; Volcano's built-in tiers with reclaim
# and pdb (in tier 1), by Volcano's.
CALDERA: Final = conf.load(conf.CALDERA_DEFAULT + "  - name: pdb\n").session
VOLCANO: Final = conf.load(
    conf.VOLCANO_DEFAULT.replace('backfill"', 'backfill, reclaim"').replace(
        "  - name: conformance\n", "  - name: conformance\n  - name: pdb\n"
    )
).session
VOLCANO_RECLAIM_OFF: Final = conf.load(
    conf.VOLCANO_DEFAULT.replace('backfill"', 'backfill, reclaim"')
    + "  - name: pdb\n    enableReclaimable: false\n"
).session
WITHOUT_PDB: Final = conf.load(conf.CALDERA_DEFAULT).session
PREEMPT_TEXT: Final = conf.CALDERA_DEFAULT.replace('reclaim"', 'reclaim, preempt"')
PREEMPT: Final = conf.load(PREEMPT_TEXT + "  - name: pdb\n").session
PREEMPT_WITHOUT_PDB: Final = conf.load(PREEMPT_TEXT).session


def labelled(job: Gang, **pod_labels: str) -> Gang:
    """The job with `pod_labels` on each of its pods."""
    group, pods = job
    for pod in pods:
        pod["metadata"].setdefault("labels", {}).update(pod_labels)
    return group, pods


def annotated(job: Gang, key: str, value: str) -> Gang:
    """The job with `key: value` among its PodGroup's annotations."""
    group, pods = job
    group["metadata"].setdefault("annotations", {})[key] = value
    return group, pods


def evicted(result: SessionResult) -> list[str]:
    return sorted(e.pod.split("/")[1] for e in result.evictions)


# --- pdb_test.go TestPreemptableAndReclaimableFn, through the tiers -----------------------

VOLCANO_CASES = [
    pytest.param((), ["test-pod1", "test-pod2"], id="without-pdbs"),
    pytest.param((make_pdb("test-pdb", 0, **{JOB_NAME: "job-1"}),), [], id="pdb-can-evict-0"),
    pytest.param(
        (make_pdb("test-pdb", 1, **{JOB_NAME: "job-1"}),), ["test-pod1"], id="pdb-can-evict-1"
    ),
    # pdb.go: a pod in status.disruptedPods is already counted by the apiserver.
    pytest.param(
        (make_pdb("test-pdb", 1, disrupted=("test-pod1",), **{JOB_NAME: "job-1"}),),
        ["test-pod1", "test-pod2"],
        id="disrupted-pod-not-counted-again",
    ),
    pytest.param(
        (make_pdb("test-pdb", 0, **{JOB_NAME: "job-2"}),),
        ["test-pod1", "test-pod2"],
        id="pdb-selecting-other-pods",
    ),
]


@pytest.mark.parametrize("point", [P, R])
@pytest.mark.parametrize(("pdbs", "expected"), VOLCANO_CASES)
def test_volcanos_pdb_cases(point: Point, pdbs: tuple[Obj, ...], expected: list[str]) -> None:
    group, pods = labelled(running("job-1", ["n0", "n0"], min_member=1), **{JOB_NAME: "job-1"})
    for i, pod in enumerate(pods, start=1):
        pod["metadata"]["name"] = f"test-pod{i}"
    only_pdb = SessionConfig(tiers=tiers_of(("pdb",)))
    state = session_state(
        [make_node("n0", cpu="8").obj()], [(group, pods), gang("p", 1)], only_pdb, pdbs=pdbs
    )
    found = sorted((t for t in state.tasks.values() if t.node_name), key=lambda t: t.key)
    preemptor = state.tasks[PodKey("default/p-worker-0")]
    chosen = victim_tiers.victims_for(state, only_pdb.tiers, point, preemptor, found)
    assert [t.key.split("/")[1] for t in chosen] == expected


# --- what a budget allows ----------------------------------------------------------------

PDB_CASES = [
    pytest.param({}, 2, id="status-only"),
    pytest.param({"desired": 10}, 2, id="healthy-beyond-desired-agrees"),
    pytest.param({"desired": 11}, 1, id="status-not-recomputed-capped-by-healthy-now"),
    pytest.param({"desired": 12, "disrupted": ("l0-worker-0",)}, 0, id="disrupted-not-healthy"),
    pytest.param({"namespace": "other"}, 2, id="other-namespace-still-its-own-status"),
]


@pytest.mark.parametrize(("fields", "expected"), PDB_CASES)
def test_pdb_allows_its_status_capped_by_the_pods_healthy_now(
    fields: dict[str, Any], expected: int
) -> None:
    jobs = [labelled(running(f"l{i}", [f"n{i % 3}"]), app="l") for i in range(12)]
    budget = make_pdb("b", 2, app="l", **fields)
    snap = snapshot(make_nodes(3, cpu="8"), gangs=jobs, pdbs=[budget])
    assert pdb.pdb_allowed(snap.budgets[0], snap) == expected


def test_pdb_parse_reads_volcanos_fields_and_an_empty_selector_matches_nothing() -> None:
    parsed = PodDisruptionBudget.parse(make_pdb("b", 3, 4, ("x",), namespace="ns", app="a"))
    assert (parsed.key, parsed.disruptions_allowed, parsed.desired_healthy) == ("ns/b", 3, 4)
    assert parsed.disrupted_pods == {"x"}
    assert parsed.selects("ns", {"app": "a", "more": "b"})
    assert not parsed.selects("default", {"app": "a"})
    empty = PodDisruptionBudget.parse(make_pdb("e", 3))
    assert not empty.selects("default", {"app": "a"}) and not empty.selects("default", {})


JDB_PARSE = [
    pytest.param({labels.JDB_MIN_AVAILABLE: "2"}, JobBudget(minimum=True, amount=2), id="min"),
    pytest.param(
        {labels.JDB_MAX_UNAVAILABLE: "30%"},
        JobBudget(minimum=False, amount=30, percent=True),
        id="max-percent",
    ),
    pytest.param(
        {labels.JDB_MIN_AVAILABLE: "1", labels.JDB_MAX_UNAVAILABLE: "2"},
        JobBudget(minimum=True, amount=1),
        id="both-min-wins",
    ),
    pytest.param({labels.JDB_MAX_UNAVAILABLE: "lots"}, None, id="no-amount-unset"),
    pytest.param({labels.JDB_MIN_AVAILABLE: "-1"}, None, id="negative-unset"),
    pytest.param({}, None, id="none"),
]


@pytest.mark.parametrize(("annotations", "expected"), JDB_PARSE)
def test_job_budget_from_the_podgroups_annotations(
    annotations: dict[str, str], expected: JobBudget | None
) -> None:
    assert job_budget(annotations) == expected


JDB_ALLOWED = [
    # (annotation, value, running of 4 tasks, pending, allowed)
    pytest.param(labels.JDB_MIN_AVAILABLE, "3", 4, 0, 1, id="min-number"),
    pytest.param(labels.JDB_MIN_AVAILABLE, "4", 4, 0, 0, id="min-number-all"),
    pytest.param(labels.JDB_MIN_AVAILABLE, "50%", 4, 0, 2, id="min-percent"),
    pytest.param(labels.JDB_MIN_AVAILABLE, "30%", 4, 0, 2, id="min-percent-rounds-up"),
    pytest.param(labels.JDB_MIN_AVAILABLE, "3", 2, 2, 0, id="min-already-below"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "1", 4, 0, 1, id="max-number"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "1", 3, 1, 0, id="max-number-one-already-down"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "50%", 4, 0, 2, id="max-percent"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "30%", 3, 1, 1, id="max-percent-rounds-up"),
]


@pytest.mark.parametrize(("key", "value", "up", "down", "expected"), JDB_ALLOWED)
def test_job_budget_allows_as_tdm_counts(
    key: str, value: str, up: int, down: int, expected: int
) -> None:
    group, pods = running("j", ["n0"] * up, min_member=1)
    pods += gang("j", down)[1][:down]
    for i, pod in enumerate(pods):
        pod["metadata"]["name"] = f"j-worker-{i}"
    snap = snapshot([make_node("n0", cpu="8").obj()], gangs=[annotated((group, pods), key, value)])
    job = snap.jobs[0]
    assert job.budget is not None
    assert pdb.jdb_allowed(job.budget, snap.tasks_of(job.key)) == expected


# --- reclaim, whole sessions ---------------------------------------------------------------


def light_fills_the_cluster(**pod_labels: str) -> list[Gang]:
    """12 one-pod jobs of 2 CPUs in `light` on 3 nodes of 8 CPUs; heavy (weight 3) deserves 9."""
    return [
        labelled(running(f"l{i}", [f"n{i % 3}"], cpu="2", queue="light"), **pod_labels)
        for i in range(12)
    ]


HEAVY: Final = [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(12)]

RECLAIM_CASES = [
    pytest.param(CALDERA, 0, 0, id="caldera-allowed-0"),
    pytest.param(CALDERA, 1, 1, id="caldera-allowed-1"),
    pytest.param(CALDERA, 2, 2, id="caldera-allowed-2-counted-across-victims"),
    pytest.param(CALDERA, 20, 9, id="caldera-allowed-beyond-the-share"),
    pytest.param(VOLCANO, 0, 0, id="volcano-allowed-0"),
    pytest.param(VOLCANO, 1, 1, id="volcano-allowed-1"),
    pytest.param(VOLCANO, 2, 2, id="volcano-allowed-2-counted-across-victims"),
    pytest.param(WITHOUT_PDB, 0, 9, id="pdb-not-in-the-tiers-protects-nothing"),
    pytest.param(VOLCANO_RECLAIM_OFF, 0, 9, id="pdb-enableReclaimable-false-protects-nothing"),
]


@pytest.mark.parametrize(("config", "allowed", "taken"), RECLAIM_CASES)
def test_reclaim_stops_at_the_budget(config: SessionConfig, allowed: int, taken: int) -> None:
    budget = make_pdb("light", allowed, app="light")
    jobs = light_fills_the_cluster(app="light") + HEAVY
    snap = snapshot(make_nodes(3, cpu="8"), gangs=jobs, queues=LIGHT_HEAVY, pdbs=[budget])
    assert len(run_session(snap, config).evictions) == taken


def test_pods_the_budget_does_not_select_still_go() -> None:
    jobs = light_fills_the_cluster(app="light") + HEAVY
    labelled(jobs[0], app="other")  # l0 is outside the budget
    snap = snapshot(
        make_nodes(3, cpu="8"), gangs=jobs, queues=LIGHT_HEAVY, pdbs=[make_pdb("b", 0, app="light")]
    )
    assert evicted(run_session(snap, CALDERA)) == ["l0-worker-0"]


def split_jobs(key: str, value: str) -> list[Gang]:
    """light as 3 jobs of 4 pods (minMember 1) filling the cluster, each with a jdb annotation."""
    on = [[f"n{(i + k) % 3}" for k in range(4)] for i in range(3)]
    return [
        annotated(running(f"l{i}", on[i], cpu="2", min_member=1, queue="light"), key, value)
        for i in range(3)
    ]


JDB_CASES = [
    pytest.param(labels.JDB_MIN_AVAILABLE, "3", {"l": 3}, id="min-number-1-each"),
    pytest.param(labels.JDB_MIN_AVAILABLE, "50%", {"l": 6}, id="min-percent-2-each"),
    pytest.param(labels.JDB_MIN_AVAILABLE, "4", {}, id="min-all-protects"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "1", {"l": 3}, id="max-number-1-each"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "50%", {"l": 6}, id="max-percent-2-each"),
    pytest.param(labels.JDB_MAX_UNAVAILABLE, "0%", {}, id="max-percent-0-protects"),
]


@pytest.mark.parametrize("config", [CALDERA, VOLCANO], ids=["caldera", "volcano"])
@pytest.mark.parametrize(("key", "value", "taken"), JDB_CASES)
def test_reclaim_keeps_a_jobs_own_budget(
    config: SessionConfig, key: str, value: str, taken: dict[str, int]
) -> None:
    snap = snapshot(
        make_nodes(3, cpu="8"), gangs=split_jobs(key, value) + HEAVY, queues=LIGHT_HEAVY
    )
    result = run_session(snap, config)
    assert Counter(e.job.split("/")[1].rstrip("0123456789") for e in result.evictions) == taken
    assert (
        max(Counter(e.job for e in result.evictions).values(), default=0)
        == sum(taken.values()) // 3
    )


def test_job_budget_is_not_read_without_pdb_in_the_tiers() -> None:
    jobs = split_jobs(labels.JDB_MIN_AVAILABLE, "4") + HEAVY
    snap = snapshot(make_nodes(3, cpu="8"), gangs=jobs, queues=LIGHT_HEAVY)
    assert len(run_session(snap, WITHOUT_PDB).evictions) == 9


def test_budgets_hold_where_volcanos_tier_walk_would_not_ask_pdb() -> None:
    """session_plugins.go Reclaimable: gang names light's spare tasks in tier 1 and decides, so
    pdb in tier 2 is not asked; Caldera still keeps the budgets as it evicts."""
    late = conf.VOLCANO_DEFAULT.replace('backfill"', 'backfill, reclaim"') + "  - name: pdb\n"
    snap = snapshot(
        make_nodes(3, cpu="8"),
        gangs=split_jobs(labels.JDB_MIN_AVAILABLE, "3") + HEAVY,
        queues=LIGHT_HEAVY,
    )
    assert Counter(e.job for e in run_session(snap, conf.load(late).session).evictions) == {
        f"default/l{i}": 1 for i in range(3)
    }


def test_a_whole_gang_goes_only_if_its_budget_allows_all_of_it() -> None:
    """Caldera's rule: a gang without spare tasks is one unit; 2 of its 3 pods allowed keeps it."""
    victim = labelled(running("l", ["n0", "n1", "n2"], cpu="8", queue="light"), app="l")
    other = labelled(running("m", ["n0", "n1", "n2"], cpu="8", queue="light"), app="m")
    heavy = [gang(f"h{i}", 1, cpu="8", queue="heavy") for i in range(3)]
    nodes = make_nodes(3, cpu="16")
    budgets = [make_pdb("l", 2, app="l"), make_pdb("m", 3, app="m")]
    snap = snapshot(nodes, gangs=[victim, other, *heavy], queues=LIGHT_HEAVY, pdbs=budgets)
    assert {e.job for e in run_session(snap, CALDERA).evictions} == {"default/m"}


def test_a_discarded_eviction_gives_its_budget_back() -> None:
    jobs = light_fills_the_cluster(app="light") + HEAVY
    state = session_state(
        make_nodes(3, cpu="8"),
        jobs,
        CALDERA,
        queues=LIGHT_HEAVY,
        pdbs=[make_pdb("b", 1, app="light")],
    )
    assert state.budgets is not None and state.budgets.left == [1]
    statement = Statement(state)
    statement.evict(
        PodKey("default/l0-worker-0"), EvictReason.RECLAIM, PodKey("default/h0-worker-0")
    )
    assert state.budgets.left == [0]
    assert not state.within_budgets((PodKey("default/l1-worker-0"),), R)
    statement.discard()
    assert state.tasks[PodKey("default/l0-worker-0")].status is TaskStatus.RUNNING
    assert state.budgets.left == [1]
    assert state.within_budgets((PodKey("default/l1-worker-0"),), R)


# --- preempt -------------------------------------------------------------------------------

PREEMPT_CASES = [
    pytest.param(PREEMPT, 0, [], id="allowed-0"),
    pytest.param(PREEMPT, 1, [], id="allowed-1-not-enough-for-the-gang-so-none"),
    pytest.param(PREEMPT, 2, ["low-worker-2", "low-worker-3"], id="allowed-2"),
    pytest.param(PREEMPT_WITHOUT_PDB, 0, ["low-worker-2", "low-worker-3"], id="pdb-off"),
]


@pytest.mark.parametrize(("config", "allowed", "expected"), PREEMPT_CASES)
def test_preempt_stops_at_the_budget(
    config: SessionConfig, allowed: int, expected: list[str]
) -> None:
    low = labelled(running("low", ["n0"] * 4, min_member=1, priorityClassName="low"), app="low")
    high = gang("high", 2, priorityClassName="high")
    snap = snapshot(
        [make_node("n0", cpu="4").obj()],
        gangs=[low, high],
        priority_classes=PRIORITY_CLASSES,
        pdbs=[make_pdb("low", allowed, app="low")],
    )
    assert evicted(run_session(snap, config)) == expected


def test_a_budget_whose_selector_does_not_parse_is_left_out() -> None:
    broken = make_pdb("broken", 0)
    broken["spec"]["selector"] = {"matchExpressions": [{"key": "app"}]}  # no operator
    snap = snapshot(make_nodes(1, cpu="8"), pdbs=[broken, make_pdb("fine", 1, app="a")])
    assert [b.key for b in snap.budgets] == ["default/fine"]


def test_pdb_loads_without_arguments_and_refuses_any() -> None:
    assert CALDERA.runs("pdb") and not WITHOUT_PDB.runs("pdb")
    with pytest.raises(ValueError, match="plugin pdb has no such argument"):
        conf.load(conf.CALDERA_DEFAULT + "  - name: pdb\n    arguments: {minAvailable: 1}\n")
