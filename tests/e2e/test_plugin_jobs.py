"""Volcano Jobs with the distributed-framework plugins, submitted through the whole stack (the
webhook, the forwarder, the JobWorkflow, Caldera's gang scheduler, kwok pods): the pods carry
what each plugin writes, the objects the plugins imply exist while the job runs, and each
example under deploy/examples/ is admitted and reaches Running."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually
from tests.e2e.volcano import JOBS

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the pods, as Volcano's would

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"


def _submit(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["metadata"]["namespace"] = ns
    created: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        *JOBS, ns, "jobs", manifest
    )
    return created


def _pods(api: client.ApiClient, ns: str) -> dict[str, Any]:
    return {p.metadata.name: p for p in client.CoreV1Api(api).list_namespaced_pod(ns).items}


def _env(container: Any) -> dict[str, str]:
    return {e.name: e.value for e in container.env or [] if e.value is not None}


def _ports(container: Any) -> list[tuple[str, int]]:
    return [(p.name, p.container_port) for p in container.ports or []]


def _running_job(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Submit the job and wait until it runs with every pod Running."""
    name = manifest["metadata"]["name"]
    _submit(api, ns, manifest)
    job = volcano.phase_becomes(api, ns, name, "Running", timeout=90)
    total = sum(t["replicas"] for t in manifest["spec"]["tasks"])
    eventually(
        lambda: sum(p.status.phase == "Running" for p in _pods(api, ns).values()) == total,
        60,
        f"{total} pods of {ns}/{name} Running",
    )
    return job


