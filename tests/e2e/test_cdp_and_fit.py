"""The cdp and resource-strategy-fit plugins on the real stack.

cdp, as `tests/e2e/test_reclaim.py`: queues `light` and `heavy` weighted 1:3 on the session's 3
kwok nodes of 8 CPUs; 12 one-pod jobs of 2 CPUs in light fill the cluster, then heavy asks for
the whole cluster and would take 9 pods back. 9 of light's jobs carry `volcano.sh/cooldown-time`
(copied onto their pods by the job controller): while their cooldown runs only the 3 others
are evicted, a split that holds through further sessions; once it has run out the 6 more go.
The cooldown (`COOLDOWN`) is long enough for the first split to settle and be watched, and
short enough for the second to follow within the test.

resource-strategy-fit: successive one-pod jobs of 2 CPUs, each waited for before the next;
with MostAllocated on cpu they pack one node until it is full (4 pods), then the next; with
LeastAllocated each goes to the emptiest node. Observed as the pods' nodes.

Each test writes its own volcano-scheduler.conf (the next session reads it; restored after).
Volcano has no e2e for either plugin; its unit cases are in `tests/unit/scheduling/test_cdp.py`
and `test_resource_strategy_fit.py`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
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
WITH_CDP: Final = CALDERA_DEFAULT + "  - name: cdp\n"
COOLDOWN: Final = timedelta(seconds=150)
PROTECTED: Final = 9  # light's jobs with a cooldown; the other 3 may go at once
LIGHT_KEEPS: Final = 3  # light's deserved share: 6 of 24 CPUs


def _fit_conf(strategy: str) -> str:
    return CALDERA_DEFAULT + (
        "  - name: resource-strategy-fit\n    arguments:\n      resources:\n"
        f"        cpu:\n          type: {strategy}\n          weight: 1\n"
    )


@pytest.fixture
def queues(api: client.ApiClient) -> Iterator[tuple[str, ...]]:
    """Queues `light-*` (weight 1) and `heavy-*` (weight 3), removed afterwards."""
    with sharing.queues(api, {"light": 1, "heavy": 3}) as names:
        yield names


def _evicted(api: client.ApiClient, ns: str) -> list[str]:
    """The jobs whose pods the scheduler evicted, from the pods' Evict events."""
    return sorted(pod.rsplit("-", 2)[0] for pod in sharing.evicted_pods(api, ns))


def _started(api: client.ApiClient, ns: str) -> list[datetime]:
    """When cdp counts each running pod's cooldown from (its PodScheduled condition)."""
    out = []
    for pod in client.CoreV1Api(api).list_namespaced_pod(ns).items:
        for c in pod.status.conditions or []:
            if c.type == "PodScheduled" and c.status == "True" and c.last_transition_time:
                out.append(c.last_transition_time)
    return out


def test_reclaim_spares_pods_within_their_cooldown_then_takes_them(
    api: client.ApiClient,
    namespace: str,
    queues: tuple[str, str],
    scheduler_conf: Path,
    controllers: list[processes.Process],
) -> None:
    scheduler_conf.write_text(WITH_CDP)
    light, heavy = queues
    eventually(lambda: not sharing.reserving(api, namespace), 120, "the cluster to this test alone")
    for i in range(SLOTS):
        cooled = {labels.COOLDOWN_TIME: f"{int(COOLDOWN.total_seconds())}s"}
        sharing.submit(api, namespace, f"l{i}", light, cooled if i < PROTECTED else {})
    eventually(
        lambda: sharing.running(api, namespace)[light] == SLOTS, 180, "light fills the cluster"
    )
    starts = _started(api, namespace)
    assert len(starts) == SLOTS, starts  # the apiserver's binding wrote each condition's time
    cooled_until = min(starts) + COOLDOWN  # the first protected pod's cooldown runs out
    all_cooled = max(starts) + COOLDOWN
    for i in range(SLOTS):
        sharing.submit(api, namespace, f"h{i}", heavy)

    def split() -> tuple[int, int]:
        counts: Counter[str] = sharing.running(api, namespace)
        return counts[light], counts[heavy]

    first = (PROTECTED, SLOTS - PROTECTED)
    try:
        eventually(lambda: split() == first, 90, f"light:heavy {first}")
    except AssertionError as e:
        raise AssertionError(
            f"{e}; split {split()}; podgroups {sharing.groups(api, namespace)}"
        ) from None
    worker = controllers[0]
    seen = sharing.sessions(worker)
    eventually(lambda: sharing.sessions(worker) >= seen + 3, 60, "three more sessions")
    assert datetime.now(UTC) < cooled_until, "the split was watched too late: raise COOLDOWN"
    assert split() == first, sharing.groups(api, namespace)
    assert _evicted(api, namespace) == sorted(f"l{i}" for i in range(PROTECTED, SLOTS))
    # The cooldown runs out: reclaim takes light down to its share.
    wait = (all_cooled - datetime.now(UTC)).total_seconds() + 90
    final = (LIGHT_KEEPS, SLOTS - LIGHT_KEEPS)
    try:
        eventually(lambda: split() == final, wait, f"light:heavy {final} after the cooldown")
    except AssertionError as e:
        raise AssertionError(
            f"{e}; split {split()}; podgroups {sharing.groups(api, namespace)}"
        ) from None
    assert datetime.now(UTC) >= cooled_until
    assert len(_evicted(api, namespace)) == SLOTS - LIGHT_KEEPS


def _node_of(api: client.ApiClient, ns: str, job: str) -> str | None:
    pods = client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=f"{labels.JOB_NAME}={job}")
    nodes = [p.spec.node_name for p in pods.items if p.spec.node_name]
    return nodes[0] if nodes else None


@pytest.mark.parametrize(
    ("strategy", "jobs", "expected"),
    [
        pytest.param("MostAllocated", 5, [4, 1], id="most-allocated-packs"),
        pytest.param("LeastAllocated", 3, [1, 1, 1], id="least-allocated-spreads"),
    ],
)
def test_successive_pods_pack_or_spread_by_strategy(
    api: client.ApiClient,
    namespace: str,
    scheduler_conf: Path,
    strategy: str,
    jobs: int,
    expected: list[int],
) -> None:
    scheduler_conf.write_text(_fit_conf(strategy))
    eventually(lambda: not sharing.reserving(api, namespace), 120, "the cluster to this test alone")
    placed: list[str] = []
    for i in range(jobs):
        name = f"f{i}"
        sharing.submit(api, namespace, name, None)
        placed.append(eventually(lambda n=name: _node_of(api, namespace, n), 60, f"{name} placed"))
    by_node = Counter(placed)
    assert sorted(by_node.values(), reverse=True) == expected, placed
    if strategy == "MostAllocated":
        assert len(set(placed[:4])) == 1, placed  # the first node filled before the next
