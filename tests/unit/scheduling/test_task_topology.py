"""The task-topology plugin: a job's roles placed together or apart, through buckets.

The annotation cases are Volcano's `pkg/scheduler/plugins/task-topology/topology_test.go`
(Test_readTopologyFromPgAnnotations, every case: a name the job lacks or a name twice in one
group invalidates the topology, empty names are kept and harmless). Volcano has no test of its
buckets, TaskOrderFn or NodeOrderFn; those cases follow `manager.go` and `topology.go`
(ConstructBucket, the TaskOrderFn comment's "bucket first, big bucket first" and
calcBucketScore), then whole allocate sessions on 3 nodes of 8 CPUs: affinity packs the roles
onto one node where nodeorder alone spreads them, anti-affinity spreads them where binpack alone
packs them, the task order decides which role is placed first, and a job without the
annotations, or a configuration without the plugin, places as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pytest

from admission import tasktopology as admission_rule
from models.keys import JobKey, QueueName
from scheduling.actions.registry import run_session
from scheduling.api import taskaffinity
from scheduling.api.snapshot import JobInfo, NodeName, PodKey, TaskInfo, TaskStatus
from scheduling.api.taskaffinity import AFFINITY, ANTI_AFFINITY, TASK_ORDER, TaskTopology
from scheduling.api.vectors import Resources
from scheduling.framework import conf
from scheduling.framework.tiers import Point
from scheduling.plugins import tasktopology
from tests.unit.scheduling.builders import make_node, make_nodes, make_pod, make_podgroup, snapshot

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
SIX_ROLES: Final = {"ps", "worker", "chief", "evaluator"}
DASHED_ROLES: Final = {"ps-some", "worker-another-some", "chief-kk", "evaluator-tt"}

# --- the annotations (Test_readTopologyFromPgAnnotations) --------------------------------------

READ_CASES = [
    pytest.param(
        {
            AFFINITY: "ps,worker;ps,chief",
            ANTI_AFFINITY: "ps;worker,chief",
            TASK_ORDER: "ps,worker,chief,evaluator",
        },
        SIX_ROLES,
        TaskTopology(
            affinity=(("ps", "worker"), ("ps", "chief")),
            anti_affinity=(("ps",), ("worker", "chief")),
            task_order=("ps", "worker", "chief", "evaluator"),
        ),
        [],
        id="correct-annotation",
    ),
    pytest.param(
        {
            AFFINITY: "ps-some,worker-another-some;ps-some,chief-kk",
            ANTI_AFFINITY: "ps-some;worker-another-some,chief-kk",
            TASK_ORDER: "ps-some,worker-another-some,chief-kk,evaluator-tt",
        },
        DASHED_ROLES,
        TaskTopology(
            affinity=(("ps-some", "worker-another-some"), ("ps-some", "chief-kk")),
            anti_affinity=(("ps-some",), ("worker-another-some", "chief-kk")),
            task_order=("ps-some", "worker-another-some", "chief-kk", "evaluator-tt"),
        ),
        [],
        id="task-names-with-dashes",
    ),
    pytest.param({}, SIX_ROLES, None, [], id="nil-annotation"),
    pytest.param(
        {
            AFFINITY: "$%GF$^trtqwrg^",
            ANTI_AFFINITY: "ps;worker,chief;#@FGEW^vfa897bgs;;",
            TASK_ORDER: "ps,worker,chief,evaluator,,,",
        },
        SIX_ROLES,
        TaskTopology(
            affinity=(("$%GF$^trtqwrg^",),),
            anti_affinity=(("ps",), ("worker", "chief"), ("#@FGEW^vfa897bgs",), ("",), ("",)),
            task_order=("ps", "worker", "chief", "evaluator", "", "", ""),
        ),
        [AFFINITY, ANTI_AFFINITY],
        id="invalid-annotation",
    ),
    pytest.param(
        {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps", TASK_ORDER: "ps,worker,chief"},
        {"ps", "worker"},
        TaskTopology(
            affinity=(("ps", "worker"),),
            anti_affinity=(("ps",),),
            task_order=("ps", "worker", "chief"),
        ),
        [TASK_ORDER],
        id="invalid-task-name",
    ),
    pytest.param(
        {AFFINITY: "ps,worker", ANTI_AFFINITY: "ps,ps", TASK_ORDER: "ps,worker"},
        {"ps", "worker"},
        TaskTopology(
            affinity=(("ps", "worker"),), anti_affinity=(("ps", "ps"),), task_order=("ps", "worker")
        ),
        [ANTI_AFFINITY],
        id="duplicate-task-name",
    ),
    pytest.param(
        {
            AFFINITY: "ps,worker;ps,,chief,;",
            ANTI_AFFINITY: "ps;worker,chief;;;",
            TASK_ORDER: "ps,worker,chief,evaluator,,,",
        },
        SIX_ROLES,
        TaskTopology(
            affinity=(("ps", "worker"), ("ps", "", "chief", ""), ("",)),
            anti_affinity=(("ps",), ("worker", "chief"), ("",), ("",), ("",)),
            task_order=("ps", "worker", "chief", "evaluator", "", "", ""),
        ),
        [],
        id="redundant-punctuations",
    ),
]


@pytest.mark.parametrize(("annotations", "roles", "topology", "invalid"), READ_CASES)
def test_annotations_read_and_checked_as_volcano(
    annotations: Mapping[str, str],
    roles: set[str],
    topology: TaskTopology | None,
    invalid: list[str],
) -> None:
    assert taskaffinity.read(annotations) == topology
    if topology is not None:
        assert [key for key, _ in taskaffinity.problems(topology, roles)] == invalid


def test_problem_names_the_task() -> None:
    topology = TaskTopology(task_order=("ps", "worker", "chief"))
    assert taskaffinity.problems(topology, {"ps", "worker"}) == [
        (TASK_ORDER, "task 'chief' is not a task of the job (its tasks: ps, worker)")
    ]
    twice = TaskTopology(anti_affinity=(("ps", "ps"),))
    assert taskaffinity.problems(twice, {"ps"}) == [
        (ANTI_AFFINITY, "task 'ps' appears twice in the group 'ps,ps'")
    ]


def _job_manifest(annotations: Mapping[str, str], *tasks: str) -> Obj:
    return {
        "metadata": {"name": "tf", "annotations": dict(annotations)},
        "spec": {"tasks": [{"name": t, "replicas": 1} for t in tasks]},
    }


def test_admission_refuses_a_job_naming_a_task_it_lacks() -> None:
    job = _job_manifest({AFFINITY: "ps,worker;ps,chief"}, "ps", "worker")
    assert admission_rule.problems(job) == [
        f"metadata.annotations[{AFFINITY}]: task 'chief' is not a task of the job "
        "(its tasks: ps, worker)"
    ]
    assert admission_rule.problems(_job_manifest({AFFINITY: "ps,worker;"}, "ps", "worker")) == []
    assert admission_rule.problems(_job_manifest({}, "ps")) == []


# --- buckets and the task order (ConstructBucket, TaskOrderFn) ---------------------------------


def _task(name: str, role: str, node: str | None = None, cpu: int = 1000) -> TaskInfo:
    return TaskInfo(
        key=PodKey(f"default/{name}"),
        job=JobKey("default/tf"),
        role=role,
        request=Resources.of(milli_cpu=cpu, memory=1 << 30),
        node_name=NodeName(node) if node else None,
        status=TaskStatus.RUNNING if node else TaskStatus.PENDING,
    )


def _job(**annotations: str) -> JobInfo:
    named = {
        {"affinity": AFFINITY, "anti": ANTI_AFFINITY, "order": TASK_ORDER}[k]: v
        for k, v in annotations.items()
    }
    return JobInfo(
        key=JobKey("default/tf"), queue=QueueName("default"), task_topology=taskaffinity.read(named)
    )


def _buckets(job: JobInfo, tasks: list[TaskInfo]) -> tasktopology.JobBuckets:
    built = tasktopology.build(job, tasks)
    assert built is not None
    return built


def test_affinity_puts_the_roles_in_one_bucket() -> None:
    tasks = [_task("ps-0", "ps"), _task("worker-0", "worker"), _task("worker-1", "worker")]
    buckets = _buckets(_job(affinity="ps,worker"), tasks)
    assert set(buckets.bucket_of.values()) == {0}
    assert buckets.largest == 3


def test_self_anti_affinity_gives_each_task_a_bucket() -> None:
    tasks = [_task(f"ps-{i}", "ps") for i in range(3)]
    buckets = _buckets(_job(anti="ps"), tasks)
    assert sorted(buckets.bucket_of.values()) == [0, 1, 2]
    assert buckets.largest == 1


def test_inter_anti_affinity_separates_the_roles_and_balances_by_request() -> None:
    """ps and worker apart: the workers, unrelated to each other, share the one bucket without
    a ps; a chief that no group names stays out of every bucket."""
    tasks = [
        _task("ps-0", "ps"),
        _task("worker-0", "worker"),
        _task("worker-1", "worker"),
        _task("chief-0", "chief"),
    ]
    buckets = _buckets(_job(anti="ps,worker"), tasks)
    of = {k.split("/")[1]: v for k, v in buckets.bucket_of.items()}
    assert of["ps-0"] != of["worker-0"]
    assert of["worker-0"] == of["worker-1"]  # no affinity either way: the least-asking bucket
    assert "chief-0" not in of
    assert buckets.order(tasks[3]) == tasktopology.OUT_OF_BUCKET


def test_placed_tasks_make_a_bucket_per_node_that_pending_ones_join() -> None:
    """ps-0 runs on n1: its bucket is n1's, and the pending worker it likes joins it."""
    tasks = [_task("ps-0", "ps", node="n1"), _task("worker-0", "worker")]
    buckets = _buckets(_job(affinity="ps,worker"), tasks)
    assert (
        buckets.bucket_of[PodKey("default/worker-0")] == buckets.bucket_of[PodKey("default/ps-0")]
    )


