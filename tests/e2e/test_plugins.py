"""The plugin activities against a real apiserver: objects owned by the Job, kept across
re-runs, removed on request and by the garbage collector with the Job; pods every plugin
mutates are pods the apiserver accepts."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

import activities.controllers.plugins as plugins
from activities import kube
from controllers.job import plugins as job_plugins
from controllers.job import podspec
from models.defaults import default_job
from models.vcjob import Job
from tests.builders import make_job
from tests.e2e.conftest import E2EStack, eventually

JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
PLUGINS = {"svc": [], "env": [], "ssh": ["--ssh-port=2222"]}


@pytest.fixture
def activity_kube(e2e_stack: E2EStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the activities' shared client at the e2e control plane for one test."""
    monkeypatch.setenv("KUBECONFIG", e2e_stack.kubeconfig)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kube.api.cache_clear()
    yield
    kube.api.cache_clear()


def _create_job(api: client.ApiClient, ns: str, plugin_args: dict[str, list[str]]) -> Any:
    return _create_tasks_job(api, ns, (("master", 1), ("worker", 2)), plugin_args)


def _create_tasks_job(
    api: client.ApiClient, ns: str, tasks: tuple[tuple[str, int], ...], plugin_args: Any
) -> Any:
    """The Job `train` with those (task, replicas), as the apiserver stored it."""
    builder = make_job("train", ns)
    for name, replicas in tasks:
        builder = builder.task(name, replicas=replicas)
    doc = builder.spec(plugins=plugin_args).manifest()
    return client.CustomObjectsApi(api).create_namespaced_custom_object(*JOBS[:2], ns, JOBS[2], doc)


def _ensure(job: dict[str, Any]) -> plugins.PluginsResult:
    result: plugins.PluginsResult = ActivityEnvironment().run(
        plugins.ensure_plugins, plugins.PluginsInput(job=job)
    )
    return result


def _remove(job: dict[str, Any]) -> plugins.PluginsResult:
    result: plugins.PluginsResult = ActivityEnvironment().run(
        plugins.remove_plugins, plugins.PluginsInput(job=job)
    )
    return result


def _owned_by(obj: Any, job: dict[str, Any]) -> bool:
    refs = obj.metadata.owner_references or []
    return [(r.kind, r.name, r.uid, r.controller, r.block_owner_deletion) for r in refs] == [
        ("Job", job["metadata"]["name"], job["metadata"]["uid"], True, True)
    ]


def _read(call: Any, *args: str) -> Any:
    """The object, or None once it is gone."""
    try:
        return call(*args)
    except client.ApiException as e:
        if e.status == 404:
            return None
        raise


def _objects(api: client.ApiClient, ns: str) -> dict[str, Any]:
    core, net = client.CoreV1Api(api), client.NetworkingV1Api(api)
    return {
        "configmap": _read(core.read_namespaced_config_map, "train-svc", ns),
        "service": _read(core.read_namespaced_service, "train", ns),
        "networkpolicy": _read(net.read_namespaced_network_policy, "train", ns),
        "secret": _read(core.read_namespaced_secret, "train-ssh", ns),
    }


def _text(secret: Any, key: str) -> str:
    return base64.b64decode(secret.data[key]).decode()


