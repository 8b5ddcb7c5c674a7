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

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from kubernetes import client

from cli.devstack import processes
from models import labels
from scheduling.framework.conf import CALDERA_DEFAULT
from tests.e2e import sharing
from tests.e2e.conftest import eventually
from tests.e2e.sharing import SLOTS

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
WITH_PDB: Final = CALDERA_DEFAULT + "  - name: pdb\n"
KEPT: Final = 10  # light's pods the budget keeps running: 2 of 12 may go


@pytest.fixture
def pdb_conf(scheduler_conf: Path) -> Path:
    scheduler_conf.write_text(WITH_PDB)
    return scheduler_conf


@pytest.fixture
def queues(api: client.ApiClient, pdb_conf: Path) -> Iterator[tuple[str, ...]]:
    """Queues `light-*` (weight 1) and `heavy-*` (weight 3), removed afterwards."""
    with sharing.queues(api, {"light": 1, "heavy": 3}) as names:
        yield names


def _reclaim_stops_at(
    api: client.ApiClient, ns: str, queues: tuple[str, str], worker: processes.Process
) -> list[str]:
    """Heavy asks for the whole cluster; the split settles at KEPT:2 and stays there through
    three more sessions. The evicted pods' names."""
    light, heavy = queues
    for i in range(SLOTS):
        sharing.submit(api, ns, f"h{i}", heavy)

    def split() -> tuple[int, int]:
        counts = sharing.running(api, ns)
        return counts[light], counts[heavy]

    try:
        eventually(lambda: split() == (KEPT, SLOTS - KEPT), 180, f"light:heavy {KEPT}:2")
    except AssertionError as e:
        raise AssertionError(f"{e}; split {split()}; podgroups {sharing.groups(api, ns)}") from None
    seen = sharing.sessions(worker)
    eventually(lambda: sharing.sessions(worker) >= seen + 3, 60, "three more sessions")
    assert split() == (KEPT, SLOTS - KEPT), sharing.groups(api, ns)
    evicted = sharing.evicted_pods(api, ns)
    assert len(evicted) == SLOTS - KEPT, evicted
    waiting = [g for g in sharing.groups(api, ns) if g.split()[1:3] != [heavy, "Running"]]
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
    sharing.fill(api, namespace, light, "l")

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
    eventually(lambda: not sharing.reserving(api, namespace), 120, "the cluster to this test alone")
    for i in range(SLOTS):
        kept = {labels.JDB_MIN_AVAILABLE: "100%"} if i < KEPT else {}
        sharing.submit(api, namespace, f"l{i}", light, kept)
    eventually(
        lambda: sharing.running(api, namespace)[light] == SLOTS, 180, "light fills the cluster"
    )
    evicted = _reclaim_stops_at(api, namespace, queues, controllers[0])
    # Only the jobs without a budget lost their pod; each annotated job still runs.
    assert {name.rsplit("-", 2)[0] for name in evicted} == {f"l{i}" for i in range(KEPT, SLOTS)}
    phases = Counter(sharing.phase(api, namespace, f"l{i}") for i in range(KEPT))
    assert phases == {"Running": KEPT}, phases
