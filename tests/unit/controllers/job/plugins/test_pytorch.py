"""pytorch gives every container its rendezvous env and port, as Volcano's plugin (cases from
its pytorch_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.plugins import pytorch
from tests.builders import make_job
from tests.unit.controllers.job.plugins import pod, with_fields

pytestmark = pytest.mark.unit

C = {"name": "c", "image": "i"}
INIT = {"name": "init", "image": "i"}
PORT = {"name": "pytorchjob-port", "containerPort": 23456}
ADDR = "test-pytorch-master-0.test-pytorch"


def _env(world: int, rank: int | None, addr: str = ADDR, port: int = 23456) -> list[Any]:
    env = [
        {"name": "MASTER_ADDR", "value": addr},
        {"name": "MASTER_PORT", "value": str(port)},
        {"name": "WORLD_SIZE", "value": str(world)},
    ]
    return env + ([{"name": "RANK", "value": str(rank)}] if rank is not None else [])


def _job(workers: int = 1, extra: int = 0) -> Any:
    builder = make_job("test-pytorch").task("master").task("worker", replicas=workers)
    return builder.task("extra", replicas=extra) if extra else builder


def _wait(script_addr: str = ADDR, **opts: Any) -> dict[str, Any]:
    options = pytorch.Options(wait_master_enabled=True, **opts)
    return {
        "name": "wait-for-master",
        "image": options.wait_master_image,
        "command": ["sh", "-c", pytorch.wait_script(script_addr, options)],
    }


CASES = [
    pytest.param(
        make_job("test-pytorch").task("worker"),
        [],
        "worker",
        0,
        pod(C),
        pod(C),
        id="no-master-task-untouched",
    ),
    pytest.param(
        _job(),
        [],
        "master",
        0,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(2, 0))),
        id="master",
    ),
    pytest.param(
        _job(),
        [],
        "master",
        0,
        pod(with_fields(C, ports=[PORT])),
        pod(with_fields(C, ports=[PORT], env=_env(2, 0))),
        id="master-port-already-open",
    ),
    pytest.param(
        _job(workers=2, extra=2),
        [],
        "master",
        0,
        pod(with_fields(C, ports=[{"name": "pytorchjob-port", "containerPort": 123}])),
        pod(
            with_fields(
                C,
                ports=[{"name": "pytorchjob-port", "containerPort": 123}, PORT],
                env=_env(3, 0),
            )
        ),
        id="world-size-counts-master-and-worker-only",
    ),
    pytest.param(
        _job(workers=2, extra=2),
        [],
        "worker",
        0,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(3, 1))),
        id="worker-0-rank-1",
    ),
    pytest.param(
        _job(workers=2, extra=2),
        [],
        "worker",
        1,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(3, 2))),
        id="worker-1-rank-2",
    ),
    pytest.param(
        _job(workers=2, extra=2),
        [],
        "extra",
        1,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(3, None))),
        id="other-task-no-rank",
    ),
    pytest.param(
        make_job("test-pytorch").task("master", replicas=2).task("worker"),
        [],
        "master",
        1,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(3, 0))),
        id="every-master-replica-rank-0",
    ),
    pytest.param(
        _job(),
        ["--port=5000", "--master=master"],
        "worker",
        0,
        pod(C, C | {"name": "side"}),
        pod(
            with_fields(C, ports=[PORT | {"containerPort": 5000}], env=_env(2, 1, port=5000)),
            with_fields(
                C, name="side", ports=[PORT | {"containerPort": 5000}], env=_env(2, 1, port=5000)
            ),
        ),
        id="port-flag-every-container",
    ),
    pytest.param(
        _job(),
        [],
        "worker",
        0,
        pod(C, init=[INIT]),
        pod(with_fields(C, ports=[PORT], env=_env(2, 1)), init=[INIT]),
        id="init-containers-untouched",
    ),
    pytest.param(
        make_job("test-pytorch")
        .task("master", template={"spec": {"containers": [C], "hostname": "m", "subdomain": "s"}})
        .task("worker"),
        [],
        "worker",
        0,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(2, 1, addr="m.s"))),
        id="master-template-hostname",
    ),
    pytest.param(
        _job(),
        ["--wait-master-enabled=true"],
        "worker",
        0,
        pod(C, init=[INIT]),
        pod(with_fields(C, ports=[PORT], env=_env(2, 1)), init=[INIT, _wait()]),
        id="wait-master-appended-on-worker",
    ),
    pytest.param(
        _job(),
        ["--wait-master-enabled=false"],
        "worker",
        0,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(2, 1))),
        id="wait-master-disabled",
    ),
    pytest.param(
        _job(),
        ["--wait-master-enabled"],
        "master",
        0,
        pod(C),
        pod(with_fields(C, ports=[PORT], env=_env(2, 0))),
        id="wait-master-not-on-master",
    ),
    pytest.param(
        _job(),
        ["--wait-master-enabled"],
        "worker",
        0,
        pod(C, init=[{"name": "wait-for-master", "image": "mine"}]),
        pod(
            with_fields(C, ports=[PORT], env=_env(2, 1)),
            init=[{"name": "wait-for-master", "image": "mine"}],
        ),
        id="wait-master-template-own-kept",
    ),
    pytest.param(
        _job(),
        ["--wait-master-enabled", "--wait-master-image=alpine:latest", "--wait-master-timeout=600"],
        "worker",
        0,
        pod(C),
        pod(
            with_fields(C, ports=[PORT], env=_env(2, 1)),
            init=[_wait(wait_master_image="alpine:latest", wait_master_timeout=600)],
        ),
        id="wait-master-image-and-timeout",
    ),
]


@pytest.mark.parametrize(("builder", "args", "task", "index", "pod", "want"), CASES)
def test_on_pod_create_matches_volcano_pytorch(
    builder: Any, args: list[str], task: str, index: int, pod: dict[str, Any], want: dict[str, Any]
) -> None:
    assert pytorch.on_pod_create(builder.build(), pod, task, index, args) == want


def test_wait_script_is_volcano_text() -> None:
    opts = pytorch.Options(wait_master_enabled=True, wait_master_timeout=600, port=29500)
    assert pytorch.wait_script("m-0.j", opts) == (
        'echo "Waiting for master node m-0.j:29500 to be ready..."\n'
        "TIMEOUT=600\n"
        "ELAPSED=0\n"
        "until { nc -z m-0.j 29500 || echo > /dev/tcp/m-0.j/29500; } 2>/dev/null; do\n"
        "  if [ $ELAPSED -ge $TIMEOUT ]; then\n"
        '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n'
        "    exit 1\n"
        "  fi\n"
        '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"\n'
        "  sleep 2\n"
        "  ELAPSED=$((ELAPSED + 2))\n"
        "done\n"
        'echo "Master node is ready!"'
    )


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param([], pytorch.Options(), id="defaults"),
        pytest.param(
            ["--master=m", "--worker=w", "--port=1", "--wait-master-enabled"],
            pytorch.Options(master="m", worker="w", port=1, wait_master_enabled=True),
            id="flags",
        ),
        pytest.param(
            ["--wait-master-timeout=soon", "--port=1"], pytorch.Options(), id="bad-int-stops"
        ),
    ],
)
def test_options_from_go_flags(args: list[str], want: pytorch.Options) -> None:
    assert pytorch.options(args)[0] == want