@pytest.mark.usefixtures("activity_kube")
def test_ensure_plugins_creates_owned_objects_with_volcano_data(
    api: client.ApiClient, namespace: str
) -> None:
    job = _create_job(api, namespace, PLUGINS)
    assert _ensure(job).controlled == {
        "plugin-env": "env",
        "plugin-ssh": "ssh",
        "plugin-svc": "svc",
    }

    objs = _objects(api, namespace)
    assert all(_owned_by(o, job) for o in objs.values())
    assert objs["configmap"].data == {
        "master.host": "train-master-0.train",
        "VC_MASTER_HOSTS": "train-master-0.train",
        "VC_MASTER_NUM": "1",
        "worker.host": "train-worker-0.train\ntrain-worker-1.train",
        "VC_WORKER_HOSTS": "train-worker-0.train,train-worker-1.train",
        "VC_WORKER_NUM": "2",
    }
    service = objs["service"].spec
    assert service.cluster_ip == "None"
    assert not service.publish_not_ready_addresses  # false is omitted on the wire
    assert service.selector == {
        "volcano.sh/job-name": "train",
        "volcano.sh/job-namespace": namespace,
    }
    assert objs["networkpolicy"].spec.policy_types == ["Ingress"]
    secret = objs["secret"]
    assert sorted(secret.data) == ["authorized_keys", "config", "id_rsa", "id_rsa.pub"]
    assert _text(secret, "id_rsa").startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert _text(secret, "authorized_keys") == _text(secret, "id_rsa.pub")
    assert "Host train-worker-1\n  HostName train-worker-1.train\n  Port 2222\n" in _text(
        secret, "config"
    )

    # The mutated pod is one the apiserver accepts (dry run: nothing is scheduled).
    model = Job.model_validate(job)
    template = model.spec.tasks[1].template
    assert template is not None
    pod = {"metadata": {"name": "train-worker-1"}, "spec": template.spec}
    manifest = job_plugins.on_pod_create(model, pod, "worker", 1)
    manifest["metadata"]["name"] = "plugin-check"  # not the controller's own pod name
    client.CoreV1Api(api).create_namespaced_pod(namespace, manifest, dry_run="All")


@pytest.mark.usefixtures("activity_kube")
def test_ensure_plugins_twice_keeps_keys_and_refreshes_config_map(
    api: client.ApiClient, namespace: str
) -> None:
    job = _create_job(api, namespace, PLUGINS)
    _ensure(job)
    first = _objects(api, namespace)
    core = client.CoreV1Api(api)
    core.patch_namespaced_config_map("train-svc", namespace, {"data": {"VC_WORKER_NUM": "9"}})

    assert _ensure(job).controlled == {
        "plugin-env": "env",
        "plugin-ssh": "ssh",
        "plugin-svc": "svc",
    }
    again = _objects(api, namespace)
    assert again["secret"].data == first["secret"].data
    assert again["secret"].metadata.uid == first["secret"].metadata.uid
    assert again["configmap"].data == first["configmap"].data


@pytest.mark.usefixtures("activity_kube")
def test_ensure_plugins_disable_network_policy_creates_none(
    api: client.ApiClient, namespace: str
) -> None:
    job = _create_job(
        api, namespace, {"svc": ["--disable-network-policy", "--publish-not-ready-addresses"]}
    )
    assert _ensure(job).controlled == {"plugin-svc": "svc"}
    objs = _objects(api, namespace)
    assert objs["networkpolicy"] is None
    assert objs["secret"] is None
    assert objs["service"].spec.publish_not_ready_addresses is True


@pytest.mark.usefixtures("activity_kube")
def test_remove_plugins_deletes_objects_and_tolerates_repeat(
    api: client.ApiClient, namespace: str
) -> None:
    job = _create_job(api, namespace, PLUGINS)
    _ensure(job)
    assert _remove(job).controlled == {}
    assert _remove(job).controlled == {}  # NotFound is success
    # Services and ConfigMaps go at once; nothing has finalizers here.
    eventually(
        lambda: all(o is None for o in _objects(api, namespace).values()),
        what="plugin objects deleted",
    )


@pytest.mark.usefixtures("activity_kube")
def test_deleting_job_garbage_collects_plugin_objects(
    api: client.ApiClient, namespace: str
) -> None:
    job = _create_job(api, namespace, PLUGINS)
    _ensure(job)
    assert all(o is not None for o in _objects(api, namespace).values())
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        *JOBS[:2], namespace, JOBS[2], "train"
    )
    # On a fresh stack the garbage collector learns of the Job CRD at its next discovery resync
    # (every 30 s), and only then sees jobs as owners: up to ~45 s here, at once on a warm stack.
    eventually(
        lambda: all(o is None for o in _objects(api, namespace).values()),
        timeout=90,
        what="plugin objects removed by the garbage collector",
    )


