"""What the e2e tests of queues sharing the cluster have in common: the session's 3 kwok nodes
of 8 CPUs hold 12 one-pod jobs of 2 CPUs (`SLOTS`), queues made and removed around a test, the
pods running by queue, each PodGroup's state for a failure message, and the scheduler's
evictions and sessions as a user or the worker's log shows them.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from kubernetes import client, watch

from cli.devstack import processes
from models import labels
from tests.builders import make_job
from tests.e2e.conftest import eventually

SLOTS = 12  # 24 CPUs / 2
_G, _V = "scheduling.volcano.sh", "v1beta1"


@contextlib.contextmanager
def queues(
    api: client.ApiClient,
    weights: Mapping[str, int],
    annotations: Mapping[str, Mapping[str, str]] | None = None,  # None: none on any queue
    specs: Mapping[str, Mapping[str, Any]] | None = None,  # None: no other spec field
) -> Iterator[tuple[str, ...]]:
    """Reclaimable queues `<prefix>-<suffix>` under root, one per weight, removed afterwards;
    `annotations` and `specs` (more spec fields) by prefix."""
    custom = client.CustomObjectsApi(api)
    suffix = uuid.uuid4().hex[:5]
    names = tuple(f"{prefix}-{suffix}" for prefix in weights)
    for prefix, name, weight in zip(weights, names, weights.values(), strict=True):
        body = {
            "apiVersion": f"{_G}/{_V}",
            "kind": "Queue",
            "metadata": {"name": name, "annotations": dict((annotations or {}).get(prefix, {}))},
            "spec": {
                "weight": weight,
                "parent": "root",
                "reclaimable": True,
                **(specs or {}).get(prefix, {}),
            },
        }
        custom.create_cluster_custom_object(_G, _V, "queues", body)
    try:
        yield names
    finally:
        for name in names:
            custom.delete_cluster_custom_object(_G, _V, "queues", name)


def evicted_pods(api: client.ApiClient, ns: str) -> list[str]:
    """The pods the scheduler evicted, from their Evict events."""
    events = client.CoreV1Api(api).list_namespaced_event(ns).items
    return sorted(
        e.involved_object.name
        for e in events
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    )


def sessions(worker: processes.Process) -> int:
    """Scheduling sessions the worker has finished so far."""
    return processes.log_text(worker).count("session done")


def submit(
    api: client.ApiClient,
    ns: str,
    name: str,
    queue: str | None,
    annotations: Mapping[str, str] | None = None,
    replicas: int = 1,
    pod_annotations: Mapping[str, str] | None = None,
    **spec: Any,
) -> None:
    """A Volcano Job of `replicas` pods of 2 CPUs that run until deleted (or as
    `pod_annotations` tell kwok), in `queue` (None: the default one), with `annotations` on
    the Job and `spec` in its spec."""
    template: dict[str, Any] = {
        "metadata": {"annotations": dict(pod_annotations or {})},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
            ],
        },
    }
    doc = make_job(name, namespace=ns).task("w", replicas=replicas, template=template)
    manifest = (doc.spec(queue=queue, **spec) if queue else doc.spec(**spec)).manifest()
    if annotations:
        manifest["metadata"]["annotations"] = dict(annotations)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", manifest
    )


def running(api: client.ApiClient, ns: str) -> Counter[str]:
    """Pods on a node, running and not being deleted, by queue."""
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return Counter(
        p.metadata.labels.get(labels.QUEUE_NAME, "")
        for p in pods
        if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp
    )


def split(api: client.ApiClient, ns: str, queues: tuple[str, ...]) -> tuple[int, int]:
    """Running pods of the first two queues."""
    counts = running(api, ns)
    return counts[queues[0]], counts[queues[1]]


def phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


class Deleted:
    """Watches the namespace's pods and keeps the last state of each deleted one: an evicted
    pod is gone within moments, and its conditions are what `kubectl get -w` would show."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.pods: dict[str, Any] = {}
        self._stopped = threading.Event()
        self._error: Exception | None = None  # None: the watch has not failed
        self._watch = watch.Watch()
        core = client.CoreV1Api(api)
        stream = self._watch.stream(core.list_namespaced_pod, ns, timeout_seconds=600)
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: Iterator[dict[str, Any]]) -> None:
        try:
            for event in stream:
                if event["type"] == "DELETED":
                    self.pods[event["object"].metadata.name] = event["object"]
        except Exception as e:  # the connection drops once the stack goes away
            if not self._stopped.is_set():
                self._error = e

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()
        if self._error is not None:
            raise self._error

    def conditions(self, name: str) -> dict[str, Any]:
        return {c.type: c for c in self.pods[name].status.conditions or []}


def groups(api: client.ApiClient, ns: str) -> list[str]:
    """Each PodGroup's queue, phase and latest condition message: why a split is stuck."""
    groups = client.CustomObjectsApi(api).list_namespaced_custom_object(_G, _V, ns, "podgroups")
    out = []
    for g in groups["items"]:
        status = g.get("status") or {}
        last = (status.get("conditions") or [{}])[-1]
        out.append(
            f"{g['metadata']['name'][:3]} {g['spec'].get('queue')} {status.get('phase')}"
            f" {last.get('type', '')}: {last.get('message', '')}"
        )
    return sorted(out)


def reserving(api: client.ApiClient, ns: str) -> list[str]:
    """PodGroups of other namespaces that hold or reserve cluster room (Inqueue, Running):
    overcommit admits jobs against the whole cluster, so what they reserve shrinks the room
    the arithmetic of these tests counts on."""
    groups = client.CustomObjectsApi(api).list_cluster_custom_object(_G, _V, "podgroups")
    return sorted(
        f"{g['metadata']['namespace']}/{g['metadata']['name']} "
        f"{(g.get('status') or {}).get('phase')}"
        for g in groups["items"]
        if g["metadata"]["namespace"] != ns
        and (g.get("status") or {}).get("phase") in ("Inqueue", "Running")
        and g["spec"].get("minResources")
    )


def fill(api: client.ApiClient, ns: str, queue: str, prefix: str, **spec: Any) -> None:
    """SLOTS one-pod jobs `<prefix><i>` in `queue`, running: the cluster is full. The cluster
    is first the test's alone: earlier tests' jobs (their namespaces going) have left it."""
    try:
        eventually(lambda: not reserving(api, ns), 120, "the cluster to this test alone")
    except AssertionError as e:
        raise AssertionError(f"{e}; still reserving: {reserving(api, ns)}") from None
    for i in range(SLOTS):
        submit(api, ns, f"{prefix}{i}", queue, **spec)
    eventually(lambda: running(api, ns)[queue] == SLOTS, 180, f"{queue} alone fills the cluster")
