"""The Job rules that read only the Job: dependsOn a DAG, known plugins, what an UPDATE changes."""

from __future__ import annotations

import copy
from typing import Any

import cel
import pytest

from admission import jobspec
from models import crd, plugins


def _job(*tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"queue": "default", "minAvailable": 1, "tasks": list(tasks), **spec},
    }


def _task(name: str, *deps: str, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"name": name, "replicas": replicas, "template": {}, **extra}
    if deps:
        task["dependsOn"] = {"name": list(deps)}
    return task


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        ((_task("a"), _task("b", "a")), []),
        ((_task("a"), _task("b"), _task("c", "a", "b")), []),
        ((_task("a"), _task("b", "a"), _task("c", "b")), []),
        (
            (_task("a", "a"),),
            ['spec.tasks[0].dependsOn.name: task "a" depends on itself'],
        ),
        (
            (_task("a"), _task("b", "x")),
            [
                'spec.tasks[1].dependsOn.name: "x" is not a task of this job, so task "b" '
                "could never start"
            ],
        ),
        (
            (_task("a", "b"), _task("b", "a")),
            [
                "spec.tasks[0].dependsOn.name: the tasks' dependencies form a cycle "
                '("a" → "b" → "a"), so none of them could start: dependsOn must form a '
                "directed acyclic graph"
            ],
        ),
        (
            (_task("z"), _task("a", "c"), _task("b", "a"), _task("c", "b")),
            [
                "spec.tasks[1].dependsOn.name: the tasks' dependencies form a cycle "
                '("a" → "c" → "b" → "a"), so none of them could start: dependsOn must form a '
                "directed acyclic graph"
            ],
        ),
    ],
    ids=["chain", "fan-in", "line", "self", "unknown", "two-cycle", "three-cycle"],
)
def test_depends_on_must_name_tasks_of_the_job_and_form_a_dag(
    tasks: tuple[dict[str, Any], ...], expected: list[str]
) -> None:
    assert jobspec.dependency_problems(_job(*tasks)) == expected


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ({"svc": [], "env": [], "ssh": ["--no-root"]}, []),  # Caldera's first three
        (
            {"nope": []},
            [
                'spec.plugins: unable to find job plugin "nope" '
                f"(plugins: {', '.join(sorted(plugins.IMPLEMENTED))})"
            ],
        ),
    ],
    ids=["implemented", "unknown"],
)
def test_every_plugin_is_one_caldera_runs(
    plugins: dict[str, list[str]], expected: list[str]
) -> None:
    assert jobspec.plugin_problems(_job(_task("a"), plugins=plugins)) == expected


def test_a_volcano_plugin_caldera_does_not_run_is_refused_with_its_own_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobspec.plugins, "IMPLEMENTED", frozenset({"env", "ssh", "svc"}))
    monkeypatch.setattr(jobspec.plugins, "VOLCANO_ONLY", frozenset({"pytorch"}))
    assert jobspec.plugin_problems(_job(_task("a"), plugins={"pytorch": []})) == [
        'spec.plugins: plugin "pytorch" is one of Volcano\'s that Caldera does not run yet '
        "(it runs env, ssh, svc)"
    ]


@pytest.mark.parametrize(
    ("args", "tasks", "expected"),
    [
        ([], ("master", "worker"), []),
        (["--master=launcher"], ("launcher", "worker"), []),
        (["-master", "launcher"], ("launcher", "worker"), []),  # Go's flag spellings
        (["--np=4", "--master=launcher"], ("master", "worker"), []),  # parsing stops at --np
        (
            ["--master=launcher"],
            ("master", "worker"),
            ['spec.plugins.mpi: the mpi master task "launcher" is not a task of this job'],
        ),
    ],
    ids=["default-master", "named-master", "separate-value", "stops-early", "missing-master"],
)
def test_the_mpi_master_task_must_exist(
    args: list[str], tasks: tuple[str, ...], expected: list[str]
) -> None:
    job = _job(*(_task(t) for t in tasks), plugins={"mpi": args, "ssh": [], "svc": []})
    assert jobspec.plugin_problems(job) == expected