RAY_TASKS = (("head", 1), ("worker", 2))


@pytest.mark.usefixtures("activity_kube")
def test_ensure_plugins_ray_head_service_owned_and_removed(
    api: client.ApiClient, namespace: str
) -> None:
    job = _create_tasks_job(api, namespace, RAY_TASKS, {"ray": ["--dashboardPort=8266"]})
    assert _ensure(job).controlled == {"plugin-ray": "ray"}
    core = client.CoreV1Api(api)
    service = core.read_namespaced_service("train-head-svc", namespace)
    assert _owned_by(service, job)
    assert service.spec.type == "ClusterIP" and service.spec.cluster_ip not in (None, "None")
    assert service.spec.selector == {
        "volcano.sh/job-name": "train",
        "volcano.sh/job-namespace": namespace,
        "volcano.sh/task-spec": "head",
    }
    ports = [(p.name, p.port, p.target_port, p.protocol) for p in service.spec.ports]
    assert ports == [
        ("gcs", 6379, "gcs", "TCP"),
        ("dashboard", 8266, "dashboard", "TCP"),
        ("client-server", 10001, "client-server", "TCP"),
    ]
    assert _ensure(job).controlled == {"plugin-ray": "ray"}  # exists: success, unchanged
    assert core.read_namespaced_service("train-head-svc", namespace).metadata.uid == (
        service.metadata.uid
    )

    assert _remove(job).controlled == {}
    assert _remove(job).controlled == {}  # NotFound is success
    eventually(
        lambda: _read(core.read_namespaced_service, "train-head-svc", namespace) is None,
        what="ray head Service deleted",
    )


@pytest.mark.usefixtures("activity_kube")
def test_ensure_plugins_framework_plugins_record_volcano_markers(
    api: client.ApiClient, namespace: str
) -> None:
    names = ("hcclrank", "mpi", "pytorch", "tensorflow")
    job = _create_job(api, namespace, {n: [] for n in names})
    # hcclrank records no marker, as in Volcano; the others own no object.
    assert _ensure(job).controlled == {
        "plugin-mpi": "mpi",
        "plugin-pytorch": "pytorch",
        "plugin-tensorflow": "tensorflow",
    }
    assert all(o is None for o in _objects(api, namespace).values())


FRAMEWORKS = [
    pytest.param((("master", 1), ("worker", 2)), {"mpi": []}, id="mpi"),
    pytest.param(
        (("master", 1), ("worker", 2)), {"pytorch": ["--wait-master-enabled"]}, id="pytorch"
    ),
    pytest.param((("ps", 1), ("worker", 2), ("chief", 1)), {"tensorflow": []}, id="tensorflow"),
    pytest.param(RAY_TASKS, {"ray": []}, id="ray"),
    pytest.param((("master", 1), ("worker", 2)), {"hcclrank": [], "pytorch": []}, id="hcclrank"),
]


@pytest.mark.parametrize(("tasks", "plugin_args"), FRAMEWORKS)
def test_framework_plugin_pods_accepted_by_apiserver(
    api: client.ApiClient, namespace: str, tasks: tuple[tuple[str, int], ...], plugin_args: Any
) -> None:
    """Every pod the controller would create, with the plugins and the svc/ssh they imply,
    passes the apiserver's validation (dry run: nothing is stored or scheduled)."""
    created = _create_tasks_job(api, namespace, tasks, plugin_args)
    job = default_job(Job.model_validate(created))
    core = client.CoreV1Api(api)
    for name, replicas in tasks:
        for index in range(replicas):
            pod = podspec.build_pod(job, name, index, version=0, retry_count=0)
            manifest = job_plugins.on_pod_create(job, pod, name, index)
            core.create_namespaced_pod(namespace, manifest, dry_run="All")
