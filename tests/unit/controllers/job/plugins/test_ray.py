"""ray writes the head and worker entrypoints, opens the head's ports and builds the head
Service, as Volcano's plugin (cases from its ray_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.plugins import ray, support
from tests.builders import make_job
from tests.unit.controllers.job.plugins import owned, owner_ref

pytestmark = pytest.mark.unit

HEAD_PORTS = [
    {"name": "gcs", "containerPort": 6379},
    {"name": "dashboard", "containerPort": 8265},
    {"name": "client-server", "containerPort": 10001},
]
HEAD_CMD = [
    "sh",
    "-c",
    "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 "
    "--ray-client-server-port=10001",
]


def _c(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray", **fields}


def _pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers)}}


CLUSTER = make_job("ray-cluster-worker").task("head").task("worker", replicas=2)

CASES = [
    pytest.param(
        CLUSTER,
        [],
        "head",
        _pod(_c("head")),
        _pod(_c("head", ports=HEAD_PORTS, command=HEAD_CMD)),
        id="head",
    ),
    pytest.param(
        CLUSTER,
        [],
        "worker",
        _pod(_c("worker", args=["--num-cpus=1"])),
        _pod(
            _c(
                "worker",
                args=["--num-cpus=1"],
                command=[
                    "sh",
                    "-c",
                    "ray start --block --address=ray-cluster-worker-head-0.ray-cluster-worker:6379",
                ],
            )
        ),
        id="worker-command-args-kept",
    ),
    pytest.param(
        make_job("ray-cluster-test").task("test-head"),
        ["--port=1234", "--dashboardPort=3456", "--clientPort=4567", "--head=test-head"],
        "test-head",
        _pod(_c("head", command=["python"])),
        _pod(
            _c(
                "head",
                command=[
                    "sh",
                    "-c",
                    "ray start --head --block --dashboard-host=0.0.0.0 --port=1234 "
                    "--dashboard-port=3456 --ray-client-server-port=4567",
                ],
                ports=[
                    {"name": "gcs", "containerPort": 1234},
                    {"name": "dashboard", "containerPort": 3456},
                    {"name": "client-server", "containerPort": 4567},
                ],
            )
        ),
        id="only-head-task-custom-ports",
    ),
    pytest.param(
        CLUSTER,
        [],
        "head",
        _pod(_c("head", ports=[{"name": "redis", "containerPort": 6379}]), _c("sidecar")),
        _pod(
            _c(
                "head",
                ports=[{"name": "redis", "containerPort": 6379}, *HEAD_PORTS[1:]],
                command=HEAD_CMD,
            ),
            _c("sidecar"),
        ),
        id="head-existing-port-kept-sidecar-untouched",
    ),
    pytest.param(
        CLUSTER,
        ["--headContainer=main", "--workerContainer=main"],
        "worker",
        _pod(_c("worker"), _c("main")),
        _pod(
            _c("worker"),
            _c(
                "main",
                command=[
                    "sh",
                    "-c",
                    "ray start --block --address=ray-cluster-worker-head-0.ray-cluster-worker:6379",
                ],
            ),
        ),
        id="worker-container-flag",
    ),
    pytest.param(
        CLUSTER.task("other"), [], "other", _pod(_c("head")), _pod(_c("head")), id="other-task"
    ),
    pytest.param(
        make_job("r")
        .task("head", template={"spec": {"containers": [_c("head")], "hostname": "h"}})
        .task("worker"),
        [],
        "worker",
        _pod(_c("worker")),
        _pod(_c("worker", command=["sh", "-c", "ray start --block --address=h.r:6379"])),
        id="head-template-hostname",
    ),
]


@pytest.mark.parametrize(("builder", "args", "task", "pod", "want"), CASES)
def test_on_pod_create_matches_volcano_ray(
    builder: Any, args: list[str], task: str, pod: dict[str, Any], want: dict[str, Any]
) -> None:
    assert ray.on_pod_create(builder.build(), pod, task, 0, args) == want


def test_job_without_head_task_refuses_every_pod() -> None:
    job = make_job("r", "ns").task("master").task("worker").build()
    with pytest.raises(
        support.PodRefused, match=r'job ns/r: spec.plugins.ray: .*no head task "head"'
    ):
        ray.on_pod_create(job, _pod(_c("worker")), "worker", 0, [])


@pytest.mark.parametrize(
    ("args", "ports"),
    [
        pytest.param([], (6379, 8265, 10001), id="defaults"),
        pytest.param(
            ["--port=1234", "--dashboardPort=3456", "--clientPort=4567"],
            (1234, 3456, 4567),
            id="flags",
        ),
        pytest.param(
            ["--port=1234", "--clientServerPort=4567", "--dashboardPort=3456"],
            (1234, 8265, 10001),
            id="user-guide-spelling-is-undefined-and-stops",
        ),
    ],
)
def test_head_service_selects_head_pods_three_named_ports(
    args: list[str], ports: tuple[int, int, int]
) -> None:
    job = owned(make_job("ray-cluster-job").task("head").task("worker", replicas=2))
    opts, _ = ray.options(args)
    names = ("gcs", "dashboard", "client-server")
    assert ray.head_service(job, opts) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "ray-cluster-job-head-svc",
            "namespace": "default",
            "ownerReferences": [owner_ref("ray-cluster-job")],
        },
        "spec": {
            "selector": {
                "volcano.sh/job-name": "ray-cluster-job",
                "volcano.sh/job-namespace": "default",
                "volcano.sh/task-spec": "head",
            },
            "ports": [
                {"name": n, "port": p, "targetPort": n, "protocol": "TCP"}
                for n, p in zip(names, ports, strict=True)
            ],
        },
    }


def test_head_service_selects_the_named_head_task() -> None:
    job = owned(make_job("r").task("boss"))
    opts, _ = ray.options(["--head=boss"])
    assert ray.head_service(job, opts)["spec"]["selector"]["volcano.sh/task-spec"] == "boss"
