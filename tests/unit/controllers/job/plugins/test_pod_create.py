"""on_pod_create applies the job's plugins to a pod manifest as Volcano's OnPodCreate does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.job import plugins
from controllers.job.plugins import support
from models import plugins as models_plugins
from tests.builders import make_job

pytestmark = pytest.mark.unit

C = {"name": "c", "image": "busybox"}
INIT = {"name": "init", "image": "busybox"}
INDEX_ENV = [{"name": "VK_TASK_INDEX", "value": "1"}, {"name": "VC_TASK_INDEX", "value": "1"}]
HOSTS_ENV = [
    {"name": n, "valueFrom": {"configMapKeyRef": {"name": "j-svc", "key": n}}}
    for n in ("VC_MASTER_HOSTS", "VC_MASTER_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM")
]
SVC_VOLUME = {"name": "j-svc", "configMap": {"name": "j-svc"}}
SVC_MOUNT = {"name": "j-svc", "mountPath": "/etc/volcano"}
SSH_ITEMS = [
    {"key": k, "path": f".ssh/{k}"} for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
]
SSH_VOLUME = {
    "name": "j-ssh",
    "secret": {"secretName": "j-ssh", "items": SSH_ITEMS, "defaultMode": 0o600},
}
SSH_MOUNT = {"name": "j-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"}


def _pod(*, init: bool = True, **spec: Any) -> dict[str, Any]:
    """Pod 1 of task `worker` in job `j` (1 master, 2 workers), as the pod builder makes it."""
    body: dict[str, Any] = {"containers": [dict(C)], **spec}
    if init:
        body["initContainers"] = [dict(INIT)]
    return {"metadata": {"name": "j-worker-1", "namespace": "default"}, "spec": body}


def _with(container: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**container, **fields}


def _job(plugins: dict[str, list[str]] | None) -> Any:
    return make_job("j").task("master").task("worker", replicas=2).spec(plugins=plugins).build()


SVC_SPEC = {"hostname": "j-worker-1", "subdomain": "j", "volumes": [SVC_VOLUME]}

CASES = [
    pytest.param(None, _pod(), _pod(), id="no-plugins"),
    pytest.param({"nope": []}, _pod(), _pod(), id="unknown-plugin-left-alone"),
    pytest.param(
        {"env": []},
        _pod(),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [_with(C, env=INDEX_ENV)],
                "initContainers": [_with(INIT, env=INDEX_ENV)],
            },
        },
        id="env",
    ),
    pytest.param(
        {"svc": []},
        _pod(),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [_with(C, env=HOSTS_ENV, volumeMounts=[SVC_MOUNT])],
                "initContainers": [_with(INIT, env=HOSTS_ENV, volumeMounts=[SVC_MOUNT])],
                **SVC_SPEC,
            },
        },
        id="svc",
    ),
    pytest.param(
        {"svc": ["--inject-hosts-env=false"]},
        _pod(init=False),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {"containers": [_with(C, volumeMounts=[SVC_MOUNT])], **SVC_SPEC},
        },
        id="svc-inject-hosts-env-false",
    ),
    pytest.param(
        {"svc": ["--inject-hosts-env=false"]},
        _pod(init=False, hostname="mine", subdomain="sub"),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [_with(C, volumeMounts=[SVC_MOUNT])],
                **SVC_SPEC,
                "hostname": "mine",
                "subdomain": "sub",
            },
        },
        id="svc-existing-hostname-kept",
    ),
    pytest.param(
        {"svc": []},
        _pod(
            init=False,
            containers=[_with(C, env=[{"name": "A", "value": "1"}], volumeMounts=[{"name": "v"}])],
            volumes=[{"name": "v"}],
        ),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [
                    _with(
                        C,
                        env=[{"name": "A", "value": "1"}, *HOSTS_ENV],
                        volumeMounts=[{"name": "v"}, SVC_MOUNT],
                    )
                ],
                **SVC_SPEC,
                "volumes": [{"name": "v"}, SVC_VOLUME],
            },
        },
        id="svc-appends-after-existing",
    ),
    pytest.param(
        {"ssh": []},
        _pod(),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [_with(C, volumeMounts=[SSH_MOUNT])],
                "initContainers": [_with(INIT, volumeMounts=[SSH_MOUNT])],
                "volumes": [SSH_VOLUME],
            },
        },
        id="ssh",
    ),
    pytest.param(
        {"ssh": ["--ssh-key-file-path=/home/u/.ssh"]},
        _pod(init=False),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [_with(C, volumeMounts=[SSH_MOUNT | {"mountPath": "/home/u/.ssh"}])],
                "volumes": [SSH_VOLUME | {"secret": SSH_VOLUME["secret"] | {"defaultMode": 0o644}}],
            },
        },
        id="ssh-custom-path-readable",
    ),
    pytest.param(
        {"svc": [], "ssh": [], "env": [], "nope": []},
        _pod(),
        {
            "metadata": {"name": "j-worker-1", "namespace": "default"},
            "spec": {
                "containers": [
                    _with(C, env=INDEX_ENV + HOSTS_ENV, volumeMounts=[SSH_MOUNT, SVC_MOUNT])
                ],
                "initContainers": [
                    _with(INIT, env=INDEX_ENV + HOSTS_ENV, volumeMounts=[SSH_MOUNT, SVC_MOUNT])
                ],
                **SVC_SPEC,
                "volumes": [SSH_VOLUME, SVC_VOLUME],
            },
        },
        id="all-sorted-env-ssh-svc",
    ),
]


@pytest.mark.parametrize(("plugin_args", "pod", "want"), CASES)
def test_on_pod_create_applies_plugins(
    plugin_args: dict[str, list[str]] | None, pod: dict[str, Any], want: dict[str, Any]
) -> None:
    assert plugins.on_pod_create(_job(plugin_args), pod, "worker", 1) == want


def test_on_pod_create_input_not_mutated_result_not_shared() -> None:
    job = _job({"svc": [], "ssh": [], "env": []})
    pod = _pod()
    before = copy.deepcopy(pod)
    first = plugins.on_pod_create(job, pod, "worker", 1)
    assert pod == before
    assert job == _job({"svc": [], "ssh": [], "env": []})
    # A second pod from the same template must not see the first one's additions.
    first["spec"]["containers"][0]["env"].append({"name": "X"})
    assert plugins.on_pod_create(job, pod, "worker", 1) != first


def test_on_pod_create_without_pod_name_uses_volcano_pod_name() -> None:
    pod = {"spec": {"containers": [dict(C)]}}
    got = plugins.on_pod_create(_job({"svc": []}), pod, "master", 0)
    assert (got["spec"]["hostname"], got["spec"]["subdomain"]) == ("j-master-0", "j")


def test_pod_hooks_are_the_implemented_plugins() -> None:
    assert set(plugins.POD_HOOKS) == models_plugins.IMPLEMENTED


def _distributed(plugin_args: dict[str, list[str]]) -> Any:
    return make_job("j").task("master").task("worker", replicas=2).spec(plugins=plugin_args)


def test_hcclrank_runs_after_the_plugin_that_writes_rank() -> None:
    # pytorch with its own task names: only its RANK tells hcclrank the worker's rank.
    job = _distributed(
        {"pytorch": ["--master=master", "--worker=worker"], "hcclrank": ["--worker=none"]}
    ).build()
    got = plugins.on_pod_create(job, _pod(), "worker", 1)
    assert got["metadata"]["annotations"] == {"hccl/rankIndex": "2"}


def test_distributed_plugins_compose_on_one_pod() -> None:
    job = _distributed({"mpi": [], "pytorch": [], "tensorflow": []}).build()
    got = plugins.on_pod_create(job, _pod(init=False), "worker", 1)
    container = got["spec"]["containers"][0]
    assert [p["name"] for p in container["ports"]] == ["mpijob-port", "pytorchjob-port"]
    assert [e["name"] for e in container["env"]] == [
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "TF_CONFIG",
    ]


def test_pod_refused_by_a_plugin_names_the_job_and_field() -> None:
    job = _distributed({"ray": []}).build()
    with pytest.raises(support.PodRefused) as err:
        plugins.on_pod_create(job, _pod(), "worker", 1)
    assert 'job default/j: spec.plugins.ray: the job has no head task "head"' in str(err.value)
