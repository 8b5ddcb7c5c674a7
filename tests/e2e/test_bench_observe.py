"""The side-by-side bench reads a run's pods from its watch and counts what deletion leaves with
one-object lists (bench/sidebyside/observe.py, podwatch.py): both against the real apiserver,
since a count or a pod state read wrong would change a figure, not fail a run."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from bench.sidebyside import observe, podwatch
from tests.e2e.conftest import E2EStack, eventually


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def test_the_watch_and_the_counts_follow_the_namespaces_pods(
    e2e_stack: E2EStack, api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    node = core.list_node().items[0].metadata.name
    seen = podwatch.PodWatch(e2e_stack.kubeconfig, namespace)
    try:
        for name in ("waiting-1", "waiting-2"):  # no scheduler serves this name: never bound
            core.create_namespaced_pod(namespace, _pod(name, schedulerName="nobody"))
        core.create_namespaced_pod(namespace, _pod("placed", nodeName=node))

        def stands() -> tuple[int, int, int]:
            now = seen.standing()
            return len(now), sum(p.bound for p in now), sum(p.running for p in now)

        eventually(lambda: stands() == (3, 1, 1), what=f"3 pods, 1 bound and Running: {stands()}")
        assert observe.count(observe.pod_list(api, namespace, limit=1)) == 3

        core.delete_namespaced_pod("waiting-1", namespace, grace_period_seconds=0)
        eventually(lambda: stands() == (2, 1, 1), what=f"the deleted pod gone: {stands()}")
        assert observe.count(observe.pod_list(api, namespace, limit=1)) == 2
        assert observe.count(observe.pod_group_list(api, namespace, limit=1)) == 0
    finally:
        seen.stop()
