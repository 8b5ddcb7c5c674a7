"""The local control plane behaves like a cluster: Ready fake nodes, pods that run and end as
their `sim.caldera.dev/*` annotations say."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from tests.e2e.conftest import NODES, eventually

RUN_SECONDS = "sim.caldera.dev/run-seconds"
EXIT_CODE = "sim.caldera.dev/exit-code"


def _pod(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "schedulerName": "default-scheduler",
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox"},
                {"name": "sidecar", "image": "busybox"},
            ],
        },
    }


def _phases_until_done(core: client.CoreV1Api, ns: str, name: str, timeout: float) -> list[str]:
    """Every distinct phase the pod showed, polled every 100 ms, until it ends."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        phase = core.read_namespaced_pod(name, ns).status.phase
        if not seen or seen[-1] != phase:
            seen.append(phase)
        if phase in ("Succeeded", "Failed"):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"pod {ns}/{name} did not end within {timeout}s; phases {seen}")


def test_fake_nodes_are_ready_with_template_capacity(api: client.ApiClient) -> None:
    nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
    for name in NODES.names():
        node = nodes[name]
        ready = [c.status for c in node.status.conditions if c.type == "Ready"]
        assert ready == ["True"]
        assert node.status.allocatable["cpu"] == NODES.cpu


def test_pod_runs_then_succeeds_after_run_seconds(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, _pod("ok", {RUN_SECONDS: "1.5"}))  # type: ignore[arg-type]
    started = time.monotonic()
    phases = _phases_until_done(core, namespace, "ok", timeout=30)
    assert phases[-2:] == ["Running", "Succeeded"]
    assert time.monotonic() - started >= 1.5
    pod = core.read_namespaced_pod("ok", namespace)
    assert pod.spec.node_name in NODES.names()  # placed by kube-scheduler
    codes = [s.state.terminated.exit_code for s in pod.status.container_statuses]
    assert codes == [0, 0]


def test_pod_fails_with_the_annotated_exit_code(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(  # type: ignore[arg-type]
        namespace, _pod("bad", {RUN_SECONDS: "0.5", EXIT_CODE: "3"})
    )
    phases = _phases_until_done(core, namespace, "bad", timeout=30)
    assert phases[-2:] == ["Running", "Failed"]
    statuses = core.read_namespaced_pod("bad", namespace).status.container_statuses
    first = next(s for s in statuses if s.name == "main")
    assert first.state.terminated.exit_code == 3
    assert first.state.terminated.reason == "Error"


def test_pod_without_run_seconds_runs_until_deleted(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, _pod("svc", {}))  # type: ignore[arg-type]
    eventually(
        lambda: core.read_namespaced_pod("svc", namespace).status.phase == "Running",
        what="pod Running",
    )
    time.sleep(3)
    assert core.read_namespaced_pod("svc", namespace).status.phase == "Running"
    core.delete_namespaced_pod("svc", namespace)
    eventually(
        lambda: (
            not any(p.metadata.name == "svc" for p in core.list_namespaced_pod(namespace).items)
        ),
        what="deleted pod gone",
    )


def test_dev_storage_class_provisions_a_host_path_volume(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    core.create_namespaced_persistent_volume_claim(namespace, claim)  # type: ignore[arg-type]
    pod = _pod("uses-data", {})
    pod["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    core.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    pvc = eventually(
        lambda: (
            c
            if (c := core.read_namespaced_persistent_volume_claim("data", namespace)).status.phase
            == "Bound"
            else None
        ),
        timeout=60,
        what="claim bound by the host-path provisioner",
    )
    assert pvc.spec.storage_class_name == "standard"
    volume = core.read_persistent_volume(pvc.spec.volume_name)
    assert volume.spec.host_path is not None
    eventually(
        lambda: core.read_namespaced_pod("uses-data", namespace).status.phase == "Running",
        what="pod with the volume Running",
    )


def test_garbage_collector_deletes_dependents(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    owner = core.create_namespaced_config_map(  # type: ignore[arg-type]
        namespace, {"metadata": {"name": "owner"}}
    )
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(  # type: ignore[arg-type]
        namespace, {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
    )
    core.delete_namespaced_config_map("owner", namespace)
    eventually(
        lambda: (
            not any(
                c.metadata.name == "dependent"
                for c in core.list_namespaced_config_map(namespace).items
            )
        ),
        what="dependent removed by the garbage collector",
    )