OLD = _job(
    _task("master", minAvailable=1),
    _task("worker", replicas=4, minAvailable=2),
    minAvailable=3,
    priorityClassName="low",
    volumes=[{"mountPath": "/data", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}],
)


def _edited(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    new = copy.deepcopy(OLD)
    node: Any = new
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return new


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "minAvailable"), 5),
        (("spec", "priorityClassName"), "high"),
        (("spec", "tasks", 1, "replicas"), 8),
        (("spec", "tasks", 1, "minAvailable"), 4),
        (("metadata", "labels"), {"team": "a"}),
        (("spec", "volumes", 0, "volumeClaimName"), "j-volume-abcde"),  # the controller's
    ],
    ids=["minAvailable", "priorityClassName", "replicas", "task-minAvailable", "labels", "claim"],
)
def test_an_update_may_change_what_volcano_lets_change(
    path: tuple[str | int, ...], value: Any
) -> None:
    assert jobspec.update_problems(OLD, _edited(path, value)) == []


NOT_ALLOWED = (
    "job updates may not change fields other than minAvailable, priorityClassName, and "
    "tasks[*].replicas and tasks[*].minAvailable"
)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("spec", "maxRetry"), 9, f"spec.maxRetry: {NOT_ALLOWED}"),
        (("spec", "ttlSecondsAfterFinished"), 60, f"spec.ttlSecondsAfterFinished: {NOT_ALLOWED}"),
        (("spec", "tasks", 0, "template"), {"spec": {}}, f"spec.tasks[0].template: {NOT_ALLOWED}"),
        (("spec", "tasks", 1, "name"), "w", f"spec.tasks[1].name: {NOT_ALLOWED}"),
        (
            ("spec", "tasks", 1, "minAvailable"),
            5,
            "spec.tasks[1].minAvailable: must be at most the task's replicas (4)",
        ),
        (
            ("spec", "minAvailable"),
            6,
            "spec.minAvailable: job 'minAvailable' must not be greater than total replicas (5)",
        ),
        (
            ("spec", "tasks"),
            [_task("master")],
            "spec.tasks: job updates may not add or remove tasks",
        ),
    ],
    ids=["maxRetry", "ttl", "template", "task-name", "task-min", "job-min", "tasks-removed"],
)
def test_an_update_of_anything_else_is_refused_naming_the_field(
    path: tuple[str | int, ...], value: Any, expected: str
) -> None:
    assert jobspec.update_problems(OLD, _edited(path, value)) == [expected]


def test_a_create_reports_its_dependency_and_plugin_problems_together() -> None:
    job = _job(_task("a", "a"), plugins={"nope": []})
    problems = jobspec.create_problems(job)
    assert [p.split(":")[0] for p in problems] == ["spec.tasks[0].dependsOn.name", "spec.plugins"]


CLAIM = {"accessModes": ["ReadWriteOnce"]}
CONFLICT = (
    "conflict: to use an existing PVC give only volumeClaimName; to create a new PVC give only "
    "volumeClaim"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)


