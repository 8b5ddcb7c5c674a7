"""hcclrank records each pod's rank in `hccl/rankIndex`, as Volcano's plugin (cases from its
hcclrank_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.plugins import hcclrank
from tests.builders import make_job

pytestmark = pytest.mark.unit

C = {"name": "c", "image": "i"}
JOB = make_job("j").task("master", replicas=3).task("worker", replicas=2).task("ps")


def _pod(annotations: dict[str, str] | None = None, *containers: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"containers": list(containers or (C,))}}


def _rank(value: str) -> dict[str, str]:
    return {"hccl/rankIndex": value}


def _env(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"name": n, "value": v} for n, v in pairs]


CASES = [
    pytest.param(JOB, [], "worker", 1, _pod(_rank("1")), _pod(_rank("1")), id="annotation-kept"),
    pytest.param(
        JOB,
        [],
        "worker",
        1,
        _pod({}, C | {"env": _env(("RANK", "5"))}),
        _pod(_rank("5"), C | {"env": _env(("RANK", "5"))}),
        id="rank-env-used",
    ),
    pytest.param(
        JOB,
        [],
        "ps",
        0,
        _pod(None, C | {"env": _env(("OTHER", "x"))}, C | {"env": _env(("RANK", "1"))}),
        _pod(_rank("1"), C | {"env": _env(("OTHER", "x"))}, C | {"env": _env(("RANK", "1"))}),
        id="rank-env-of-second-container-any-task",
    ),
    pytest.param(JOB, [], "master", 2, _pod(), _pod(_rank("2")), id="master-its-index"),
    pytest.param(
        JOB,
        [],
        "worker",
        1,
        _pod({"a": "b"}),
        _pod({"a": "b"} | _rank("4")),
        id="worker-after-masters",
    ),
    pytest.param(JOB, [], "ps", 0, _pod(), _pod(), id="other-task-none"),
    pytest.param(
        make_job("j").task("worker", replicas=2),
        [],
        "worker",
        1,
        _pod(),
        _pod(_rank("1")),
        id="no-master-task-counts-zero",
    ),
    pytest.param(
        JOB,
        ["--master=ps", "--worker=master"],
        "master",
        2,
        _pod(),
        _pod(_rank("3")),
        id="renamed-tasks",
    ),
    pytest.param(
        JOB,
        [],
        "master",
        0,
        _pod(_rank("")),
        _pod(_rank("0")),
        id="empty-annotation-replaced",
    ),
    pytest.param(
        JOB,
        [],
        "worker",
        0,
        _pod(None, C | {"env": [{"name": "RANK", "valueFrom": {"fieldRef": {}}}]}),
        _pod(_rank("3"), C | {"env": [{"name": "RANK", "valueFrom": {"fieldRef": {}}}]}),
        id="rank-env-from-reference-ignored",
    ),
]


@pytest.mark.parametrize(("builder", "args", "task", "index", "pod", "want"), CASES)
def test_on_pod_create_matches_volcano_hcclrank(
    builder: Any, args: list[str], task: str, index: int, pod: dict[str, Any], want: dict[str, Any]
) -> None:
    assert hcclrank.on_pod_create(builder.build(), pod, task, index, args) == want


@pytest.mark.parametrize(
    ("containers", "want"),
    [
        pytest.param([C | {"env": _env(("RANK", "0"), ("OTHER", "v"))}], "0", id="first"),
        pytest.param(
            [C | {"env": _env(("OTHER", "v"))}, C | {"env": _env(("RANK", "1"))}], "1", id="second"
        ),
        pytest.param([C | {"env": _env(("OTHER", "v"))}], "", id="absent"),
        pytest.param([], "", id="no-containers"),
    ],
)
def test_env_rank_first_rank_of_any_container(containers: list[Any], want: str) -> None:
    assert hcclrank.env_rank({"spec": {"containers": containers}}) == want