def test_task_order_puts_buckets_first_bigger_first_then_by_rank() -> None:
    """The TaskOrderFn comment's shape. ps keep apart (each its own bucket), workers together:
    the workers join the first ps's bucket (no relation, least asked: the first), which is then
    the bigger; in it the ps first (self anti-affinity ranks above self affinity); then the
    smaller bucket; the chief, which no group names, last."""
    tasks = [
        _task("chief-0", "chief"),
        _task("ps-0", "ps"),
        _task("ps-1", "ps"),
        *(_task(f"worker-{i}", "worker") for i in range(3)),
    ]
    buckets = _buckets(_job(affinity="worker", anti="ps"), tasks)
    ordered = sorted(tasks, key=lambda t: (buckets.order(t), t.key))
    assert [t.key.split("/")[1] for t in ordered] == [
        "ps-0",
        "worker-0",
        "worker-1",
        "worker-2",
        "ps-1",
        "chief-0",
    ]


def test_no_pending_task_or_no_annotation_or_a_bad_name_builds_nothing() -> None:
    placed = [_task("ps-0", "ps", node="n1")]
    assert tasktopology.build(_job(affinity="ps"), placed) is None
    assert tasktopology.build(_job(), [_task("ps-0", "ps")]) is None
    assert tasktopology.build(_job(affinity="ps,chief"), [_task("ps-0", "ps")]) is None


