"""The pdb plugin on the real stack: reclaim stops where a disruption budget would break.

As `tests/e2e/test_reclaim.py`: queues `light` and `heavy` weighted 1:3 on the session's 3 kwok
nodes of 8 CPUs, 12 one-pod jobs of 2 CPUs in light fill the cluster, then heavy asks for the
whole cluster and would take 9 pods back. Here a budget lets only 2 go: a policy/v1
PodDisruptionBudget over light's pods (minAvailable 10, its status kept by
kube-controller-manager's disruption controller), or the `volcano.sh/jdb-min-available`
annotation on 10 of light's Volcano Jobs. The stack's volcano-scheduler.conf gains `pdb` for
these tests and is restored afterwards. Volcano has no e2e for the plugin; its unit cases
(`pkg/scheduler/plugins/pdb/pdb_test.go`) are in `tests/unit/scheduling/test_pdb.py`.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from kubernetes import client

from cli.devstack import processes
from models import labels
from scheduling.framework.conf import CALDERA_DEFAULT
from tests.builders import make_job
from tests.e2e.conftest import eventually
from tests.e2e.test_reclaim import SLOTS, _fill, _groups, _phase, _reserving, _running

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
WITH_PDB: Final = CALDERA_DEFAULT + "  - name: pdb\n"
KEPT: Final = 10  # light's pods the budget keeps running: 2 of 12 may go
_G, _V = "scheduling.volcano.sh", "v1beta1"


@pytest.fixture
def pdb_conf(scheduler_conf: Path) -> Path:
    scheduler_conf.write_text(WITH_PDB)
    return scheduler_conf


@pytest.fixture
def queues(api: client.ApiClient, pdb_conf: Path) -> Iterator[tuple[str, str]]:
    """Queues `light-*` (weight 1) and `heavy-*` (weight 3), removed afterwards."""
    custom = client.CustomObjectsApi(api)
    suffix = uuid.uuid4().hex[:5]
    names = (f"light-{suffix}", f"heavy-{suffix}")
    for name, weight in zip(names, (1, 3), strict=True):
        body = {
            "apiVersion": f"{_G}/{_V}",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": weight, "parent": "root", "reclaimable": True},
        }
        custom.create_cluster_custom_object(_G, _V, "queues", body)
    yield names
    for name in names:
        custom.delete_cluster_custom_object(_G, _V, "queues", name)


def _submit(
    api: client.ApiClient, ns: str, name: str, queue: str, annotations: dict[str, str]
) -> None:
    """A one-pod job of 2 CPUs that runs until deleted, with `annotations` on the Job."""
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}
            ],
        }
    }
    doc = make_job(name, namespace=ns).task("w", replicas=1, template=template)
    manifest = doc.spec(queue=queue).manifest()
    manifest["metadata"]["annotations"] = annotations
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", ns, "jobs", manifest
    )


def _evicted(api: client.ApiClient, ns: str) -> list[str]:
    """The pods the scheduler evicted, from their Evict events."""
    events = client.CoreV1Api(api).list_namespaced_event(ns).items
    return sorted(
        e.involved_object.name
        for e in events
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    )


def _sessions(worker: processes.Process) -> int:
    return processes.log_text(worker).count("session done")


def _reclaim_stops_at(
    api: client.ApiClient, ns: str, queues: tuple[str, str], worker: processes.Process
) -> list[str]:
    """Heavy asks for the whole cluster; the split settles at KEPT:2 and stays there through
    three more sessions. The evicted pods' names."""
    light, heavy = queues
    for i in range(SLOTS):
        _submit(api, ns, f"h{i}", heavy, {})

    def split() -> tuple[int, int]:
        counts = _running(api, ns)
        return counts[light], counts[heavy]

    try:
        eventually(lambda: split() == (KEPT, SLOTS - KEPT), 180, f"light:heavy {KEPT}:2")
    except AssertionError as e:
        raise AssertionError(f"{e}; split {split()}; podgroups {_groups(api, ns)}") from None
    seen = _sessions(worker)
    eventually(lambda: _sessions(worker) >= seen + 3, 60, "three more sessions")
    assert split() == (KEPT, SLOTS - KEPT), _groups(api, ns)
    evicted = _evicted(api, ns)
    assert len(evicted) == SLOTS - KEPT, evicted
    waiting = [g for g in _groups(api, ns) if g.split()[1:3] != [heavy, "Running"]]
    waiting = [g for g in waiting if g.split()[1] == heavy]
    assert len(waiting) == KEPT, waiting  # heavy's other jobs wait, unscheduled
    return evicted


def test_reclaim_stops_where_a_pod_disruption_budget_would_break(
    api: client.ApiClient,
    namespace: str,
    queues: tuple[str, str],
    controllers: list[processes.Process],
) -> None:
    light, _ = queues
    policy = client.PolicyV1Api(api)
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "light"},
        "spec": {"minAvailable": KEPT, "selector": {"matchLabels": {labels.QUEUE_NAME: light}}},
    }
    policy.create_namespaced_pod_disruption_budget(namespace, body)
    _fill(api, namespace, light, "l")

    def status() -> tuple[int | None, int | None, int | None]:
        got = policy.read_namespaced_pod_disruption_budget_status("light", namespace).status
        if got is None:
            return (-1, -1, -1)  # the disruption controller has not written it yet
        return got.current_healthy, got.desired_healthy, got.disruptions_allowed

    eventually(lambda: status() == (SLOTS, KEPT, 2), 60, "the budget allows 2 of 12")
    evicted = _reclaim_stops_at(api, namespace, queues, controllers[0])
    assert all(name.startswith("l") for name in evicted), evicted
    # What `kubectl get pdb` shows: the budget spent, light's minimum running.
    eventually(lambda: status() == (KEPT, KEPT, 0), 60, "the budget spent")


def test_reclaim_keeps_the_jobs_with_a_disruption_budget_annotation(
    api: client.ApiClient,
    namespace: str,
    queues: tuple[str, str],
    controllers: list[processes.Process],
) -> None:
    light, _ = queues
    eventually(lambda: not _reserving(api, namespace), 120, "the cluster to this test alone")
    for i in range(SLOTS):
        kept = {labels.JDB_MIN_AVAILABLE: "100%"} if i < KEPT else {}
        _submit(api, namespace, f"l{i}", light, kept)
    eventually(lambda: _running(api, namespace)[light] == SLOTS, 180, "light fills the cluster")
    evicted = _reclaim_stops_at(api, namespace, queues, controllers[0])
    # Only the jobs without a budget lost their pod; each annotated job still runs.
    assert {name.rsplit("-", 2)[0] for name in evicted} == {f"l{i}" for i in range(KEPT, SLOTS)}
    phases = Counter(_phase(api, namespace, f"l{i}") for i in range(KEPT))
    assert phases == {"Running": KEPT}, phases
