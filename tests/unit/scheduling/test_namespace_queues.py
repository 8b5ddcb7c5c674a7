"""NamespaceQueues in the scheduler: their ids, the capacity plugin's subtrees, and why their
jobs wait (Volcano's NamespaceQueue design, §3.5 and §3.6)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from activities.scheduler import session_metrics
from models.keys import QueueName
from scheduling.actions.registry import run_session
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import Snapshot
from scheduling.api.vectors import Resources
from scheduling.cache import namespacequeues
from scheduling.cache.observed import ObservedQueue
from scheduling.cache.writes import QueueAllocatedWrite, queue_allocated_writes
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from scheduling.plugins import proportion
from scheduling.plugins.namespace_subtrees import NEEDS_CAPACITY
from service import metrics
from tests.unit.scheduling.builders import make_nodes, make_pod, make_podgroup, make_queue
from tests.unit.scheduling.builders import snapshot as cluster_snapshot

Obj = dict[str, Any]
FLAT = SessionConfig(capacity=True)
TREE = SessionConfig(capacity=True, hierarchy=True)
TEAM = "team-a"


def make_nq(
    name: str,
    parent: str | None = "cluster/research",
    namespace: str = TEAM,
    state: str = "Open",
    ready: str | None = "True",  # None: no Ready condition yet
    reason: str = "Ready",
    message: str = "NamespaceQueue is ready for scheduling",
    **spec: Any,
) -> Obj:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready, "reason": reason}]
    if conditions and message:
        conditions[0]["message"] = message
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "NamespaceQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**({"parent": parent} if parent is not None else {}), **spec},
        "status": {"state": state, "conditions": conditions},
    }


def jobs_in(
    queue: str, count: int, prefix: str, namespace: str = TEAM, phase: str = "Inqueue"
) -> list[tuple[Obj, list[Obj]]]:
    """`count` one-pod jobs `<prefix><i>` in `namespace` naming `queue`, one cpu each."""
    out = []
    for i in range(count):
        name = f"{prefix}{i}"
        group = make_podgroup(name, 1, queue, namespace=namespace, phase=phase)
        out.append((group, [make_pod(f"{name}-0", group=name, namespace=namespace).obj()]))
    return out


def snap(
    gangs: list[tuple[Obj, list[Obj]]],
    nqs: list[Obj],
    queues: list[Obj] | None = None,
    nodes: int = 3,
) -> Snapshot:
    research = [make_queue("research", allowedNamespaces=[TEAM]), make_queue("root")]
    return cluster_snapshot(
        make_nodes(nodes, cpu="4"),
        gangs=gangs,
        queues=[make_queue(), *(queues if queues is not None else research)],
        namespace_queues=nqs,
    )


def placed(result: SessionResult) -> Counter[str]:
    """Placements by job-name prefix."""
    return Counter(p.job.split("/")[1].rstrip("0123456789") for p in result.placements)


# --- ids and conversion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("namespace/training", "team-a/training", id="namespace-queue"),
        pytest.param("gpu", "gpu", id="cluster-queue"),
        pytest.param(None, "default", id="unset-default"),
        pytest.param("other/training", "team-a/other/training", id="cross-namespace-malformed"),
        pytest.param("namespace/Bad", "team-a/namespace/Bad", id="bad-name-malformed"),
    ],
)
def test_workload_queue_resolves_with_the_one_grammar(raw: str | None, expected: str) -> None:
    assert namespacequeues.workload_queue(TEAM, raw, "default") == expected


def test_namespace_queue_becomes_a_queue_with_its_canonical_id_and_parent() -> None:
    local = make_nq(
        "training", parent="dept", capability={"cpu": "3"}, deserved={"cpu": "2"}, priority=4
    )
    research = make_queue("research", allowedNamespaces=[TEAM], priority=5)
    queues = {q.name: q for q in snap([], [make_nq("dept"), local], [research]).queues}
    info = queues[QueueName("team-a/training")]
    assert (info.namespace, info.parent, info.priority, info.refusal) == (
        TEAM,
        "team-a/dept",
        4,
        None,
    )
    assert info.capability == Resources.of(3000, 0)
    assert queues[QueueName("team-a/dept")].parent == "research"
    assert not queues[QueueName("research")].namespaced


def test_a_namespace_queue_never_ranks_above_its_cluster_queue() -> None:
    """A tenant orders its own queues; its priority is capped at the cluster Queue it was
    given, so it cannot jump ahead of queues the administrator ranked above that one."""
    research = make_queue("research", allowedNamespaces=[TEAM], priority=2)
    nqs = [make_nq("dept", priority=1), make_nq("training", parent="dept", priority=9)]
    queues = {q.name: q for q in snap([], nqs, [research]).queues}
    assert queues[QueueName("team-a/training")].priority == 2
    assert queues[QueueName("team-a/dept")].priority == 1


@pytest.mark.parametrize(
    ("nq", "why"),
    [
        pytest.param(
            make_nq("training", ready="False", reason="NamespaceNotAllowed", message="no"),
            "NamespaceQueue team-a/training is not ready: NamespaceNotAllowed: no",
            id="not-authorized",
        ),
        pytest.param(
            make_nq("training", state="Closed"),
            "NamespaceQueue team-a/training is Closed",
            id="closed",
        ),
        pytest.param(
            make_nq("training", ready=None),
            f"NamespaceQueue team-a/training is not ready: {namespacequeues.NOT_RECONCILED}",
            id="not-reconciled",
        ),
    ],
)
@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_a_namespace_queue_not_open_and_ready_places_nothing_and_says_why(
    nq: Obj, why: str, config: SessionConfig
) -> None:
    result = run_session(snap(jobs_in("namespace/training", 2, "t"), [nq]), config)
    assert result.placements == ()
    assert set(result.why_not.values()) == {f"1/1 tasks in gang unschedulable: {why}"}
    assert {c.message for c in result.pod_conditions} == {why}


def test_a_pending_job_in_a_queue_not_ready_is_not_admitted() -> None:
    nq = make_nq("training", ready="False", reason="ParentNotFound", message="gone")
    result = run_session(snap(jobs_in("namespace/training", 1, "t", phase="Pending"), [nq]), FLAT)
    assert result.phase_updates == ()
    assert result.why_not == {
        "team-a/t0": "1/1 tasks in gang unschedulable: "
        "NamespaceQueue team-a/training is not ready: ParentNotFound: gone"
    }


def test_a_missing_namespace_queue_never_falls_back_to_another() -> None:
    result = run_session(snap(jobs_in("namespace/nope", 1, "t"), [make_nq("training")]), FLAT)
    assert result.placements == ()
    assert result.why_not["team-a/t0"] == (
        "1/1 tasks in gang unschedulable: NamespaceQueue team-a/nope does not exist: "
        "podgroup team-a/t0 waits until it does"
    )
    # The stand-in is no queue: no figures (metrics), no status write.
    assert "team-a/nope" not in {q.name for q in result.queues}


def test_a_malformed_reference_is_never_placed_and_says_why() -> None:
    result = run_session(snap(jobs_in("other-team/training", 1, "t"), []), FLAT)
    assert result.placements == ()
    assert (
        "spec.queue 'other-team/training' is not a queue reference" in (result.why_not["team-a/t0"])
    )


def test_without_the_capacity_plugin_namespace_queues_are_refused_loudly() -> None:
    gangs = [*jobs_in("namespace/training", 1, "t"), *jobs_in("research", 1, "r")]
    result = run_session(snap(gangs, [make_nq("training")]))  # proportion
    assert placed(result) == {"r": 1}
    assert result.why_not["team-a/t0"] == (
        "1/1 tasks in gang unschedulable: NamespaceQueue team-a/training is not scheduled: "
        f"{NEEDS_CAPACITY}"
    )


def test_proportion_does_not_count_namespace_queue_guarantees_or_shares() -> None:
    nq = make_nq("training", guarantee={"resource": {"cpu": "2"}})
    snapshot = snap(jobs_in("namespace/training", 1, "t"), [nq])
    assert proportion.total_guarantee(snapshot.queues) == Resources.of(0, 0)
    assert QueueName("team-a/training") not in SessionState(snapshot).deserved


# --- capacity: the NamespaceQueue's own bound and its ancestors' ------------------------------


@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_a_job_is_placed_within_the_namespace_queue_capability(config: SessionConfig) -> None:
    nq = make_nq("training", capability={"cpu": "3"})
    result = run_session(snap(jobs_in("namespace/training", 5, "t"), [nq]), config)
    assert placed(result) == {"t": 3}
    assert set(result.why_not.values()) == {
        "1/1 tasks in gang unschedulable: queue team-a/training would exceed its real capability"
    }


@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_the_cluster_parent_capability_bounds_its_namespace_queues(config: SessionConfig) -> None:
    research = make_queue("research", allowedNamespaces=["*"], capability={"cpu": "3"})
    nqs = [make_nq("training", capability={"cpu": "8"}), make_nq("b", namespace="team-b")]
    gangs = [*jobs_in("namespace/training", 5, "t"), *jobs_in("namespace/b", 5, "b", "team-b")]
    result = run_session(snap(gangs, nqs, [research, make_queue("root")]), config)
    assert sum(placed(result).values()) == 3  # each alone could take 3: together they may not
    assert result.why_not["team-b/b4"] == (
        "1/1 tasks in gang unschedulable: queue team-b/b would exceed the real capability of "
        "its ancestor queue research"
    )


@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_the_cluster_parent_own_jobs_and_its_namespace_queues_share_its_bound(
    config: SessionConfig,
) -> None:
    research = make_queue("research", allowedNamespaces=[TEAM], capability={"cpu": "4"})
    gangs = [*jobs_in("research", 3, "r", namespace="default"), *jobs_in("namespace/t", 3, "t")]
    result = run_session(snap(gangs, [make_nq("t")], [research, make_queue("root")]), config)
    assert sum(placed(result).values()) == 4


def test_in_the_tree_a_local_parent_bounds_its_children_together() -> None:
    nqs = [
        make_nq("dept", capability={"cpu": "3"}),
        make_nq("training", parent="dept"),
        make_nq("inference", parent="dept"),
    ]
    gangs = [*jobs_in("namespace/training", 3, "t"), *jobs_in("namespace/inference", 3, "i")]
    result = run_session(snap(gangs, nqs), TREE)
    assert sum(placed(result).values()) == 3
    # A job in the parent NamespaceQueue waits (jobs belong in leaves); the rest go on.
    stray = run_session(snap([*gangs, *jobs_in("namespace/dept", 1, "d")], nqs), TREE)
    assert stray.why_not["team-a/d0"].endswith("queue team-a/dept is not a leaf queue")
    assert sum(placed(stray).values()) == 3


@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_a_parent_that_places_nothing_holds_its_whole_subtree(config: SessionConfig) -> None:
    nqs = [
        make_nq("dept", state="Closed"),
        make_nq("training", parent="dept"),
        make_nq("nightly", parent="training"),
        make_nq("other"),
    ]
    gangs = [
        *jobs_in("namespace/training", 1, "t"),
        *jobs_in("namespace/nightly", 1, "n"),
        *jobs_in("namespace/other", 1, "o"),
    ]
    result = run_session(snap(gangs, nqs), config)
    assert placed(result) == {"o": 1}
    for job, queue in (("t0", "training"), ("n0", "nightly")):
        why = result.why_not[f"team-a/{job}"]
        assert f"NamespaceQueue team-a/{queue} is held by its parent: " in why
        assert "team-a/dept" in why


@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_a_tenant_chain_that_finds_no_parent_stops_only_itself(config: SessionConfig) -> None:
    nqs = [make_nq("lost", parent="nowhere"), make_nq("a", parent="b"), make_nq("b", parent="a")]
    gangs = [
        *jobs_in("namespace/lost", 1, "l"),
        *jobs_in("namespace/a", 1, "a"),
        *jobs_in("research", 2, "r", namespace="default"),
    ]
    result = run_session(snap(gangs, nqs), config)
    assert placed(result) == {"r": 2}
    assert result.why_not["team-a/l0"].endswith(
        "parent team-a/nowhere of NamespaceQueue team-a/lost does not exist"
    )
    assert "form a cycle" in result.why_not["team-a/a0"]


def test_the_namespace_queue_allocated_rolls_up_and_is_written_to_its_status() -> None:
    result = run_session(snap(jobs_in("namespace/training", 2, "t"), [make_nq("training")]), TREE)
    held = result.queue_allocated[QueueName("team-a/training")]
    assert held == Resources.of(2000, 2 * 2**30, 2)
    assert result.queue_allocated[QueueName("research")] == held  # its subtree's
    assert {q.name for q in result.queues} >= {"team-a/training", "research", "root"}
    # volcano_queue_* carry the canonical id as queue_name (design §3.5.5).
    series = session_metrics.series(result.queues)
    assert series[metrics.QUEUE_ALLOCATED.milli_cpu][("team-a/training",)] == 2000.0
    observed = ObservedQueue.parse(make_nq("training"))
    assert observed.name == "team-a/training"
    writes = queue_allocated_writes({QueueName("team-a/training"): held}, {observed.name: observed})
    assert writes == [
        QueueAllocatedWrite(
            QueueName("team-a/training"),
            held.to_resource_list(),
            namespace=TEAM,
            name="training",
        )
    ]


def test_cluster_queues_alone_are_unchanged_by_namespace_queues() -> None:
    gangs = jobs_in("research", 4, "r", namespace="default")
    research = [make_queue("research", allowedNamespaces=[TEAM], capability={"cpu": "3"})]
    alone = run_session(snap(gangs, [], [*research, make_queue("root")]), FLAT)
    beside = run_session(
        snap(gangs, [make_nq("idle", capability={"cpu": "1"})], [*research, make_queue("root")]),
        FLAT,
    )
    assert alone.placements == beside.placements
    assert alone.why_not == beside.why_not


@pytest.mark.parametrize("config", [FLAT, TREE], ids=["flat", "tree"])
def test_the_scheduler_checks_authorization_itself_and_still_counts_what_runs(
    config: SessionConfig,
) -> None:
    """Ready=True from a lagging controller does not place a job under a cluster queue that
    no longer allows the namespace; its running job still holds part of the parent's bound."""
    research = make_queue("research", allowedNamespaces=["team-b"], capability={"cpu": "3"})
    nqs = [make_nq("training"), make_nq("b", namespace="team-b")]
    held = make_podgroup("held", 1, "namespace/training", namespace=TEAM, phase="Running")
    held_pod = make_pod("held-0", group="held", namespace=TEAM, cpu="2").on("n0").obj()
    gangs = [
        (held, [held_pod]),
        *jobs_in("namespace/training", 1, "t"),
        *jobs_in("namespace/b", 3, "b", "team-b"),
    ]
    result = run_session(snap(gangs, nqs, [research, make_queue("root")]), config)
    assert placed(result) == {"b": 1}  # 3 - the 2 the unauthorized queue still holds
    assert result.why_not["team-a/t0"] == (
        "1/1 tasks in gang unschedulable: NamespaceQueue team-a/training: queue research does "
        "not allow namespace team-a (its spec.allowedNamespaces)"
    )


def test_a_namespace_queue_that_does_not_parse_places_nothing_and_names_the_field() -> None:
    broken = make_nq("training", priority=-1)  # stored before the schema said otherwise
    result = run_session(snap(jobs_in("namespace/training", 1, "t"), [broken]), FLAT)
    assert result.placements == ()
    assert result.why_not["team-a/t0"].startswith(
        "1/1 tasks in gang unschedulable: NamespaceQueue team-a/training does not parse: "
        "spec.priority: "
    )