@pytest.mark.parametrize(
    ("volumes", "expected"),
    [
        pytest.param([], [], id="no-volumes"),
        pytest.param(
            [
                {"mountPath": "/a", "volumeClaim": CLAIM},
                {"mountPath": "/b", "volumeClaimName": "x"},
            ],
            [],
            id="claim-to-create-and-claim-to-use",
        ),
        pytest.param(
            [{"volumeClaim": CLAIM}],
            ["spec.volumes[0].mountPath: mountPath is required"],
            id="no-mountPath",
        ),
        pytest.param(
            [
                {"mountPath": "/a", "volumeClaim": CLAIM},
                {"mountPath": "/a", "volumeClaimName": "x"},
            ],
            [
                'spec.volumes[1].mountPath: duplicated mountPath "/a" (spec.volumes[0] mounts '
                "there too)"
            ],
            id="duplicated-mountPath",
        ),
        pytest.param(
            [{"mountPath": "/a"}],
            ["spec.volumes[0]: either volumeClaim or volumeClaimName must be specified"],
            id="neither",
        ),
        pytest.param(
            [{"mountPath": "/a", "volumeClaim": CLAIM, "volumeClaimName": "x"}],
            [f"spec.volumes[0].volumeClaimName: {CONFLICT}"],
            id="both",
        ),
        pytest.param(
            [{"mountPath": "/a", "volumeClaimName": "Data_1"}],
            [f'spec.volumes[0].volumeClaimName: Invalid value: "Data_1": {SUBDOMAIN}'],
            id="claim-name-not-a-subdomain",
        ),
        pytest.param(
            [{"mountPath": "/a", "volumeClaimName": "d" * 254}],
            [f'spec.volumes[0].volumeClaimName: Invalid value: "{"d" * 254}": {SUBDOMAIN}'],
            id="claim-name-too-long",
        ),
    ],
)
def test_volumes_on_create_are_volcanos_validate_io(
    volumes: list[dict[str, Any]], expected: list[str]
) -> None:
    job = _job(_task("a"), volumes=volumes)
    assert jobspec.volume_problems(job) == expected
    assert [p for p in jobspec.create_problems(job) if p.startswith("spec.volumes")] == expected


NAMED = _edited(("spec", "volumes", 0, "volumeClaimName"), "j-pvc-0123456789ab")


@pytest.mark.parametrize(
    ("old", "value", "expected"),
    [
        pytest.param(OLD, "j-pvc-0123456789ab", [], id="controller-fills-it-in"),
        pytest.param(NAMED, "j-pvc-0123456789ab", [], id="unchanged"),
        pytest.param(
            NAMED,
            "j-pvc-other",
            [
                'spec.volumes[0].volumeClaimName: the claim name "j-pvc-0123456789ab" may not '
                "change: pods mount that claim"
            ],
            id="changed",
        ),
        pytest.param(
            NAMED,
            None,
            [
                'spec.volumes[0].volumeClaimName: the claim name "j-pvc-0123456789ab" may not '
                "change: pods mount that claim"
            ],
            id="removed",
        ),
        pytest.param(
            OLD,
            "Not-A-Name",
            [f'spec.volumes[0].volumeClaimName: Invalid value: "Not-A-Name": {SUBDOMAIN}'],
            id="filled-in-with-no-pvc-name",
        ),
    ],
)
def test_an_update_admits_the_controllers_claim_name_and_nothing_more(
    old: dict[str, Any], value: str | None, expected: list[str]
) -> None:
    new = copy.deepcopy(old)
    volume = new["spec"]["volumes"][0]
    if value is None:
        volume.pop("volumeClaimName", None)
    else:
        volume["volumeClaimName"] = value
    assert jobspec.update_problems(old, new) == expected


def test_an_update_may_not_name_a_claim_for_a_volume_without_volume_claim() -> None:
    old = _job(_task("a"), volumes=[{"mountPath": "/a", "volumeClaimName": "x"}])
    new = copy.deepcopy(old)
    new["spec"]["volumes"][0]["volumeClaimName"] = "y"
    (problem,) = jobspec.update_problems(old, new)
    assert problem.startswith("spec.volumes: job updates may not change fields")


@pytest.mark.parametrize(
    "partition",
    [
        pytest.param({"totalPartitions": 2, "partitionSize": 1}, id="no-topology"),
        pytest.param(
            {"totalPartitions": 2, "partitionSize": 1, "networkTopology": {"mode": "hard"}},
            id="mode-only",
        ),
        pytest.param(
            {
                "totalPartitions": 2,
                "partitionSize": 1,
                "minPartitions": 1,
                "networkTopology": {"mode": "soft", "highestTierAllowed": 1},
            },
            id="tier-number",
        ),
        pytest.param(
            {
                "totalPartitions": 2,
                "partitionSize": 1,
                "networkTopology": {"mode": "hard", "highestTierName": "rack"},
            },
            id="tier-name",
        ),
    ],
)
def test_a_partitions_own_network_topology_is_admitted(partition: dict[str, Any]) -> None:
    """Each partition is placed within its own tier, through the PodGroup's sub-groups."""
    job = _job(_task("a"), _task("b", replicas=2, partitionPolicy=partition))
    assert jobspec.partition_problems(job) == []
    assert jobspec.create_problems(job) == []


