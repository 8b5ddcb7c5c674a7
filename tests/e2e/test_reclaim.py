"""Reclaim end to end: queues weighted 1:3 end up with 1:3 of a full cluster whichever filled
it first, and an evicted job goes back to pending instead of failing.

Caldera's gang scheduler runs (`SCHEDULER_OVERRIDE = None`) on the session's 3 kwok nodes of 8
CPUs: 12 pods of 2 CPUs fill it. Pods carry no run-seconds annotation, so they run until
deleted.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from models import labels
from tests.builders import make_job
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
SLOTS = 12  # 24 CPUs / 2
_G, _V = "scheduling.volcano.sh", "v1beta1"


def _template() -> dict[str, Any]:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
            ],
        }
    }


def _submit(api: client.ApiClient, ns: str, name: str, queue: str, **spec: Any) -> None:
    doc = make_job(name, namespace=ns).task("w", replicas=1, template=_template())
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", doc.spec(queue=queue, **spec).manifest()
    )


def _running(api: client.ApiClient, ns: str) -> Counter[str]:
    """Pods on a node, running and not being deleted, by queue."""
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return Counter(
        p.metadata.labels.get(labels.QUEUE_NAME, "")
        for p in pods
        if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp
    )


def _phase(api: client.ApiClient, ns: str, name: str) -> str:
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", name
    )
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


@pytest.fixture
def weighted(api: client.ApiClient) -> Iterator[tuple[str, str]]:
    """Queues `light-*` (weight 1) and `heavy-*` (weight 3), removed afterwards."""
    custom = client.CustomObjectsApi(api)
    suffix = uuid.uuid4().hex[:5]
    names = (f"light-{suffix}", f"heavy-{suffix}")
    for name, weight in zip(names, (1, 3), strict=True):
        custom.create_cluster_custom_object(
            _G,
            _V,
            "queues",
            {
                "apiVersion": f"{_G}/{_V}",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": weight, "parent": "root", "reclaimable": True},
            },
        )
    yield names
    for name in names:
        custom.delete_cluster_custom_object(_G, _V, "queues", name)


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


def _groups(api: client.ApiClient, ns: str) -> list[str]:
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


def _split(api: client.ApiClient, ns: str, queues: tuple[str, str]) -> tuple[int, int]:
    counts = _running(api, ns)
    return counts[queues[0]], counts[queues[1]]


def _reserving(api: client.ApiClient, ns: str) -> list[str]:
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


def _fill(api: client.ApiClient, ns: str, queue: str, prefix: str, **spec: Any) -> None:
    """SLOTS one-pod jobs `<prefix><i>` in `queue`, running: the cluster is full. The cluster
    is first the test's alone: earlier tests' jobs (their namespaces going) have left it."""
    try:
        eventually(lambda: not _reserving(api, ns), 120, "the cluster to this test alone")
    except AssertionError as e:
        raise AssertionError(f"{e}; still reserving: {_reserving(api, ns)}") from None
    for i in range(SLOTS):
        _submit(api, ns, f"{prefix}{i}", queue, **spec)
    eventually(lambda: _running(api, ns)[queue] == SLOTS, 180, f"{queue} alone fills the cluster")


@pytest.mark.parametrize("first", ["light", "heavy"])
def test_queues_weighted_one_to_three_end_one_to_three_whoever_filled_the_cluster_first(
    api: client.ApiClient, namespace: str, weighted: tuple[str, str], first: str
) -> None:
    light, heavy = weighted
    order = [(light, "l"), (heavy, "h")]
    if first == "heavy":
        order.reverse()
    (early, early_prefix), (late, late_prefix) = order
    _fill(api, namespace, early, early_prefix)
    deleted = Deleted(api, namespace)
    start = time.monotonic()
    for i in range(SLOTS):  # the late queue asks for the whole cluster too
        _submit(api, namespace, f"{late_prefix}{i}", late)

    timeline: list[tuple[int, int]] = []

    def settled() -> bool:
        split = _split(api, namespace, weighted)
        if not timeline or timeline[-1] != split:
            timeline.append(split)
        return split == (3, 9)

    try:
        eventually(settled, 240, "light:heavy 3:9")
    except AssertionError as e:  # the splits seen, and each PodGroup, say where it stopped
        raise AssertionError(
            f"{e}; splits seen {timeline}; podgroups {_groups(api, namespace)}"
        ) from None
    took = time.monotonic() - start
    seen = []
    for _ in range(15):  # and it stays so: no eviction back and forth
        time.sleep(1)
        seen.append(_split(api, namespace, weighted))
    print(f"{first} first: splits {timeline} in {took:.0f} s, then {sorted(set(seen))} for 15 s")
    assert set(seen) == {(3, 9)}, seen

    # Exactly the late queue's share was taken back: one eviction per pod it gained, and the
    # jobs that lost their pod went back to pending, none failed.
    taken = 9 if first == "light" else 3
    core = client.CoreV1Api(api)
    evicted = [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    ]
    assert len(evicted) == taken, [e.involved_object.name for e in evicted]
    assert all(
        (e.message or "").startswith(f"Pod is evicted, because of reclaim by {namespace}/")
        for e in evicted
    )
    deleted.stop()
    assert sorted(deleted.pods) == sorted(e.involved_object.name for e in evicted)
    for name in deleted.pods:  # what a user watching the pod saw before it went
        conditions = deleted.conditions(name)
        disruption = conditions["DisruptionTarget"]
        assert (disruption.status, disruption.reason) == ("True", "PreemptionByScheduler")
        assert disruption.message.endswith(f"(queue {late})"), disruption.message
        assert (conditions["Ready"].status, conditions["Ready"].reason) == ("False", "Evict")
    phases = Counter(_phase(api, namespace, f"{early_prefix}{i}") for i in range(SLOTS))
    assert phases == {"Running": SLOTS - taken, "Pending": taken}, phases
    waiting = [
        p
        for p in core.list_namespaced_pod(namespace).items
        if p.metadata.labels.get(labels.QUEUE_NAME) == early and not p.spec.node_name
    ]
    assert waiting, "the evicted jobs' pods are recreated and wait for room"


def test_evicted_job_with_a_restart_policy_restarts_and_waits_pending(
    api: client.ApiClient, namespace: str, weighted: tuple[str, str]
) -> None:
    light, heavy = weighted
    restart = [{"event": "PodEvicted", "action": "RestartJob"}]
    _fill(api, namespace, light, "l", policies=restart, maxRetry=5)
    for i in range(3):
        _submit(api, namespace, f"h{i}", heavy)
    eventually(
        lambda: _running(api, namespace)[heavy] == 3, 180, "heavy's 3 pods run on reclaimed room"
    )
    custom = client.CustomObjectsApi(api)

    def restarted() -> list[str]:
        names = []
        for i in range(SLOTS):
            job = custom.get_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", namespace, "jobs", f"l{i}"
            )
            status = job.get("status") or {}
            if (status.get("retryCount") or 0) >= 1:
                names.append(f"l{i}")
        return names

    # Each victim's job writes its restart on its own: wait for all three, not the first.
    def all_restarted() -> list[str] | None:
        found = restarted()
        return found if len(found) >= 3 else None

    victims = eventually(all_restarted, 60, "the victims' jobs counted a restart")
    assert len(victims) == 3, victims
    for name in victims:
        eventually(
            lambda n=name: _phase(api, namespace, n) == "Pending", 60, f"{name} back to Pending"
        )
    assert {_phase(api, namespace, f"l{i}") for i in range(SLOTS)} <= {"Running", "Pending"}
    assert _split(api, namespace, weighted) == (SLOTS - 3, 3)
