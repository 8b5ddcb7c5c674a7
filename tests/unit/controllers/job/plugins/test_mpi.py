"""mpi opens the ssh port everywhere and tells the master its workers, as Volcano's plugin."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.plugins import mpi
from models.plugins import MpiOptions
from tests.builders import make_job
from tests.unit.controllers.job.plugins import pod, with_fields

pytestmark = pytest.mark.unit

C = {"name": "c", "image": "i"}
INIT = {"name": "init", "image": "i"}
PORT_22 = {"name": "mpijob-port", "containerPort": 22}
HOSTS = "j-worker-0.j,j-worker-1.j"


def _hosts_env(value: str) -> list[dict[str, str]]:
    return [{"name": "MPI_HOST", "value": value}]


MASTER_WORKER = make_job("j").task("master").task("worker", replicas=2)
HOSTNAME_TEMPLATE = {"spec": {"containers": [C], "hostname": "w", "subdomain": "s"}}

CASES = [
    pytest.param(
        MASTER_WORKER,
        [],
        "master",
        pod(C, init=[INIT]),
        pod(
            with_fields(C, ports=[PORT_22], env=_hosts_env(HOSTS)),
            init=[with_fields(INIT, ports=[PORT_22], env=_hosts_env(HOSTS))],
        ),
        id="master-hosts-and-port-on-every-container",
    ),
    pytest.param(
        MASTER_WORKER,
        [],
        "worker",
        pod(C, init=[INIT]),
        pod(with_fields(C, ports=[PORT_22]), init=[with_fields(INIT, ports=[PORT_22])]),
        id="worker-port-only",
    ),
    pytest.param(
        MASTER_WORKER,
        ["--port=5000"],
        "worker",
        pod(C),
        pod(with_fields(C, ports=[{"name": "mpijob-port", "containerPort": 5000}])),
        id="port-flag",
    ),
    pytest.param(
        MASTER_WORKER,
        [],
        "worker",
        pod(with_fields(C, ports=[{"name": "sshd", "containerPort": 22}])),
        pod(with_fields(C, ports=[{"name": "sshd", "containerPort": 22}])),
        id="template-port-kept",
    ),
    pytest.param(
        make_job("j").task("fakeMaster").task("fakeWorker", replicas=2),
        [],
        "fakeMaster",
        pod(C),
        pod(with_fields(C, ports=[PORT_22])),
        id="task-not-named-master-is-not-master",
    ),
    pytest.param(
        make_job("j").task("mpimaster").task("mpiworker", replicas=2),
        ["--master=mpimaster", "--worker=mpiworker"],
        "mpimaster",
        pod(C),
        pod(with_fields(C, ports=[PORT_22], env=_hosts_env("j-mpiworker-0.j,j-mpiworker-1.j"))),
        id="named-master-and-worker",
    ),
    pytest.param(
        make_job("j").task("master"),
        [],
        "master",
        pod(C, init=[INIT]),
        pod(C, init=[INIT]),
        id="master-without-worker-task-untouched",
    ),
    pytest.param(
        make_job("j").task("master").task("worker", replicas=0),
        [],
        "master",
        pod(C),
        pod(with_fields(C, ports=[PORT_22], env=_hosts_env(""))),
        id="worker-task-of-no-replicas-empty-hosts",
    ),
    pytest.param(
        make_job("j").task("master").task("worker", replicas=3, template=HOSTNAME_TEMPLATE),
        [],
        "master",
        pod(C),
        pod(with_fields(C, ports=[PORT_22], env=_hosts_env("w.s"))),
        id="worker-template-hostname-listed-once",
    ),
    pytest.param(
        make_job("j").task("master").task("worker", replicas=1),
        [],
        "master",
        pod(with_fields(C, env=[{"name": "A", "value": "1"}])),
        pod(
            with_fields(
                C, ports=[PORT_22], env=[{"name": "A", "value": "1"}, *_hosts_env("j-worker-0.j")]
            )
        ),
        id="env-appended-after-template-env",
    ),
]


@pytest.mark.parametrize(("builder", "args", "task", "pod", "want"), CASES)
def test_on_pod_create_matches_volcano_mpi(
    builder: Any, args: list[str], task: str, pod: dict[str, Any], want: dict[str, Any]
) -> None:
    assert mpi.on_pod_create(builder.build(), pod, task, 0, args) == want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param([], MpiOptions(), id="defaults"),
        pytest.param(
            ["-master", "launcher", "--worker=w", "--port=2222"],
            MpiOptions(master="launcher", worker="w", port=2222),
            id="every-flag",
        ),
        pytest.param(["--master=a", "--master=b"], MpiOptions(master="b"), id="last-wins"),
        pytest.param(["--np=4", "--master=a"], MpiOptions(), id="unknown-flag-stops"),
    ],
)
def test_options_from_go_flags(args: list[str], want: MpiOptions) -> None:
    assert mpi.options(args)[0] == want