def test_pytorch_job_pods_get_rendezvous_env_ports_and_wait_container(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = (
        make_job("pt")
        .task("master", template=volcano.template({}))
        .task("worker", replicas=2, template=volcano.template({}))
        .spec(plugins={"pytorch": ["--port=29500", "--wait-master-enabled"]})
        .manifest()
    )
    _running_job(api, namespace, manifest)
    pods = _pods(api, namespace)
    assert sorted(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    for name, rank in (("pt-master-0", "0"), ("pt-worker-0", "1"), ("pt-worker-1", "2")):
        (main,) = pods[name].spec.containers
        env = _env(main)
        assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("pt-master-0.pt", "29500")
        assert (env["WORLD_SIZE"], env["RANK"]) == ("3", rank)
        assert ("pytorchjob-port", 29500) in _ports(main)
        assert pods[name].spec.subdomain == "pt"  # svc, which pytorch implies
    assert pods["pt-master-0"].spec.init_containers is None
    (wait,) = pods["pt-worker-1"].spec.init_containers
    assert (wait.name, wait.image) == ("wait-for-master", "busybox:1.36.1")
    assert "nc -z pt-master-0.pt 29500" in wait.command[2]
    client.CoreV1Api(api).read_namespaced_service("pt", namespace)  # the svc plugin's


def test_mpi_job_master_gets_worker_hosts_ssh_port_and_keys(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = (
        make_job("mpi")
        .task("master", template=volcano.template({}))
        .task("worker", replicas=2, template=volcano.template({}))
        .spec(plugins={"mpi": []})
        .manifest()
    )
    _running_job(api, namespace, manifest)
    pods = _pods(api, namespace)
    # The master is created with the workers (Volcano's webhook does not make it wait).
    assert sorted(pods) == ["mpi-master-0", "mpi-worker-0", "mpi-worker-1"]
    master = pods["mpi-master-0"].spec.containers[0]
    assert _env(master)["MPI_HOST"] == "mpi-worker-0.mpi,mpi-worker-1.mpi"
    for name, pod in pods.items():
        (main,) = pod.spec.containers
        assert ("mpijob-port", 22) in _ports(main), name
        assert ("MPI_HOST" in _env(main)) == (name == "mpi-master-0")
        mounts = {m.name: m.mount_path for m in main.volume_mounts}
        assert mounts["mpi-ssh"] == "/root/.ssh"  # ssh, which mpi implies
        assert mounts["mpi-svc"] == "/etc/volcano"  # and svc
    secret = client.CoreV1Api(api).read_namespaced_secret("mpi-ssh", namespace)
    assert sorted(secret.data) == ["authorized_keys", "config", "id_rsa", "id_rsa.pub"]


def test_ray_job_without_head_task_terminates_with_the_reason(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = (
        make_job("ray")
        .task("worker", replicas=2, template=volcano.template({}))
        .spec(plugins={"ray": []})
        .manifest()
    )
    _submit(api, namespace, manifest)
    volcano.phase_becomes(api, namespace, "ray", "Terminated", timeout=90)
    assert _pods(api, namespace) == {}
    events = client.CoreV1Api(api).list_namespaced_event(namespace).items
    messages = [e.message for e in events if e.involved_object.name == "ray"]
    assert any('the job has no head task "head"' in m for m in messages), messages


def _example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


def _check_mpi(api: client.ApiClient, ns: str, pods: dict[str, Any]) -> None:
    master = pods["lm-mpi-job-mpimaster-0"].spec.containers[0]
    assert (
        _env(master)["MPI_HOST"]
        == "lm-mpi-job-mpiworker-0.lm-mpi-job,lm-mpi-job-mpiworker-1.lm-mpi-job"
    )


def _check_pytorch(api: client.ApiClient, ns: str, pods: dict[str, Any]) -> None:
    env = _env(pods["pytorch-job-worker-1"].spec.containers[0])
    assert (env["MASTER_ADDR"], env["WORLD_SIZE"], env["RANK"]) == (
        "pytorch-job-master-0.pytorch-job",
        "3",
        "2",
    )


def _check_tensorflow(api: client.ApiClient, ns: str, pods: dict[str, Any]) -> None:
    config = json.loads(
        _env(pods["tensorflow-dist-mnist-worker-1"].spec.containers[0])["TF_CONFIG"]
    )
    assert config == {
        "cluster": {
            "ps": ["tensorflow-dist-mnist-ps-0.tensorflow-dist-mnist:2222"],
            "worker": [
                "tensorflow-dist-mnist-worker-0.tensorflow-dist-mnist:2222",
                "tensorflow-dist-mnist-worker-1.tensorflow-dist-mnist:2222",
            ],
        },
        "task": {"type": "worker", "index": 1},
    }


def _check_ray(api: client.ApiClient, ns: str, pods: dict[str, Any]) -> None:
    head = pods["ray-cluster-job-head-0"].spec.containers[0]
    assert head.command[2].startswith("ray start --head --block")
    worker = pods["ray-cluster-job-worker-0"].spec.containers[0]
    assert worker.command[2] == (
        "ray start --block --address=ray-cluster-job-head-0.ray-cluster-job:6379"
    )
    service = client.CoreV1Api(api).read_namespaced_service("ray-cluster-job-head-svc", ns)
    assert [p.port for p in service.spec.ports] == [6379, 8265, 10001]


def _check_hcclrank(api: client.ApiClient, ns: str, pods: dict[str, Any]) -> None:
    ranks = {n: p.metadata.annotations["hccl/rankIndex"] for n, p in pods.items()}
    assert ranks == {"hccl-job-master-0": "0", "hccl-job-worker-0": "1", "hccl-job-worker-1": "2"}


CHECKS = {
    "mpi-job.yaml": _check_mpi,
    "pytorch-job.yaml": _check_pytorch,
    "tensorflow-job.yaml": _check_tensorflow,
    "ray-job.yaml": _check_ray,
    "hcclrank-job.yaml": _check_hcclrank,
}
# Every example but the dev stack's own sample (its pods finish in 20 s; `caldera dev up`
# runs it): an example added without a check here fails its test.
FRAMEWORK_EXAMPLES = sorted(
    p.name for p in EXAMPLES.glob("*.yaml") if p.name not in ("sample-job.yaml", "cronjob.yaml")
)


@pytest.mark.parametrize("example", FRAMEWORK_EXAMPLES)
def test_example_job_admitted_and_runs_with_its_plugin(
    api: client.ApiClient, namespace: str, example: str
) -> None:
    _running_job(api, namespace, _example(example))
    CHECKS[example](api, namespace, _pods(api, namespace))