def _job_rules(*path: str) -> list[dict[str, str]]:
    """The CEL rules the generated Job CRD declares at `path` below the Job's spec."""
    (spec,) = (s for s in crd.CRDS if s.kind == "Job")
    node = crd.openapi_schema(spec)["properties"]["spec"]
    for name in path:
        node = node["items"] if name == "[]" else node["properties"][name]
    rules: list[dict[str, str]] = node.get("x-kubernetes-validations", [])
    return rules


@pytest.mark.parametrize(
    ("topology", "refused"),
    [
        pytest.param({"highestTierAllowed": 1, "highestTierName": "rack"}, True, id="both"),
        pytest.param({"highestTierAllowed": 1}, False, id="number"),
        pytest.param({"highestTierName": "rack"}, False, id="name"),
        pytest.param({"mode": "soft"}, False, id="neither"),
    ],
)
def test_a_partition_topology_with_both_tier_limits_is_refused_by_the_crd(
    topology: dict[str, Any], refused: bool
) -> None:
    """Volcano's validateNetworkTopology on a partition: its CEL rule, not the webhook."""
    rules = _job_rules("tasks", "[]", "partitionPolicy", "networkTopology")
    failed = [r["message"] for r in rules if not cel.evaluate(r["rule"], {"self": topology})]
    assert failed == (["highestTierAllowed and highestTierName must not both be set"] * refused)
    partition = {"totalPartitions": 1, "partitionSize": 1, "networkTopology": topology}
    assert jobspec.partition_problems(_job(_task("a", partitionPolicy=partition))) == []


@pytest.mark.parametrize(
    ("partition", "min_available", "expected"),
    [
        pytest.param({"minPartitions": 2}, 4, [], id="equal"),
        pytest.param({"minPartitions": 2}, None, [], id="defaulted"),
        pytest.param({}, 3, [], id="no-min-partitions"),
        pytest.param({"minPartitions": 0}, 3, [], id="min-partitions-zero"),
        pytest.param(
            {"minPartitions": 1},
            4,
            [
                "spec.tasks[1].minAvailable: 'minAvailable' (4) is not equal to "
                "minPartitions*partitionSize (2) in task 'b'"
            ],
            id="differs",
        ),
    ],
)
def test_min_available_is_min_partitions_times_partition_size(
    partition: dict[str, Any], min_available: int | None, expected: list[str]
) -> None:
    """Volcano's validatePartitionPolicy, checked only when minPartitions is set."""
    policy = {"totalPartitions": 3, "partitionSize": 2, **partition}
    extra = {} if min_available is None else {"minAvailable": min_available}
    job = _job(_task("a"), _task("b", replicas=6, partitionPolicy=policy, **extra))
    assert jobspec.partition_problems(job) == expected
    assert [p for p in jobspec.create_problems(job) if "minPartitions" in p] == expected


def test_an_update_may_not_break_the_partitions_minimum() -> None:
    policy = {"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2}
    old = _job(_task("w", replicas=6, minAvailable=4, partitionPolicy=policy))
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["minAvailable"] = 5
    assert jobspec.update_problems(old, new) == [
        "spec.tasks[0].minAvailable: 'minAvailable' (5) is not equal to "
        "minPartitions*partitionSize (4) in task 'w'"
    ]
    assert jobspec.update_problems(old, copy.deepcopy(old)) == []


def test_an_update_of_a_job_stored_before_the_check_is_not_held_to_it() -> None:
    """A claim name the controller fills in on a job that already broke the rule goes through."""
    policy = {"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2}
    volume = {"mountPath": "/d", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}
    old = _job(_task("w", replicas=6, minAvailable=5, partitionPolicy=policy), volumes=[volume])
    new = copy.deepcopy(old)
    new["spec"]["volumes"][0]["volumeClaimName"] = "j-pvc-0123456789ab"
    assert jobspec.update_problems(old, new) == []