# --- node scores (calcBucketScore, NodeOrderFn) -----------------------------------------------


def test_scores_follow_the_bucket_and_avoid_the_roles_to_avoid() -> None:
    nodes = [make_node(n, cpu="8").info() for n in ("n0", "n1", "n2")]
    ps = _task("ps-0", "ps", node="n1")
    worker = _task("worker-0", "worker")
    together = _buckets(_job(affinity="ps,worker"), [ps, worker])
    # n1 holds the bucket's ps: 1 + the one pending task; the others 0 + 1; x100 / size 2.
    assert together.scores(worker, nodes, [ps, worker], 1) == {"n0": 50, "n1": 100, "n2": 50}
    apart = _buckets(_job(anti="ps,worker"), [ps, worker])
    assert apart.scores(worker, nodes, [ps, worker], 10) == {"n0": 1000, "n1": 0, "n2": 1000}


def test_a_node_that_cannot_hold_the_bucket_scores_less_and_one_too_small_nothing() -> None:
    """Four pending 3-CPU workers in one bucket: a 8-CPU node holds two, so two others are taken
    out (-2); a 2-CPU node cannot hold even the task (no score)."""
    tasks = [_task(f"worker-{i}", "worker", cpu=3000) for i in range(4)]
    buckets = _buckets(_job(affinity="worker"), tasks)
    nodes = [make_node("big", cpu="8").info(), make_node("small", cpu="2").info()]
    assert buckets.scores(tasks[0], nodes, tasks, 1) == {"big": 50}  # (4 - 2) x 100 / 4


# --- whole sessions ------------------------------------------------------------------------------

SPREADING: Final = conf.CALDERA_DEFAULT  # nodeorder's least-allocated spreads
# binpack weighted to outweigh nodeorder's spreading, so that alone it packs.
PACKING: Final = (
    conf.CALDERA_DEFAULT + "  - name: binpack\n    arguments:\n      binpack.weight: 10\n"
)


def _with_plugin(text: str, weight: int | None = 10, **switches: bool) -> str:
    entry = "  - name: task-topology\n"
    entry += "".join(f"    {k}: {str(v).lower()}\n" for k, v in switches.items())
    if weight is not None:
        entry += f"    arguments:\n      task-topology.weight: {weight}\n"
    return text + entry


def _roles_job(annotations: Mapping[str, str], roles: Mapping[str, int]) -> tuple[Obj, list[Obj]]:
    """PodGroup `tf` (minMember every task) with `roles[r]` pending 1-CPU pods `tf-<r>-<i>`."""
    group = make_podgroup("tf", sum(roles.values()))
    group["metadata"]["annotations"] = dict(annotations)
    pods = [
        make_pod(f"tf-{role}-{i}", group="tf").role(role).obj()
        for role, count in roles.items()
        for i in range(count)
    ]
    return group, pods


