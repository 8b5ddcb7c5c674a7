"""tensorflow writes TF_CONFIG as Volcano's plugin does (the exact JSON of its
tensorflow_test.go, and the rules around it)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.plugins import tensorflow
from tests.builders import make_job

pytestmark = pytest.mark.unit

C = {"name": "c", "image": "i"}
INIT = {"name": "init", "image": "i"}
TRAIN = make_job("train-123").task("ps", replicas=2).task("worker", replicas=2).task("chief")
TRAIN_CLUSTER = (
    '{"cluster":{"ps":["train-123-ps-0.train-123:5000","train-123-ps-1.train-123:5000"],'
    '"worker":["train-123-worker-0.train-123:5000","train-123-worker-1.train-123:5000"],'
    '"chief":["train-123-chief-0.train-123:5000"]},'
)


def _pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [dict(c) for c in containers]}
    if init is not None:
        spec["initContainers"] = [dict(c) for c in init]
    return {"metadata": {"name": "p"}, "spec": spec}


def _tf(value: str, container: dict[str, Any] = C) -> dict[str, Any]:
    return {
        **container,
        "env": [*(container.get("env") or []), {"name": "TF_CONFIG", "value": value}],
    }


CONFIG_CASES = [
    pytest.param(
        TRAIN, ["--port=5000"], "ps", 0, TRAIN_CLUSTER + '"task":{"type":"ps","index":0}}', id="ps"
    ),
    pytest.param(
        TRAIN,
        ["--port=5000"],
        "worker",
        0,
        TRAIN_CLUSTER + '"task":{"type":"worker","index":0}}',
        id="worker",
    ),
    pytest.param(
        TRAIN,
        ["--port=5000"],
        "chief",
        0,
        TRAIN_CLUSTER + '"task":{"type":"chief","index":0}}',
        id="chief",
    ),
    pytest.param(
        TRAIN,
        ["--port=5000"],
        "ps",
        1,
        TRAIN_CLUSTER + '"task":{"type":"ps","index":1}}',
        id="index-is-the-pods",
    ),
    pytest.param(
        make_job("j").task("worker", replicas=2).task("evaluator"),
        [],
        "evaluator",
        0,
        '{"cluster":{"worker":["j-worker-0.j:2222","j-worker-1.j:2222"],'
        '"evaluator":["j-evaluator-0.j:2222"]},"task":{"type":"evaluator","index":0}}',
        id="default-port-evaluator",
    ),
    pytest.param(
        make_job("j").task("worker", replicas=2).task("ps", replicas=0).task("extra"),
        [],
        "extra",
        0,
        '{"cluster":{"worker":["j-worker-0.j:2222","j-worker-1.j:2222"]},'
        '"task":{"type":"extra","index":0}}',
        id="empty-role-left-out-other-task-own-type",
    ),
    pytest.param(
        make_job("j").task("w", replicas=2).task("p"),
        ["--worker=w", "--ps=p", "--chief=none"],
        "w",
        1,
        '{"cluster":{"ps":["j-p-0.j:2222"],"worker":["j-w-0.j:2222","j-w-1.j:2222"]},'
        '"task":{"type":"worker","index":1}}',
        id="renamed-roles",
    ),
    pytest.param(
        make_job("j").task(
            "worker",
            replicas=2,
            template={"spec": {"containers": [C], "hostname": "h", "subdomain": "s"}},
        ),
        [],
        "worker",
        0,
        '{"cluster":{"worker":["h.s:2222","h.s:2222"]},"task":{"type":"worker","index":0}}',
        id="template-hostname-every-replica",
    ),
    pytest.param(
        make_job("j").task("worker", replicas=2),
        ["--ps=worker"],
        "worker",
        0,
        '{"cluster":{"ps":["j-worker-0.j:2222","j-worker-1.j:2222"]},'
        '"task":{"type":"worker","index":0}}',
        id="one-name-two-roles-cluster-ps-first-type-worker-first",
    ),
]


@pytest.mark.parametrize(("builder", "args", "task", "index", "value"), CONFIG_CASES)
def test_tf_config_matches_volcano_json(
    builder: Any, args: list[str], task: str, index: int, value: str
) -> None:
    want = _pod(_tf(value), _tf(value, C | {"name": "side"}), init=[INIT])
    pod = _pod(C, C | {"name": "side"}, init=[INIT])
    assert tensorflow.on_pod_create(builder.build(), pod, task, index, args) == want


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(make_job("j").task("worker"), id="one-task-one-replica"),
        pytest.param(make_job("j").task("chief"), id="one-chief"),
    ],
)
def test_stand_alone_job_untouched(builder: Any) -> None:
    assert tensorflow.on_pod_create(builder.build(), _pod(C), "worker", 0, []) == _pod(C)


def test_two_replicas_of_one_task_is_distributed() -> None:
    job = make_job("j").task("worker", replicas=2).build()
    got = tensorflow.on_pod_create(job, _pod(C), "worker", 1, [])
    value = '{"cluster":{"worker":["j-worker-0.j:2222","j-worker-1.j:2222"]},'
    assert got == _pod(_tf(value + '"task":{"type":"worker","index":1}}'))


def test_env_appended_after_template_env() -> None:
    job = TRAIN.build()
    pod = _pod(C | {"env": [{"name": "A", "value": "1"}]})
    got = tensorflow.on_pod_create(job, pod, "ps", 0, ["--port=5000"])
    value = TRAIN_CLUSTER + '"task":{"type":"ps","index":0}}'
    assert got == _pod(_tf(value, C | {"env": [{"name": "A", "value": "1"}]}))
