"""A Job's pod templates at admission: each problem named by its field, a valid one passes."""

from __future__ import annotations

from typing import Any

import pytest

from admission import templates

CONTAINER: dict[str, Any] = {
    "name": "main",
    "image": "busybox",
    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": 2}},
    "ports": [{"containerPort": 8080}],
}


def _job(pod: dict[str, Any]) -> dict[str, Any]:
    ok = {"name": "a", "template": {"spec": {"containers": [CONTAINER]}}}
    return {"spec": {"tasks": [ok, {"name": "b", "template": {"spec": pod}}]}}


def test_a_valid_template_passes() -> None:
    pod = {"restartPolicy": "OnFailure", "containers": [CONTAINER], "initContainers": [CONTAINER]}
    assert templates.problems(_job(pod)) == []


AT = "spec.tasks[1].template.spec"


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param({}, f"{AT}.containers: Required value", id="no-containers"),
        pytest.param({"containers": "main"}, f"{AT}.containers: Required value", id="not-a-list"),
        pytest.param(
            {"containers": ["main"]}, f"{AT}.containers[0]: Invalid value", id="not-an-object"
        ),
        pytest.param(
            {"containers": [{**CONTAINER, "name": "Main"}]},
            f'{AT}.containers[0].name: Invalid value: "Main"',
            id="name-not-dns",
        ),
        pytest.param(
            {"containers": [CONTAINER, CONTAINER]},
            f'{AT}.containers[1].name: Duplicate value: "main"',
            id="twin-names",
        ),
        pytest.param(
            {"containers": [{"name": "main"}]}, f"{AT}.containers[0].image: Required", id="no-image"
        ),
        pytest.param(
            {"containers": [{**CONTAINER, "resources": {"requests": {"cpu": "lots"}}}]},
            f'{AT}.containers[0].resources.requests.cpu: Invalid value: "lots"',
            id="quantity",
        ),
        pytest.param(
            {"containers": [{**CONTAINER, "ports": [{"containerPort": 70000}]}]},
            f"{AT}.containers[0].ports[0].containerPort: Invalid value: 70000",
            id="port",
        ),
        pytest.param(
            {"restartPolicy": "Sometimes", "containers": [CONTAINER]},
            f'{AT}.restartPolicy: Unsupported value: "Sometimes"',
            id="restart-policy",
        ),
        pytest.param(
            {"containers": [CONTAINER], "initContainers": [{"name": "init"}]},
            f"{AT}.initContainers[0].image: Required value",
            id="init-container",
        ),
    ],
)
def test_each_problem_names_its_field(pod: dict[str, Any], expected: str) -> None:
    (problem,) = templates.problems(_job(pod))
    assert problem.startswith(expected), problem


def test_every_problem_is_reported() -> None:
    pod = {"restartPolicy": "x", "containers": [{"name": "A"}]}
    assert len(templates.problems(_job(pod))) == 3