def _placed(text: str, annotations: Mapping[str, str], roles: Mapping[str, int]) -> list[Any]:
    """(pod, node) in commit order."""
    jobs = [_roles_job(annotations, roles)]
    result = run_session(snapshot(make_nodes(3, cpu="8"), gangs=jobs), conf.load(text).session)
    return [(p.pod.split("/")[1], p.node) for p in result.placements]


PS_WORKERS: Final = {"ps": 1, "worker": 2}


def test_affinity_packs_the_roles_where_nodeorder_alone_spreads_them() -> None:
    spread = _placed(SPREADING, {AFFINITY: "ps,worker"}, PS_WORKERS)
    assert len({node for _, node in spread}) == 3  # without the plugin: one per node
    packed = _placed(_with_plugin(SPREADING), {AFFINITY: "ps,worker"}, PS_WORKERS)
    assert len({node for _, node in packed}) == 1, packed


def test_anti_affinity_spreads_the_roles_where_binpack_alone_packs_them() -> None:
    annotations = {ANTI_AFFINITY: "ps,worker"}
    assert len({n for _, n in _placed(PACKING, annotations, PS_WORKERS)}) == 1
    placed = dict(_placed(_with_plugin(PACKING), annotations, PS_WORKERS))
    assert placed["tf-ps-0"] not in {placed["tf-worker-0"], placed["tf-worker-1"]}, placed
    self_anti = dict(_placed(_with_plugin(PACKING), {ANTI_AFFINITY: "worker"}, {"worker": 3}))
    assert len(set(self_anti.values())) == 3, self_anti


def test_task_order_places_its_first_role_first() -> None:
    plain = _placed(_with_plugin(SPREADING), {AFFINITY: "ps,worker"}, PS_WORKERS)
    assert [pod for pod, _ in plain] == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    ordered = {AFFINITY: "ps,worker", TASK_ORDER: "worker,ps"}
    placed = _placed(_with_plugin(SPREADING), ordered, PS_WORKERS)
    assert [pod for pod, _ in placed] == ["tf-worker-0", "tf-worker-1", "tf-ps-0"]
    switched_off = _with_plugin(SPREADING, enableTaskOrder=False)
    assert _placed(switched_off, ordered, PS_WORKERS)[0][0] == "tf-ps-0"


def test_no_annotation_changes_nothing() -> None:
    assert _placed(_with_plugin(SPREADING), {}, PS_WORKERS) == _placed(SPREADING, {}, PS_WORKERS)


def test_plugin_not_listed_changes_nothing() -> None:
    annotations = {AFFINITY: "ps,worker", TASK_ORDER: "worker,ps"}
    assert _placed(SPREADING, annotations, PS_WORKERS) == _placed(SPREADING, {}, PS_WORKERS)


def test_node_order_switched_off_scores_nothing() -> None:
    text = _with_plugin(SPREADING, enableNodeOrder=False)
    placed = _placed(text, {AFFINITY: "ps,worker"}, PS_WORKERS)
    assert len({node for _, node in placed}) == 3


def test_an_invalid_topology_is_ignored_in_the_session() -> None:
    """A PodGroup made without a Job (no webhook check) naming a task it lacks: as Volcano."""
    bad = {AFFINITY: "ps,worker;chief"}
    assert _placed(_with_plugin(SPREADING), bad, PS_WORKERS) == _placed(SPREADING, {}, PS_WORKERS)


# --- configuration --------------------------------------------------------------------------------


def test_configuration_loads_with_weight_and_switches() -> None:
    session = conf.load(_with_plugin(SPREADING, weight=None)).session
    assert session.scoring.task_topology == 1
    assert "task-topology" in session.speakers(Point.TASK_ORDER)
    off = conf.load(_with_plugin(SPREADING, enableNodeOrder=False, enableTaskOrder=False)).session
    assert off.scoring.task_topology == 0
    assert "task-topology" not in off.speakers(Point.TASK_ORDER)
    assert conf.load(SPREADING).session.scoring.task_topology == 0


@pytest.mark.parametrize("weight", ["-1", "'x'", "1.5"])
def test_a_weight_that_is_no_whole_number_at_least_zero_is_refused(weight: str) -> None:
    entry = f"  - name: task-topology\n    arguments:\n      task-topology.weight: {weight}\n"
    with pytest.raises(ValueError, match=r"argument task-topology\.weight must be a"):
        conf.load(SPREADING + entry)
